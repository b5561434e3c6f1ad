//! The sentences of a request, split where sentences end (not at the dot
//! of `theme.ts`, `e.g.` or a URL), and the rules among them: the user's
//! instructions to the agent, told from the rest. Pure. The retention
//! check and the offline summarizer both read rules through here, so what
//! one requires the other writes.

use super::request::{collapse, looks_pasted, prose_paragraphs, request_text, typed_count};

/// Abbreviations whose dot does not end a sentence (compared lower-case,
/// inner dots kept: `e.g.` is `e.g`).
const ABBREVIATIONS: [&str; 16] = [
    "e.g", "i.e", "etc", "vs", "cf", "approx", "incl", "al", "mr", "mrs", "ms", "dr", "st", "no",
    "fig", "resp",
];

/// The sentences of `text`, trimmed, in order. A sentence ends at a line
/// break, or at `.`, `!` or `?` (with any closing quote or bracket) followed
/// by whitespace, except inside a code span, after an abbreviation, or
/// after a list number. List markers (`- `, `* `, `1. `) and Markdown
/// heading marks are not part of a sentence.
pub fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = strip_list_marker(line.trim());
        split_line(line, &mut out);
    }
    out
}

fn strip_list_marker(line: &str) -> &str {
    let line = line.trim_start_matches('#').trim_start();
    for marker in ["- ", "* ", "+ ", "> "] {
        if let Some(rest) = line.strip_prefix(marker) {
            return rest.trim_start();
        }
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    if (1..=3).contains(&digits) {
        let rest = &line[digits..];
        if let Some(rest) = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")) {
            return rest.trim_start();
        }
    }
    line
}

// By byte offsets, collecting nothing: a message of one 100 MB line is
// split without a copy of its characters (a `Vec<(usize, char)>` took 16
// bytes a character).
fn split_line<'a>(line: &'a str, out: &mut Vec<&'a str>) {
    let mut start = 0;
    let mut code: Option<usize> = None; // length of the backtick run that opened a span
    let mut i = 0;
    while let Some(c) = line[i..].chars().next() {
        if c == '`' {
            let run = line[i..].bytes().take_while(|b| *b == b'`').count();
            code = match code {
                None => Some(run),
                Some(open) if open == run => None,
                other => other,
            };
            i += run;
            continue;
        }
        if code.is_none() && matches!(c, '.' | '!' | '?') {
            // `end`: past the mark and the closing marks after it.
            let mut end = i + c.len_utf8();
            for n in line[end..].chars() {
                if !matches!(n, '.' | '!' | '?' | '"' | '\'' | '”' | '’' | ')' | ']') {
                    break;
                }
                end += n.len_utf8();
            }
            let alone = end == i + c.len_utf8();
            let followed_by_space = line[end..].chars().next().is_none_or(char::is_whitespace);
            if followed_by_space && !(c == '.' && alone && dot_continues(&line[start..i])) {
                push_trimmed(&line[start..end], out);
                start = end;
            }
            i = end;
            continue;
        }
        i += c.len_utf8();
    }
    push_trimmed(&line[start..], out);
}

/// The dot after `before` belongs to an abbreviation or an initial.
fn dot_continues(before: &str) -> bool {
    let word = before
        .rsplit(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or("")
        .to_lowercase();
    ABBREVIATIONS.contains(&word.as_str())
        || (word.chars().count() == 1 && word.chars().all(char::is_alphabetic))
}

fn push_trimmed<'a>(piece: &'a str, out: &mut Vec<&'a str>) {
    let piece = piece.trim();
    if !piece.is_empty() {
        out.push(piece);
    }
}

/// Words a clause may open with before what it says ("ok, also make sure
/// …"); those that are only fillers with a comma after them come second.
const FILLERS: [&str; 19] = [
    "ok", "okay", "also", "and", "but", "so", "btw", "please", "pls", "just", "then", "oh", "well",
    "alright", "omfg", "wtf", "dude", "my dude", "again",
];
const COMMA_FILLERS: [&str; 7] = ["no", "yes", "yeah", "hm", "hmm", "now", "remember"];

/// Openings of a clause that make it a rule.
const RULE_OPENINGS: [&str; 11] = [
    "always ",
    "never ",
    "don't ",
    "dont ",
    "do not ",
    "make sure ",
    "be sure ",
    "avoid ",
    "remember ",
    "under no circumstances ",
    "do never ",
];

/// Obligations aimed at the agent, anywhere in a sentence.
const ADDRESSED: [&str; 16] = [
    "you must ",
    "you should always ",
    "you should never ",
    "you should not ",
    "you shouldn't ",
    "you cannot ",
    "you can't ",
    "you may not ",
    "you are not allowed ",
    "we must ",
    "we should always ",
    "we should never ",
    "i only want ",
    "i would only want ",
    "i don't want ",
    "i do not want ",
];

/// Obligations on whatever the sentence is about ("invalid themes must
/// never explode"): rules where the person typed them, but common in pasted
/// documentation, so only counted in typed text.
const OBLIGATIONS: [&str; 5] = [
    " must ",
    " must not ",
    " mustn't ",
    " should never ",
    " should always ",
];

/// Whether a sentence from the user states a rule for the agent: an
/// instruction that opens a clause with always / never / don't / do not /
/// make sure / be sure / avoid / remember, a "no …!" prohibition, or an
/// obligation addressed to the agent ("you must", "I don't want"). With
/// `typed` (the person wrote it rather than pasted it), also any sentence
/// with "must" or "should never/always". Questions never are.
pub fn states_rule(sentence: &str, typed: bool) -> bool {
    // Over 402 bytes lowercased is no rule (below); lowercasing shrinks
    // a text at most threefold (’ to '), so a longer one is not copied.
    if sentence.trim().len() > 3 * 402 {
        return false;
    }
    let lower = format!(
        " {} ",
        sentence.to_lowercase().replace(['’', '‘'], "'").trim()
    );
    if lower.trim_end().ends_with('?') || lower.len() > 402 || lower.contains("never mind") {
        return false;
    }
    if lower.contains("make sure") && !lower.contains("to make sure") {
        return true;
    }
    if ADDRESSED.iter().any(|a| lower.contains(&format!(" {a}"))) {
        return true;
    }
    if typed && OBLIGATIONS.iter().any(|o| lower.contains(o)) && !lower.contains(" must have been ")
    {
        return true;
    }
    if constrains(&lower) {
        return true;
    }
    let exclaims = lower.trim_end().ends_with('!');
    let clauses: Vec<&str> = clauses(&lower).collect();
    clauses.into_iter().map(without_fillers).any(|clause| {
        RULE_OPENINGS.iter().any(|o| clause.starts_with(o)) || (exclaims && prohibits(clause))
    })
}

/// Constraints a task states on what is built: "it must stay dependency
/// free", "keep it to the same 3 files", "compilation free", "only use
/// the standard library" (`lower` is padded with spaces).
fn constrains(lower: &str) -> bool {
    const OPENINGS: [&str; 8] = [
        "keep it to ",
        "keep it in ",
        "keep it under ",
        "stick to ",
        "stick with ",
        "only use ",
        "use only ",
        "limit it to ",
    ];
    const ANYWHERE: [&str; 6] = [
        " must stay ",
        " must remain ",
        " no longer than ",
        " no more than ",
        " no new dependenc",
        " no external dependenc",
    ];
    // "collaboration(no longer than a tweet)": a bracket opens a clause.
    let spaced = lower.replace(['(', ')'], " ");
    let clauses: Vec<&str> = clauses(lower).map(without_fillers).collect();
    let free = lower
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | '.' | ';' | ')' | '('))
        .collect::<Vec<_>>()
        .windows(2)
        .any(|w| {
            let named = |word: &str| {
                const NOT_NOUNS: [&str; 14] = [
                    "feel",
                    "for",
                    "toll",
                    "be",
                    "is",
                    "are",
                    "was",
                    "it's",
                    "and",
                    "the",
                    "a",
                    "totally",
                    "completely",
                    "set",
                ];
                !word.is_empty() && !NOT_NOUNS.contains(&word)
            };
            (w[1] == "free" && named(w[0]))
                || w[1]
                    .strip_suffix("-free")
                    .is_some_and(|n| named(n) && !n.contains('-'))
                || w[0]
                    .strip_suffix("-free")
                    .is_some_and(|n| named(n) && !n.contains('-'))
        });
    // "feel free to …" invites; "free" after a noun constrains.
    (free && !lower.contains("feel free") && lower.split_whitespace().count() <= 16)
        || clauses
            .iter()
            .any(|c| OPENINGS.iter().any(|o| c.starts_with(o)))
        || ANYWHERE.iter().any(|a| spaced.contains(a))
}

/// "no console logs!" but not "no, that's wrong" or "no need to".
fn prohibits(clause: &str) -> bool {
    let Some(rest) = clause.strip_prefix("no ") else {
        return false;
    };
    let first = rest.split_whitespace().next().unwrap_or("");
    !first.is_empty()
        && ![
            "need", "idea", "way", "problem", "worries", "matter", "longer", "one",
        ]
        .contains(&first.trim_end_matches(|c: char| !c.is_alphanumeric()))
}

fn clauses(lower: &str) -> impl Iterator<Item = &str> {
    lower
        .split([',', ';', ':', '(', '—', '–'])
        .map(str::trim)
        .filter(|c| !c.is_empty())
}

fn without_fillers(mut clause: &str) -> &str {
    loop {
        let before = clause;
        for filler in FILLERS {
            if let Some(rest) = clause.strip_prefix(filler) {
                if rest.starts_with([' ', ',']) {
                    clause = rest.trim_start_matches([' ', ',']);
                }
            }
        }
        for filler in COMMA_FILLERS {
            if let Some(rest) = clause
                .strip_prefix(filler)
                .and_then(|r| r.strip_prefix(','))
            {
                clause = rest.trim_start();
            }
        }
        if clause == before {
            return clause;
        }
    }
}

/// The sentences of a user message that state rules, each once, in order.
/// Client text (see `request_text`), code and pasted paragraphs are
/// skipped; obligations on third parties ("themes must …") count only in
/// typed paragraphs.
pub fn rules_in(content: &str) -> Vec<String> {
    let Some(request) = request_text(content) else {
        return Vec::new();
    };
    let paragraphs = prose_paragraphs(&request);
    let typed = typed_count(&paragraphs, request.chars().count() > 800);
    let mut rules: Vec<String> = Vec::new();
    for (i, (paragraph, _)) in paragraphs.iter().enumerate() {
        if looks_pasted(paragraph) || continues_paste(&paragraphs, i) {
            continue;
        }
        // `**Do not push. Do not merge.**`, `Do **NOT** use`: the marks
        // would hide a rule's opening and end up in its text.
        let paragraph = without_emphasis(paragraph);
        let mut asked: Option<String> = None;
        for sentence in sentences(&paragraph) {
            let sentence = collapse(sentence);
            let detail = asked
                .as_deref()
                .is_some_and(|q| details_the_request(q, &sentence));
            if !detail
                && sentence.split_whitespace().count() >= 2
                && states_rule(&sentence, i < typed)
            {
                let rule = without_lead_in(&sentence, i < typed).to_string();
                if !rules.contains(&rule) {
                    rules.push(rule);
                }
            }
            asked = Some(sentence);
        }
    }
    rules
}

/// Whether `sentence` says how to do the one thing the sentence before it
/// asked for ("can you create the issue? make sure it's in Project X"):
/// a detail of that request, which the request list keeps, not a rule
/// that outlives it.
fn details_the_request(before: &str, sentence: &str) -> bool {
    const ASKS: [&str; 4] = ["can you ", "could you ", "would you ", "will you "];
    const ABOUT_IT: [&str; 4] = [
        "make sure it",
        "make sure that it",
        "make sure they",
        "be sure it",
    ];
    let (before, sentence) = (before.to_lowercase(), sentence.to_lowercase());
    let asks = before.ends_with('?') && ASKS.iter().any(|a| before.contains(a));
    asks && ABOUT_IT.iter().any(|a| sentence.starts_with(a))
}

/// A rule without the words that lead up to it ("One more thing: Never
/// touch the migrations folder." → "Never touch the migrations folder."):
/// a short lead-in before a colon goes when what follows states the rule
/// on its own, so the rule is the person's words and nothing else.
fn without_lead_in(sentence: &str, typed: bool) -> &str {
    match sentence.split_once(": ") {
        Some((lead, rule))
            if lead.split_whitespace().count() <= 5
                && rule.split_whitespace().count() >= 2
                && states_rule(rule, typed)
                && !states_rule(lead, typed) =>
        {
            rule.trim()
        }
        _ => sentence,
    }
}

/// `text` without Markdown emphasis marks: `**`, `__`, and a `*` or `_`
/// glued to a word (`*not*`, `_only_`); a list's `* ` and a spaced
/// `a * b` stay.
pub fn without_emphasis(text: &str) -> String {
    let text = text.replace("**", "").replace("__", "");
    let mut out = String::with_capacity(text.len());
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let mut before = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let after = chars.peek().copied();
        // `*word` opens, `word*` closes; `snake_case` is no emphasis.
        let mark = (c == '*' || c == '_')
            && (word(after) && !word(before) || word(before) && !word(after));
        if !mark {
            out.push(c);
        }
        before = Some(c);
    }
    out
}

/// A paragraph that goes on with the pasted one before it: output that
/// wraps its lines mid-sentence (`Please make sure you have the correct
/// access rights` / `and the repository exists.` after a `git` error).
/// Typed text does not break a sentence across lines.
fn continues_paste(paragraphs: &[(&str, bool)], i: usize) -> bool {
    let Some(before) = i.checked_sub(1).map(|j| paragraphs[j].0) else {
        return false;
    };
    if !looks_pasted(before) {
        return false;
    }
    let lines: Vec<&str> = paragraphs[i].0.lines().map(str::trim).collect();
    lines.windows(2).any(|pair| {
        let ends = pair[0].ends_with(['.', '!', '?', ':', ';', ',']);
        let lower = pair[1].chars().next().is_some_and(char::is_lowercase);
        !ends && lower
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One `check()` for the splitter: the input and its sentences.
    fn check(text: &str, expected: &[&str]) {
        assert_eq!(sentences(text), expected, "{text:?}");
    }

    #[test]
    fn how_to_do_the_one_thing_just_asked_is_no_rule() {
        assert_eq!(
            rules_in("let's do 2 for now, can you create the linear issue? make sure it's in Project: Troy"),
            Vec::<String>::new()
        );
        // A rule after a question that asks for nothing, or one that is
        // not about the thing asked for, stays a rule.
        assert_eq!(
            rules_in("Is the cache warm? Make sure it never exceeds 2 GB."),
            ["Make sure it never exceeds 2 GB."]
        );
        assert_eq!(
            rules_in("Can you rerun the tests? Never use sudo."),
            ["Never use sudo."]
        );
    }

    #[test]
    fn sentences_end_where_sentences_end() {
        // Real lines from the shared transcripts.
        check(
            "read packages/coding-agent/docs/theme.md in full, then theme.ts, and then oauth-selector or any of the other selectors. we still need to port over user-message-selector.ts",
            &[
                "read packages/coding-agent/docs/theme.md in full, then theme.ts, and then oauth-selector or any of the other selectors.",
                "we still need to port over user-message-selector.ts",
            ],
        );
        check(
            "The `theme.ts` file has an old custom implementation with `chalk` instead of using the theme system. Let me fix it.",
            &[
                "The `theme.ts` file has an old custom implementation with `chalk` instead of using the theme system.",
                "Let me fix it.",
            ],
        );
        check(
            "my dude, this exploded when i restarted with -r. invalid themes must NEVER explode",
            &[
                "my dude, this exploded when i restarted with -r.",
                "invalid themes must NEVER explode",
            ],
        );
        check(
            "It's been a while - I see that I have pending changes, examine them, add and commit (i.e., including unknown files).",
            &["It's been a while - I see that I have pending changes, examine them, add and commit (i.e., including unknown files)."],
        );
        check(
            "Looks like a rounding issue here: https://github.com/marshmallow-code/marshmallow/blob/dev/src/marshmallow/fields.py#L1474. Output of this snippet is `344`, but it seems that `345` is correct.",
            &[
                "Looks like a rounding issue here: https://github.com/marshmallow-code/marshmallow/blob/dev/src/marshmallow/fields.py#L1474.",
                "Output of this snippet is `344`, but it seems that `345` is correct.",
            ],
        );
        check(
            "1. **Removed custom `UserMessageList` class** - Simplified to use just the Container pattern like `oauth-selector.ts`\n2. Done. Wait... what?! \"Stop.\" Next",
            &[
                "**Removed custom `UserMessageList` class** - Simplified to use just the Container pattern like `oauth-selector.ts`",
                "Done.",
                "Wait...",
                "what?!",
                "\"Stop.\"",
                "Next",
            ],
        );
        check(
            "Use `x. y` here. Fine e.g. this one",
            &["Use `x. y` here.", "Fine e.g. this one"],
        );
    }

    #[test]
    fn rules_need_an_instruction_aimed_at_the_agent() {
        // Real user sentences from the shared transcripts: rules…
        for rule in [
            "invalid themes must NEVER explode",
            "no conosle logs!",
            "omfg use fucking rgb values in the themes, no rgb indices!",
            "should be dimmer, don't modify the theme, look into the footer sources",
            "in the system prompt make sure you know to read the README.md also when the user asks you to create a new theme",
            "make sure toolText is also used.",
            "hm, i selected the theme while you were working and got a crash, that should never happen.",
            "truncated text must stop when it encounters a new line ...",
            "(don't read the full file!)",
            "also remember the @packages/coding-agent/docs/refactor.md file btw.",
            "i would only want e2e tests for AgentSession, anything else is shitty.",
            "I have both Node and Python, but I don't want to make it only work for me or make assumptions about people's env.",
            "Remember, YOU SHOULD ALWAYS INCLUDE EXACTLY ONE TOOL CALL/FUNCTION CALL PER RESPONSE.",
            "When editing a file, make sure to insert appropriate indentation before each line!",
            "If you open a file and need to get to an area around a specific line that is not in the first 100 lines, say line 583, don't just use the scroll_down command multiple times.",
            "Note however that you cannot use any interactive session commands (e.g. python, vim) in this environment, but you can write scripts and run them.",
            "Avoid listing every component or file structure that can be easily discovered.",
        ] {
            assert!(states_rule(rule, true), "a rule: {rule}");
        }
        // …and not rules: beliefs, questions, reports, specs, requests.
        for not_rule in [
            "i don't understand, does it capture the theme variable imported at creation time?",
            "i don't tink the component invalidate works correctly.",
            "I saw in passing that in case of BadZipFile we don't do anything (pass); wouldn't be a way to report that in the manifest?",
            "that is what happens if we don't stream, right?",
            "no, that's not it, bot use the dark theme.",
            "no, dimGray should be that, no need for linkGray,",
            "setTheme should return an error that the caller can display however they want",
            "If there isn't a PR found we should say so and print the help as we do now.",
            "If the issue includes code for reproducing the bug, we recommend that you re-implement that in your environment, and run it to make sure you can reproduce the bug.",
            "btw, can we make it so we keep the old code around for reference?",
            "oh, I didn't find those cross-session navigation links helpful, can you please replace them with a single link to the combined transcript instead?",
            "No fixes applied.",
            "Mustard is fine.",
        ] {
            assert!(!states_rule(not_rule, true), "not a rule: {not_rule}");
        }
        // Obligations on a third party count only where the person typed
        // them, not in pasted documentation.
        let pasted = "The bin directory must be in the PATH variable for tool executables to be available from the shell.";
        assert!(states_rule(pasted, true));
        assert!(!states_rule(pasted, false));
        assert!(!states_rule("It is strongly recommended never to mutate a tool environment manually, e.g., with a pip operation.", false));
    }

    #[test]
    fn rules_in_a_message_skip_client_text_and_pastes() {
        assert_eq!(
            rules_in("my dude, this exploded when i restarted with -r. invalid themes must NEVER explode\n\n➜  pi-mono git:(main) ✗ npx tsx packages/coding-agent/src/cli.ts -r\nError: Invalid hex color: #000cc\n    at hexToRgb (theme.ts:148:9)"),
            ["invalid themes must NEVER explode"]
        );
        assert!(rules_in("Caveat: The messages below were generated by the user while running local commands. DO NOT respond to these messages or otherwise consider them in your response unless the user explicitly asks you to.").is_empty());
        let long_paste = format!(
            "We need to find a cleaner way to reinstall. Does this doc page help?\n\n{}\n\nThe bin directory must be in the PATH variable for tool executables to be available from the shell.",
            "Tools can also be installed with uv tool install. ".repeat(20)
        );
        assert!(
            rules_in(&long_paste).is_empty(),
            "{:?}",
            rules_in(&long_paste)
        );
        assert_eq!(
            rules_in("Fix it.\n```\nnever run this\n\nalways that\n```\nDon't touch the lockfile"),
            ["Don't touch the lockfile"]
        );
        // The rule, in the person's words, and nothing else of the sentence.
        assert_eq!(
            rules_in("Add the endpoint. One more thing: **Never touch the migrations folder.**"),
            ["Never touch the migrations folder."]
        );
        assert_eq!(
            rules_in("Rule: the parser must stay allocation free."),
            ["the parser must stay allocation free."]
        );
    }
}
