//! Which messages a caller reads back (`conversation/messages`, `compactd
//! mcp`'s `read_messages`): by id or as a range, in session order, each
//! with the compaction that first summarized it. The front ends word
//! their own errors from `Unselectable`.

use super::summarized_by;
use crate::conversation::Message;
use crate::session::Session;

/// The messages asked for.
#[derive(Debug, Clone, Copy)]
pub enum Selection<'a> {
    /// These (in any order, repeats once).
    Ids(&'a [String]),
    /// From one to another, both included.
    Range { first: &'a str, last: &'a str },
}

/// Where a missing id was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// The `n`-th of the ids.
    Id(usize),
    First,
    Last,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unselectable<'a> {
    /// No message has this id (nor starts with it, as a summary cites one).
    Missing { asked: Asked, id: &'a str },
    /// The range's first message comes after its last.
    Reversed { first: &'a str, last: &'a str },
}

/// A message selected.
#[derive(Debug, Clone, Copy)]
pub struct Selected<'s> {
    pub position: usize,
    pub message: &'s Message,
    /// The compaction that first summarized (or pruned) it, by index into
    /// the session's compactions.
    pub summarized: Option<usize>,
}

/// The messages `selection` names, in session order; the first id not
/// found (ids in order, then a range's first and last) refuses it.
pub fn select<'s, 'a>(
    session: &'s Session,
    selection: Selection<'a>,
) -> Result<Vec<Selected<'s>>, Unselectable<'a>> {
    let find =
        |id: &'a str, asked: Asked| session.find(id).ok_or(Unselectable::Missing { asked, id });
    let positions: Vec<usize> = match selection {
        Selection::Ids(ids) => {
            let mut at = ids
                .iter()
                .enumerate()
                .map(|(i, id)| find(id, Asked::Id(i)))
                .collect::<Result<Vec<usize>, _>>()?;
            at.sort_unstable();
            at.dedup();
            at
        }
        Selection::Range { first, last } => {
            let (from, to) = (find(first, Asked::First)?, find(last, Asked::Last)?);
            if from > to {
                return Err(Unselectable::Reversed { first, last });
            }
            (from..=to).collect()
        }
    };
    let (summarized, _) = summarized_by(session.compactions(), session.message_count(), |id| {
        session.position(id)
    });
    // One walk of the session for every message asked for (in order).
    let mut wanted = positions.iter().copied().peekable();
    let mut selected = Vec::with_capacity(positions.len());
    for (position, message) in session.shared_messages().enumerate() {
        let Some(&next) = wanted.peek() else {
            break;
        };
        if position == next {
            wanted.next();
            selected.push(Selected {
                position,
                message,
                summarized: summarized[position],
            });
        }
    }
    Ok(selected)
}
