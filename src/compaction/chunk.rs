//! Splitting a summarizer input that is too big for the summarizer's own
//! window. Pure: token counts in, index ranges out.

use std::ops::Range;

/// Splits `tokens.len()` messages into consecutive chunks of at most
/// `limit` tokens. Chunks end at turn boundaries (before a message where
/// `turn_start` is true) when they can, else before a cut point (a user or
/// assistant message, never between a call and its result); a single
/// message over the limit becomes a chunk of its own (its text is clipped
/// by the caller).
pub fn plan_chunks(
    tokens: &[u64],
    turn_start: &[bool],
    cut_point: &[bool],
    limit: u64,
) -> Vec<Range<usize>> {
    assert_eq!(tokens.len(), turn_start.len());
    assert_eq!(tokens.len(), cut_point.len());
    let limit = limit.max(1);
    let mut chunks = Vec::new();
    // Split into units that must stay together: turns, or, inside a turn
    // too big for one chunk, the runs between cut points.
    let mut units: Vec<Range<usize>> = Vec::new();
    let len = tokens.len();
    let turn_ends = (1..=len).filter(|&i| i == len || turn_start[i]);
    let mut start = 0;
    for end in turn_ends {
        let turn = start..end;
        if sum(tokens, &turn) <= limit {
            units.push(turn);
        } else {
            let run_ends = (turn.start + 1..=turn.end).filter(|&j| j == turn.end || cut_point[j]);
            let mut s = turn.start;
            for j in run_ends {
                units.push(s..j);
                s = j;
            }
        }
        start = end;
    }
    let mut current: Option<Range<usize>> = None;
    let mut current_tokens = 0;
    for unit in units {
        let unit_tokens = sum(tokens, &unit);
        match &mut current {
            Some(chunk) if current_tokens + unit_tokens <= limit => {
                chunk.end = unit.end;
                current_tokens += unit_tokens;
            }
            _ => {
                if let Some(chunk) = current.take() {
                    chunks.push(chunk);
                }
                current_tokens = unit_tokens;
                current = Some(unit);
            }
        }
    }
    chunks.extend(current);
    chunks
}

fn sum(tokens: &[u64], range: &Range<usize>) -> u64 {
    tokens[range.clone()].iter().sum()
}

/// Groups partial summaries (by size) into merge rounds of at most `limit`
/// tokens each; every group holds at least two when it can, so each round
/// shrinks the list.
pub fn group_for_merge(sizes: &[u64], limit: u64) -> Vec<Range<usize>> {
    let mut groups = Vec::new();
    let mut start = 0;
    let mut total = 0;
    for (i, size) in sizes.iter().enumerate() {
        if i > start && total + size > limit && i - start >= 2 {
            groups.push(start..i);
            start = i;
            total = 0;
        }
        total += size;
    }
    if start < sizes.len() {
        groups.push(start..sizes.len());
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shape: `u` user (turn start), `a` assistant, `t` tool result; every
    /// message weighs the digit after it (default 1).
    fn check(shape: &str, limit: u64, expected: &[(usize, usize)]) {
        let expected: Vec<Range<usize>> = expected.iter().map(|&(a, b)| a..b).collect();
        let mut tokens = Vec::new();
        let mut turn = Vec::new();
        let mut cut = Vec::new();
        let chars: Vec<char> = shape.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let weight = chars.get(i + 1).and_then(|d| d.to_digit(10)).map(u64::from);
            tokens.push(weight.unwrap_or(1));
            turn.push(c == 'u');
            cut.push(c == 'u' || c == 'a');
            i += if weight.is_some() { 2 } else { 1 };
        }
        let got = plan_chunks(&tokens, &turn, &cut, limit);
        assert_eq!(got, expected, "shape {shape} limit {limit}");
        // Chunks cover everything, in order, and never start at a tool result.
        assert_eq!(
            got.first().map(|r| r.start),
            (!tokens.is_empty()).then_some(0)
        );
        assert_eq!(
            got.last().map(|r| r.end),
            (!tokens.is_empty()).then_some(tokens.len())
        );
        for pair in got.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
        }
        for r in &got {
            assert!(
                r.start == 0 || cut[r.start],
                "chunk starts at a tool result in {shape}"
            );
        }
    }

    #[test]
    fn chunks_follow_turns_then_cut_points() {
        check("uaua", 10, &[(0, 4)]);
        check("uaua", 2, &[(0, 2), (2, 4)]);
        check("uauaua", 4, &[(0, 4), (4, 6)]);
        check("uatatata", 4, &[(0, 3), (3, 7), (7, 8)]); // one turn too big: split before assistants
        check("ua9ua", 3, &[(0, 1), (1, 2), (2, 4)]); // an oversized message stands alone
        check("", 3, &[]);
    }

    #[test]
    fn merge_groups_shrink_every_round() {
        assert_eq!(group_for_merge(&[5, 5, 5, 5], 10), vec![0..2, 2..4]);
        assert_eq!(group_for_merge(&[9, 9, 9], 10), vec![0..2, 2..3]);
        assert_eq!(group_for_merge(&[1, 1, 1], 10), vec![0..3]);
    }
}
