use super::*;
use crate::conversation::{Message, ToolCall};
use crate::tokens::Encoding;
use serde_json::json;

fn request(messages: Vec<Message>, previous: Option<String>) -> SummaryRequest {
    SummaryRequest {
        previous_summary: previous,
        messages: messages.into_iter().map(Into::into).collect(),
        partial_summaries: Vec::new(),
        later: Vec::new(),
        earlier: Vec::new(),
        instructions: None,
        max_tool_output_chars: 2000,
        compact_prompt: None,
        update_prompt: None,
    }
}

fn call(id: &str, name: &str, arguments: serde_json::Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
    }
}

/// The summary with the default budget, whatever the input's size (the
/// examples here are far smaller than what they stand for).
fn summary(request: &SummaryRequest) -> String {
    digest_of_request(request).render(DEFAULT_BUDGET)
}

/// One `check()` per behaviour: the summary of `messages` (after
/// `previous`) holds every `needle` and none of `absent`.
fn check(
    messages: Vec<Message>,
    previous: Option<&str>,
    needles: &[&str],
    absent: &[&str],
) -> String {
    let text = summary(&request(messages, previous.map(str::to_string)));
    for needle in needles {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    for needle in absent {
        assert!(!text.contains(needle), "unexpected {needle:?} in\n{text}");
    }
    text
}

#[test]
fn writes_every_section_and_is_deterministic() {
    let messages = vec![
        Message::user("u1", "Fix the parser.\nIt breaks on empty input."),
        Message::assistant(
            "a1",
            "I decided to rewrite the tokenizer instead of patching it.",
            vec![
                call("c1", "read", json!({"path": "src/parse.rs"})),
                call("c2", "bash", json!({"command": "cargo test"})),
                call("c3", "edit", json!({"path": "src/lex.rs"})),
            ],
        ),
        Message::tool_result("t1", "c1", "fn parse() {}", false),
        Message::tool_result("t2", "c2", "\nerror[E0308]: mismatched types\n more", true),
        Message::tool_result("t3", "c3", "ok", false),
        Message::user("u2", "Now add a test. Never touch the lockfile."),
    ];
    let text = check(
        messages.clone(),
        None,
        &[
            "## Task\n- \"Fix the parser.\n  It breaks on empty input.\"",
            "## User rules\n- \"Never touch the lockfile.\"",
            "## Decisions and findings\n- I decided to rewrite the tokenizer instead of patching it.",
            "## Files changed\n- `src/lex.rs`: edited",
            "## Commands\n- `cargo test`: failed, still open",
            "- Other tools: read",
            "## Errors still open\n- `cargo test`: error[E0308]: mismatched types",
            "## Later requests\n- \"Now add a test. Never touch the lockfile.\"",
            "## Next step\n- Continue with the last request above.",
        ],
        &["## Progress", "src/parse.rs"],
    );
    assert_eq!(text, summary(&request(messages, None)));
}

#[test]
fn progress_says_what_each_turn_achieved() {
    // Turn-final assistant texts from the shared pi session.
    let turn = |i: usize, reply: &str| {
        vec![
            Message::user(format!("u{i}"), format!("request number {i}")),
            Message::assistant(
                format!("w{i}"),
                "",
                vec![call(&format!("c{i}"), "edit", json!({"path": "theme.ts"}))],
            ),
            Message::tool_result(format!("t{i}"), format!("c{i}"), "ok", false),
            Message::assistant(format!("a{i}"), reply, vec![]),
        ]
    };
    let mut messages = Vec::new();
    messages.extend(turn(1, "Perfect! I've ported the `user-message-selector.ts` to match the patterns from the other selector files. Here's what I changed:\n\n## Key Changes:\n\n1. **Removed custom `UserMessageList` class** - Simplified"));
    messages.extend(turn(2, "Great! It builds successfully. Now let's verify the theme change works by checking the implementation:\n\nDone! Here's what I did to solve the thinking border color issue:\n\n## Solution Summary\n\nAdded a **`getThinkingBorderColor()`** method to the `Theme` class that maps thinking levels to existing theme colors."));
    messages.extend(turn(3, "WHAT. THE. FUCK.\n\nVS Code is literally **ignoring the RGB values** and rendering them all the same!"));
    messages.extend(turn(4, "Made the following changes to reduce intensity:\n\n- `cyan` (accent, markdown code): `#00d7ff` → `#00afd7` (less bright cyan)\n- `green`: `#00ff00` → `#00d700`"));
    messages.extend(turn(
        5,
        "Hmm, looks like the console logs were already removed or commented out.",
    ));
    // A conversational answer, no tool used: not progress.
    messages.push(Message::user("u6", "write some markdown here in chat"));
    messages.push(Message::assistant(
        "a6",
        "Here's a markdown sample with various elements:\n\n# Heading 1",
        vec![],
    ));
    check(
        messages,
        None,
        &["## Progress\n\
           - I've ported the `user-message-selector.ts` to match the patterns from the other selector files.\n\
           - Added a `getThinkingBorderColor()` method to the `Theme` class that maps thinking levels to existing theme colors.\n\
           - VS Code is literally ignoring the RGB values and rendering them all the same!\n\
           - Made the following changes to reduce intensity: `cyan` (accent, markdown code): `#00d7ff` → `#00afd7` (less bright cyan)\n\
           - Looks like the console logs were already removed or commented out.\n",
           "The last request above was answered; continue with the messages that follow."],
        &["Perfect!", "## Current state", "WHAT.", "markdown sample"],
    );
}

#[test]
fn commands_are_collapsed_with_their_failures_and_fixes() {
    let mut messages = vec![Message::user(
        "u1",
        "Build it until it passes please, then tell me.",
    )];
    let runs = [
        ("cd packages/ai && npm run build 2>&1 | tail -3", "ok", false),
        ("npm run check", "\n> pkg@1.0 check\nsrc/a.ts(3,1): error TS2304: Cannot find name 'x'.\nCommand exited with code 1", true),
        ("cd packages/ai && npm run build 2>&1 | tail -3", "ok", false),
        ("npm run check 2>&1 | grep error", "", false),
        ("grep -rn foo src", "Command exited with code 1", true),
        ("rm src/old.ts", "", false),
    ];
    for (i, (command, output, failed)) in runs.iter().enumerate() {
        messages.push(Message::assistant(
            format!("a{i}"),
            "",
            vec![call(&format!("c{i}"), "bash", json!({"command": command}))],
        ));
        messages.push(Message::tool_result(
            format!("t{i}"),
            format!("c{i}"),
            *output,
            *failed,
        ));
    }
    check(
        messages,
        None,
        &[
            "- `npm run build` ×2: ok",
            "- `npm run check` ×2: failed (first: src/a.ts(3,1): error TS2304: Cannot find name 'x'.), then ok",
            "- `rm src/old.ts`: ok",
            "- Read-only commands: grep",
        ],
        &["## Errors still open", "tail -3"],
    );
}

#[test]
fn a_failing_test_run_counts_even_when_no_tool_said_so() {
    let run = |i: usize, output: &str| {
        vec![
            Message::assistant(
                format!("a{i}"),
                "",
                vec![call(
                    &format!("c{i}"),
                    "bash",
                    json!({"command": "cargo test --test time"}),
                )],
            ),
            Message::tool_result(format!("t{i}"), format!("c{i}"), output, false),
        ]
    };
    let mut messages = vec![Message::user(
        "u1",
        "Make parse_duration accept bare numbers as seconds.",
    )];
    messages.extend(run(1, "running 3 tests\ntest parses_units ... ok\ntest empty_input_is_an_error ... FAILED\n\ntest result: FAILED. 2 passed; 1 failed"));
    check(
        messages.clone(),
        None,
        &["- `cargo test --test time`: failed, still open", "## Errors still open\n- `cargo test --test time`: test empty_input_is_an_error ... FAILED"],
        &[],
    );
    messages.extend(run(
        2,
        "running 3 tests\ntest result: ok. 3 passed; 0 failed",
    ));
    check(
        messages,
        None,
        &["- `cargo test --test time` ×2: failed (first: test empty_input_is_an_error ... FAILED), then ok"],
        &["## Errors still open"],
    );
}

#[test]
fn files_say_what_happened_to_them() {
    let edit = |i: usize, name: &str, path: &str| {
        Message::assistant(
            format!("a{i}"),
            "",
            vec![call(
                &format!("c{i}"),
                name,
                json!({"path": path, "file_path": path}),
            )],
        )
    };
    let messages = vec![
        Message::user("u1", "Add the theme loader and test it."),
        edit(1, "write", "src/theme.ts"),
        Message::tool_result("t1", "c1", "ok", false),
        edit(2, "edit", "src/theme.ts"),
        Message::tool_result("t2", "c2", "ok", false),
        edit(3, "Edit", "src/theme.ts"),
        Message::tool_result(
            "t3",
            "c3",
            "Could not find the exact text in src/theme.ts.",
            true,
        ),
        edit(4, "create_file", "test/theme.test.ts"),
        Message::tool_result("t4", "c4", "ok", false),
        Message::assistant(
            "a5",
            "",
            vec![call(
                "c5",
                "bash",
                json!({"command": "npx tsx test/theme.test.ts"}),
            )],
        ),
        Message::tool_result("t5", "c5", "FAIL: expected #ffffff", true),
    ];
    check(
        messages,
        None,
        &[
            "- `src/theme.ts`: written; edited; last change failed, still open",
            "- `test/theme.test.ts`: created; last test `npx tsx test/theme.test.ts` failed: FAIL: expected #ffffff",
            // Each open error cites the tool result it came from.
            "## Errors still open\n- `src/theme.ts`: Could not find the exact text in src/theme.ts. [t3]\n- `npx tsx test/theme.test.ts`: FAIL: expected #ffffff [t5]",
        ],
        &[],
    );
}

#[test]
fn client_text_markup_and_escapes_stay_out() {
    // Real Claude Code user lines: a caveat, a slash command, its output,
    // an editor selection around the request.
    let messages = vec![
        Message::user("u1", "Caveat: The messages below were generated by the user while running local commands. DO NOT respond to these messages or otherwise consider them in your response unless the user explicitly asks you to."),
        Message::user("u2", "<command-name>/model</command-name>\n            <command-message>model</command-message>\n            <command-args></command-args>"),
        Message::user("u3", "<local-command-stdout>Set model to \u{1b}[1mopus (claude-opus-4-5-20251101)\u{1b}[22m</local-command-stdout>"),
        Message::user("u4", "<ide_selection>The user selected the lines 508 to 508 from /w/extract.py:\nBeautifulSoup\n\nThis may or may not be related to the current task.</ide_selection> How can I make this possible to install as a library with `uv` so I can run from any directory?"),
        Message::assistant("a1", "", vec![call("c1", "Bash", json!({"command": "uv tool install ."}))]),
        Message::tool_result("t1", "c1", "\u{1b}[31merror\u{1b}[39m: Failed to build `pkg @ file:///w`", true),
        Message::user("u5", "[Request interrupted by user for tool use]"),
    ];
    check(
        messages,
        None,
        &[
            "## Task\n- \"How can I make this possible to install as a library with `uv` so I can run from any directory?\"",
            "- `uv tool install .`: error: Failed to build `pkg @ file:///w`",
        ],
        &["Caveat", "DO NOT respond", "command-name", "opus", "ide_selection", "BeautifulSoup", "\u{1b}", "## User rules", "interrupted"],
    );
}

#[test]
fn an_update_merges_into_the_previous_summary() {
    let first = summary(&request(
        vec![
            Message::user(
                "u1",
                "Port the selector to the theme system, always run the build after an edit.",
            ),
            Message::assistant("a1", "", vec![call("c1", "edit", json!({"path": "a.ts"}))]),
            Message::tool_result("t1", "c1", "ok", false),
            Message::assistant(
                "a2",
                "",
                vec![call("c2", "bash", json!({"command": "npm run build"}))],
            ),
            Message::tool_result("t2", "c2", "error TS1005: ';' expected", true),
        ],
        None,
    ));
    let previous = format!(
        "{first}\n\n<preserved>\n[user rule] Never push to main.\n</preserved>\n\n<modified-files>\na.ts\n</modified-files>"
    );
    let second = check(
        vec![
            Message::user("u2", "ok"),
            Message::assistant("a3", "", vec![call("c3", "edit", json!({"path": "a.ts"}))]),
            Message::tool_result("t3", "c3", "ok", false),
            Message::assistant("a4", "", vec![call("c4", "bash", json!({"command": "npm run build"}))]),
            Message::tool_result("t4", "c4", "done", false),
            Message::assistant("a5", "Fixed the missing semicolon; the build passes.", vec![]),
        ],
        Some(&previous),
        &[
            "## Task\n- \"Port the selector to the theme system, always run the build after an edit.\"",
            "- … and 1 short follow-up or question",
            "## User rules\n- \"Port the selector to the theme system, always run the build after an edit.\" [u1]\n- \"Never push to main.\"",
            "## Progress\n- Fixed the missing semicolon; the build passes.",
            "- `a.ts`: edited ×2",
            "- `npm run build` ×2: failed (first: error TS1005: ';' expected), then ok",
            "The latest request \"ok\" was answered",
        ],
        &["## Errors still open", "<modified-files>", "<preserved>"],
    );
    // Reading a summary back and writing it again changes nothing.
    let again = summary(&request(Vec::new(), Some(second.clone())));
    assert_eq!(again, second);
}

#[test]
fn foreign_and_older_summaries_are_kept() {
    // An LLM's (or pi's) summary: its sections stay, code blocks shrink.
    let foreign = "# Context Checkpoint\n\n## Goal\nRefactor the run modes.\n\n### Agreed Structure\n```\nsrc/\n├── core/\n└── modes/\n```\n## User Preferences\n- **E2E tests only**";
    check(
        vec![Message::user("u1", "continue with the next work package please, and commit it")],
        Some(foreign),
        &[
            "## Earlier summary\n  # Context Checkpoint\n  ## Goal\n  Refactor the run modes.\n  ### Agreed Structure\n  (3 lines of code left out)\n  ## User Preferences\n  - **E2E tests only**",
            "## Later requests\n- \"continue with the next work package please, and commit it\"",
        ],
        &["## Task", "├──"],
    );
    // The format of earlier compactd versions.
    let older = "## Goals and requests\n- \"Fix the parser\"\n\n## Progress\n- `bash` cargo test → ok\n\n## Errors seen\n- `bash`: boom\n\n## Next step\n- Continue with the latest request: \"Fix the parser\"";
    check(
        Vec::new(),
        Some(older),
        &[
            "## Task\n- \"Fix the parser\"",
            "## Next step\n- Continue with the task above.",
        ],
        &["→ ok", "boom", "Earlier summary", "Goals and requests"],
    );
}

#[test]
fn a_split_turn_refers_to_its_request() {
    let text = check(
        vec![
            Message::user("u1", "no conosle logs! setTheme should return an error that the caller can display however they want"),
            Message::assistant("a1", "You're right! Let me fix this properly:", vec![call("c1", "edit", json!({"path": "theme.ts"}))]),
            Message::tool_result("t1", "c1", "ok", false),
        ],
        None,
        &[
            "## Task\n- \"no conosle logs! setTheme",
            "## User rules\n- \"no conosle logs!\"",
            "## Next step\n- Continue with the task above.",
        ],
        &["## Later requests"],
    );
    // Merged into the summary before it, the request is a later one.
    let merged = merge_summaries(&["## Task\n- \"Theme everything.\"".into(), text]);
    assert!(merged.contains("## Later requests\n- \"no conosle logs! setTheme should return an error that the caller can display however they want\""), "{merged}");
    assert!(
        merged.contains("- Continue with the last request above."),
        "{merged}"
    );
}

#[test]
fn the_budget_drops_the_least_important_first() {
    let mut messages = vec![Message::user(
        "u0",
        "Theme the whole terminal UI, one component after another, and keep the build green.",
    )];
    for i in 1..=40 {
        messages.push(Message::user(
            format!("u{i}"),
            format!("now port component number {i} to the theme system and make it look right"),
        ));
        messages.push(Message::assistant(
            format!("a{i}"),
            "",
            vec![call(
                &format!("c{i}"),
                "edit",
                json!({"path": format!("src/component{i}.ts")}),
            )],
        ));
        messages.push(Message::tool_result(
            format!("t{i}"),
            format!("c{i}"),
            "ok",
            false,
        ));
        messages.push(Message::assistant(format!("r{i}"), format!("Ported component {i} to the theme system; it now uses the accent token for its border and the muted token for its hints."), vec![]));
    }
    messages.push(Message::assistant(
        "x",
        "",
        vec![call("cx", "bash", json!({"command": "npm test"}))],
    ));
    messages.push(Message::tool_result(
        "tx",
        "cx",
        "FAIL src/component7.test.ts",
        true,
    ));
    let full = summarize_offline(&request(messages.clone(), None));
    let small = summarize_offline_within(&request(messages, None), Some(600));
    let count = |t: &str| Encoding::O200k.count(t);
    assert!(count(&full) <= DEFAULT_BUDGET, "{}", count(&full));
    assert!(count(&small) < count(&full));
    for kept in [
        "## Task\n- \"Theme the whole terminal UI",
        "`src/component1.ts`: edited",
        "`src/component40.ts`: edited",
        "- `npm test`: FAIL src/component7.test.ts",
    ] {
        assert!(small.contains(kept), "missing {kept:?} in\n{small}");
    }
    assert!(
        !small.contains("## Progress\n- Ported component 1 "),
        "the oldest outcomes go first\n{small}"
    );
    assert!(full.contains("Ported component 40 to the theme system"));
}

#[test]
fn a_summary_of_a_few_short_messages_does_not_outgrow_them() {
    let mut messages = Vec::new();
    for i in 0..6 {
        messages.push(Message::user(
            format!("u{i}"),
            format!("p request {i}: lorem ipsum dolor sit amet"),
        ));
        messages.push(Message::assistant(
            format!("a{i}"),
            format!("p answer {i}: lorem ipsum dolor sit amet"),
            vec![],
        ));
    }
    let input: u64 = messages
        .iter()
        .map(|m| Encoding::O200k.count(m.text()))
        .sum();
    let text = summarize_offline(&request(messages, None));
    assert!(
        Encoding::O200k.count(&text) <= MIN_BUDGET.max(input / 2),
        "{text}"
    );
    assert!(text.starts_with("## Task\n- \"p request 0"), "{text}");
}

// ---------------------------------------------------------------------
// What an agent that carries on needs, kind by kind (made-up examples of
// the defects found on real sessions).

fn bash(id: &str, command: &str) -> Vec<ToolCall> {
    vec![call(id, "bash", json!({"command": command}))]
}

/// The entries of one section of a summary.
fn section(summary: &str, title: &str) -> Vec<String> {
    let heading = format!("## {title}\n");
    let Some(start) = summary.find(&heading) else {
        return Vec::new();
    };
    summary[start + heading.len()..]
        .lines()
        .take_while(|l| !l.starts_with("## "))
        .filter_map(|l| l.strip_prefix("- "))
        .map(str::to_string)
        .collect()
}

#[test]
fn rules_in_emphasis_keep_every_sentence_of_the_run() {
    let text = check(
        vec![
            Message::user(
                "u1",
                "Clean up the release branch. **Do not push. Do not merge. Do not touch master.**\n\nDo **NOT** use the MCP tools for this.",
            ),
            Message::assistant("a1", "Understood.", vec![]),
        ],
        None,
        &[],
        &[],
    );
    let rules = section(&text, "User rules");
    assert!(!rules.join("").contains("**"), "{rules:?}");
    for rule in [
        "Do not push.",
        "Do not merge.",
        "Do not touch master.",
        "Do NOT use the MCP tools for this.",
    ] {
        assert!(rules.iter().any(|r| r.contains(rule)), "{rule}: {rules:?}");
    }
}

#[test]
fn constraints_stated_in_a_task_are_rules() {
    let task = format!(
        "Build a semantic search page for the docs.\n\n{}\n\nIt must stay dependency free (except for transformers.js).\n\nKeep it to the same 3 files.\n\n- compilation free\n- works offline",
        "The page loads the index, embeds the query and ranks the sections. ".repeat(12)
    );
    let text = check(
        vec![
            Message::user("u1", &task),
            Message::assistant("a1", "Starting with the index.", vec![]),
        ],
        None,
        &[],
        &[],
    );
    let rules = section(&text, "User rules").join("\n");
    for rule in [
        "It must stay dependency free (except for transformers.js).",
        "Keep it to the same 3 files.",
        "compilation free",
    ] {
        assert!(rules.contains(rule), "{rule}: {rules}");
    }
}

#[test]
fn pasted_output_is_not_the_user_speaking() {
    let text = check(
        vec![
            Message::user(
                "u1",
                "push fails:\n\ngit@github.com: Permission denied (publickey).\nfatal: Could not read from remote repository.\n\nPlease make sure you have the correct access rights\nand the repository exists.\n\nnever force push though",
            ),
            Message::assistant("a1", "Checking the remote.", vec![]),
        ],
        None,
        &[],
        &[],
    );
    let rules = section(&text, "User rules");
    assert_eq!(rules, ["\"never force push though\" [u1]"], "{text}");
}

#[test]
fn a_failure_a_later_run_fixed_is_not_open() {
    let messages = vec![
        Message::user("u1", "Commit the fix and run the tests"),
        Message::assistant("a1", "", bash("c1", "git commit -m 'Fix parser'")),
        Message::tool_result(
            "t1",
            "c1",
            "error: gpg failed to sign the data\nfatal: failed to write commit object",
            true,
        ),
        Message::assistant(
            "a2",
            "",
            bash("c2", "git commit --no-gpg-sign -m 'Fix parser'"),
        ),
        Message::tool_result("t2", "c2", "[main e6a3b21] Fix parser", false),
        Message::assistant("a3", "", bash("c3", "uv run pytest tests/test_parse.py -x")),
        Message::tool_result(
            "t3",
            "c3",
            "tests/test_parse.py::test_empty FAILED\n1 failed, 3 passed",
            true,
        ),
        Message::assistant("a4", "", bash("c4", "uv run pytest")),
        Message::tool_result("t4", "c4", "12 passed in 0.4s", false),
        Message::assistant("a5", "Committed and the suite passes.", vec![]),
    ];
    let text = check(
        messages,
        None,
        &["git commit"],
        &["## Errors still open", "still open"],
    );
    assert!(section(&text, "Errors still open").is_empty(), "{text}");
}

#[test]
fn a_refused_call_is_no_error_and_what_the_user_typed_is_a_request() {
    let refused = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). To tell you how to proceed, the user said:\nWait, first copy the favicon into public/";
    let text = check(
        vec![
            Message::user("u1", "Set up the site's icons"),
            Message::assistant(
                "a1",
                "",
                vec![call(
                    "c1",
                    "Write",
                    json!({"file_path": "public/icon.svg", "content": "<svg/>"}),
                )],
            ),
            Message::tool_result("t1", "c1", refused, true),
            Message::user("u2", "[Request interrupted by user for tool use]"),
        ],
        None,
        &["Wait, first copy the favicon into public/"],
        &["## Errors still open", "last change failed"],
    );
    // Cited by the tool result that carried it.
    assert_eq!(
        section(&text, "Later requests"),
        ["\"Wait, first copy the favicon into public/ (refusing Write public/icon.svg)\" [t1]"]
    );
    assert_eq!(
        section(&text, "Next step"),
        ["Continue with the last request above."]
    );
}

#[test]
fn a_failing_test_run_reports_the_failure_not_the_line_before() {
    let output = "collected 3 items\n\ntests/test_errors.py::test_y PASSED [ 17%]\ntests/test_version.py::test_x FAILED [ 33%]\n\n    def test_x():\n>       assert version() == '2.0.0'\nE       AssertionError: assert '1.0.0' == '2.0.0'\n\n1 failed, 2 passed in 0.1s";
    let text = check(
        vec![
            Message::user("u1", "Bump the version"),
            Message::assistant("a1", "", bash("c1", "pytest -v")),
            Message::tool_result("t1", "c1", output, true),
        ],
        None,
        &["test_x FAILED", "assert '1.0.0' == '2.0.0'"],
        &["test_y PASSED"],
    );
    assert_eq!(section(&text, "Errors still open").len(), 1, "{text}");
}

#[test]
fn a_later_finding_replaces_the_guess_it_answers() {
    check(
        vec![
            Message::user("u1", "Why does the upload hang?"),
            Message::assistant(
                "a1",
                "The issue is a missing timeout on the socket read.",
                bash("c1", "grep -rn timeout src"),
            ),
            Message::tool_result("t1", "c1", "src/net.rs:3: timeout: 30", false),
            Message::assistant(
                "a2",
                "The issue is the retry loop never yielding to the runtime.",
                vec![],
            ),
        ],
        None,
        &["The issue is the retry loop never yielding to the runtime."],
        &["missing timeout"],
    );
}

#[test]
fn an_approved_plan_keeps_its_steps_and_what_is_done() {
    let plan = "# Plan: Session Share Plugin\n\n1. Create the plugin manifest\n2. Write publish.sh using gh\n3. Document it in README.md";
    check(
        vec![
            Message::user("u1", "Plan a plugin that publishes the session"),
            Message::assistant("a1", "", vec![call("c1", "ExitPlanMode", json!({"plan": plan}))]),
            Message::tool_result("t1", "c1", "User has approved your plan. You can now start coding.", false),
            Message::assistant("a2", "", vec![call("c2", "TodoWrite", json!({"todos": [
                {"content": "Create the plugin manifest", "status": "completed"},
                {"content": "Write publish.sh", "status": "in_progress"},
                {"content": "Document it", "status": "pending"}]}))]),
            Message::tool_result("t2", "c2", "Todos have been modified successfully.", false),
        ],
        None,
        &[
            "## Plan\n- Plan: Session Share Plugin\n- 1. Create the plugin manifest\n- 2. Write publish.sh using gh\n- 3. Document it in README.md\n- [x] Create the plugin manifest\n- [>] Write publish.sh\n- [ ] Document it",
        ],
        &["ExitPlanMode"],
    );
    // A plan the user sent back is no plan; one the assistant wrote and the
    // user accepted is.
    let refused = "User chose to stay in plan mode and continue planning";
    check(
        vec![
            Message::user("u1", "Plan it"),
            Message::assistant(
                "a1",
                "",
                vec![call("c1", "ExitPlanMode", json!({"plan": plan}))],
            ),
            Message::tool_result("t1", "c1", refused, true),
        ],
        None,
        &[],
        &["## Plan"],
    );
    check(
        vec![
            Message::user("u1", "How would you split the module?"),
            Message::assistant("a1", "My plan:\n1. Move the parser to parse.rs\n2. Move the printer to print.rs\n3. Re-export both from lib.rs", vec![]),
            Message::user("u2", "yes, go ahead"),
        ],
        None,
        &["## Plan\n- 1. Move the parser to parse.rs"],
        &[],
    );
}

#[test]
fn a_long_plan_in_phases_keeps_every_phase() {
    let mut plan = String::from(
        "# Applet plan\n\n## Overview\n1. Why: the panel\n\n## Implementation Steps\n",
    );
    for phase in 1..=5 {
        plan.push_str(&format!("\n### Phase {phase}: Part {phase}\n"));
        for step in 1..=4 {
            plan.push_str(&format!(
                "{}. Build piece {phase}.{step}\n   - a detail\n",
                (phase - 1) * 4 + step
            ));
        }
    }
    let steps = plans::steps(&plan);
    assert_eq!(steps.len(), 6, "{steps:#?}");
    assert_eq!(steps[0], "Applet plan");
    assert_eq!(
        steps[5],
        "Phase 5: Part 5: Build piece 5.1; Build piece 5.2; Build piece 5.3; Build piece 5.4"
    );
    assert!(!steps.concat().contains("a detail") && !steps.concat().contains("Why"));
    // Few enough steps are listed one by one.
    let short = "# P\n## Phase 1\n1. One\n2. Two\n## Phase 2\n3. Three";
    assert_eq!(plans::steps(short), ["P", "1. One", "2. Two", "3. Three"]);
}

/// A numbered item that ends with a colon introduces its sub-items: they
/// are the plan's steps, not the heading-like item (nor "Resulting flow:"
/// before a code block).
#[test]
fn an_item_that_introduces_sub_items_gives_them_as_steps() {
    let plan = "# Inline the helper\n\n## Changes\n\n1. **Inline `commit()` into `end()`**:\n   - Move the branch check to the top\n   - Parse stdin once\n   - Remove the `find_recent()` call\n\n2. **Resulting flow**:\n   ```\n   end()\n   ```\n\n3. **Rename `sid`** to `ctx.id`.\n";
    assert_eq!(
        plans::steps(plan),
        [
            "Inline the helper",
            "1. Move the branch check to the top",
            "2. Parse stdin once",
            "3. Remove the `find_recent()` call",
            "4. Rename `sid` to `ctx.id`."
        ]
    );
}

/// Claude Code's plan mode writes its plan to a file and calls
/// `ExitPlanMode` without it.
#[test]
fn a_plan_written_to_a_plan_file_is_the_plan_approved() {
    let plan = "# Plan\n\n## Steps\n1. Read the RAPL counters\n2. Draw the panel text";
    check(
        vec![
            Message::user("u1", "Plan a power applet"),
            Message::assistant(
                "a1",
                "",
                vec![call(
                    "c1",
                    "Write",
                    json!({"file_path": "/tmp/power-plan.md", "content": plan}),
                )],
            ),
            Message::tool_result("t1", "c1", "File created successfully", false),
            Message::assistant(
                "a2",
                "The plan is in /tmp/power-plan.md.",
                vec![call("c2", "ExitPlanMode", json!({}))],
            ),
            Message::tool_result(
                "t2",
                "c2",
                "User has approved exiting plan mode. You can now proceed.",
                false,
            ),
        ],
        None,
        &["## Plan\n- Plan\n- 1. Read the RAPL counters\n- 2. Draw the panel text"],
        &[],
    );
}

#[test]
fn the_users_own_shell_commands_and_their_output_are_kept() {
    let text = check(
        vec![
            Message::user("u1", "<bash-input>npm run lint</bash-input>"),
            Message::user("u2", "<bash-stdout>\n> lint\n> eslint src\n\nsrc/app.ts\n  3:7  error  'x' is assigned a value but never used  no-unused-vars\n\n1 problem (1 error, 0 warnings)</bash-stdout><bash-stderr></bash-stderr>"),
            Message::user("u3", "please fix these"),
        ],
        None,
        &["## User's shell commands\n- `npm run lint`: 3:7 error 'x' is assigned a value but never used no-unused-vars"],
        &["Nothing of note"],
    );
    assert!(section(&text, "Task").join("").contains("please fix these"));
}

#[test]
fn a_vague_closing_message_says_what_was_changed() {
    check(
        vec![
            Message::user("u1", "Refactor the storage layer"),
            Message::assistant(
                "a1",
                "",
                vec![call("c1", "edit", json!({"path": "src/store.rs"}))],
            ),
            Message::tool_result("t1", "c1", "ok", false),
            Message::assistant(
                "a2",
                "",
                vec![call("c2", "write", json!({"path": "src/store/log.rs"}))],
            ),
            Message::tool_result("t2", "c2", "ok", false),
            Message::assistant(
                "a3",
                "I have successfully completed the comprehensive refactoring!",
                vec![],
            ),
        ],
        None,
        &["(changed store.rs, log.rs)"],
        &[],
    );
}

#[test]
fn a_withdrawn_question_is_not_the_next_step() {
    let text = check(
        vec![
            Message::user("u1", "Add a --verbose flag to the CLI"),
            Message::assistant(
                "a1",
                "",
                vec![call("c1", "edit", json!({"path": "src/cli.rs"}))],
            ),
            Message::tool_result("t1", "c1", "ok", false),
            Message::assistant("a2", "Added the flag.", vec![]),
            Message::user(
                "u2",
                "Why does the build take so long on CI machines these days?",
            ),
            Message::user("u3", "Never mind!"),
        ],
        None,
        &[],
        &["build take so long"],
    );
    assert!(!section(&text, "Next step").is_empty(), "{text}");
}

#[test]
fn quotes_lose_shell_line_continuations() {
    check(
        vec![
            Message::user("u1", "run this for me:\ncargo build \\\n  --release"),
            Message::assistant("a1", "Building.", vec![]),
        ],
        None,
        &["cargo build\n", "--release"],
        &["\\"],
    );
}

/// Two more requests of the person, each answered by three commands that
/// succeeded: the session going well past what came before.
fn work_going_on(
    request: impl Fn(u32) -> String,
    command: impl Fn(String) -> String,
) -> Vec<Message> {
    let mut messages = Vec::new();
    for n in 2..=3 {
        messages.push(Message::user(format!("u{n}"), request(n)));
        for k in 0..3 {
            let id = format!("c{n}{k}");
            messages.push(Message::assistant(
                format!("a{n}{k}"),
                "",
                bash(&id, &command(format!("{n}{k}"))),
            ));
            messages.push(Message::tool_result(format!("t{n}{k}"), &id, "ok", false));
        }
    }
    messages
}

#[test]
fn a_failure_the_session_went_well_past_is_not_open() {
    let mut messages = vec![
        Message::user("u1", "Find a browser to preview the export"),
        Message::assistant("a1", "", bash("c1", "chromium --version")),
        Message::tool_result("t1", "c1", "chromium: command not found", true),
    ];
    messages.extend(work_going_on(
        |n| format!("Now do step {n} of the export please"),
        |part| format!("./export.sh --part {part}"),
    ));
    let text = check(
        messages.clone(),
        None,
        &["`chromium --version`: failed"],
        &[],
    );
    assert!(section(&text, "Errors still open").is_empty(), "{text}");
    // Right after it, it is open.
    let text = check(messages[..3].to_vec(), None, &[], &[]);
    assert_eq!(section(&text, "Errors still open").len(), 1, "{text}");
}

#[test]
fn a_request_sent_again_is_listed_once() {
    let text = check(
        vec![
            Message::user("u1", "Write the release notes for version two"),
            Message::user(
                "u2",
                "I forgot to tell you, there is another plugin to reference",
            ),
            Message::user("u3", "are you able to test it yourself now"),
            Message::user(
                "u4",
                "I forgot to tell you, there is another plugin to reference",
            ),
        ],
        None,
        &[],
        &[],
    );
    let requests = section(&text, "Later requests");
    assert_eq!(requests.len(), 2, "{requests:?}");
}

#[test]
fn the_task_requests_rules_and_open_errors_cite_their_messages_and_keep_them_through_an_update() {
    let first = vec![
        Message::user("u1", "Make the build pass."),
        Message::user("u0", "Never edit Cargo.lock by hand."),
        Message::assistant(
            "a1",
            "",
            vec![call("c1", "Bash", json!({"command": "cargo build"}))],
        ),
        Message::tool_result("t1", "c1", "error[E0425]: cannot find value `argv`", true),
        Message::user("u2", "Also add a test for parse_args, please."),
    ];
    let text = check(
        first,
        None,
        &[
            "- \"Make the build pass.\" [u1]",
            "- \"Also add a test for parse_args, please.\" [u2]",
            "`cargo build`: error[E0425]: cannot find value `argv` [t1]",
            "## User rules\n- \"Never edit Cargo.lock by hand.\" [u0]",
        ],
        &[],
    );
    // A later compaction reads the citations back and keeps them.
    let again = check(
        vec![Message::user(
            "u3",
            "Then update the changelog for the release.",
        )],
        Some(&text),
        &[
            "- \"Make the build pass.\" [u1]",
            "- \"Also add a test for parse_args, please.\" [u2]",
            "\"Then update the changelog for the release.\" [u3]",
            "[t1]",
            "## User rules\n- \"Never edit Cargo.lock by hand.\" [u0]",
        ],
        &["[u1] [u1]"],
    );
    assert_eq!(again.matches("[u1]").count(), 1, "{again}");
}

/// The summary of `messages` followed by `later`, the messages a
/// compaction keeps verbatim after it.
fn summary_before(messages: Vec<Message>, later: Vec<Message>) -> String {
    summary(&SummaryRequest {
        later: later.into_iter().map(Into::into).collect(),
        ..request(messages, None)
    })
}

#[test]
fn a_failure_retried_with_success_in_the_kept_messages_is_not_open() {
    let messages = vec![
        Message::user("u1", "Write a script that renames the user everywhere"),
        Message::assistant("a1", "", bash("c1", "./scripts/rename.sh new --dry-run")),
        Message::tool_result(
            "t1",
            "c1",
            "(eval):1: ./scripts/rename.sh: bad interpreter: /bin/bash^M: no such file or directory",
            true,
        ),
        Message::assistant("a2", "", bash("c2", "sed -i 's/\\r$//' scripts/rename.sh")),
        Message::tool_result("t2", "c2", "", false),
    ];
    let later = vec![
        Message::assistant(
            "a3",
            "",
            bash("c3", "./scripts/rename.sh new --dry-run | head"),
        ),
        Message::tool_result("t3", "c3", "would rename 12 files", false),
    ];
    // Without what follows, the failure is open.
    let alone = summary_before(messages.clone(), Vec::new());
    assert_eq!(section(&alone, "Errors still open").len(), 1, "{alone}");
    // The retry that worked is kept verbatim right after the summary: the
    // summary does not call the failure open, and still says it happened.
    let text = summary_before(messages.clone(), later);
    assert!(section(&text, "Errors still open").is_empty(), "{text}");
    assert!(
        text.contains("`./scripts/rename.sh new --dry-run`: failed: (eval):1"),
        "{text}"
    );
    // Kept messages that do other work leave it open.
    let unrelated = vec![
        Message::assistant("a3", "", bash("c3", "git status --short")),
        Message::tool_result("t3", "c3", " M scripts/rename.sh", false),
    ];
    let text = summary_before(messages, unrelated);
    assert_eq!(section(&text, "Errors still open").len(), 1, "{text}");
}

#[test]
fn a_failure_the_kept_messages_went_well_past_is_not_open() {
    let messages = vec![
        Message::user("u1", "Kill the stuck git processes"),
        Message::assistant("a1", "", bash("c1", "pkill -9 git")),
        Message::tool_result(
            "t1",
            "c1",
            "/usr/bin/bash: line 1: pkill: command not found",
            true,
        ),
    ];
    let later = work_going_on(
        |n| format!("Now commit part {n} of the audit please"),
        |part| format!("powershell.exe -Command \"Step-{part}\""),
    );
    let text = summary_before(messages.clone(), later);
    assert!(section(&text, "Errors still open").is_empty(), "{text}");
    assert!(
        text.contains("`pkill -9 git`: failed: /usr/bin/bash: line 1: pkill: command not found"),
        "{text}"
    );
    // Nothing of the kept messages becomes part of the summary.
    assert!(
        !text.contains("Step-2") && !text.contains("commit part"),
        "{text}"
    );
    let text = summary_before(messages, Vec::new());
    assert_eq!(section(&text, "Errors still open").len(), 1, "{text}");
}

#[test]
fn a_change_that_failed_and_worked_in_the_kept_messages_is_not_left_failed() {
    let messages = vec![
        Message::user("u1", "Rename parse to parse_all in src/lib.rs"),
        Message::assistant(
            "a1",
            "",
            vec![call("c1", "edit", json!({"path": "src/lib.rs"}))],
        ),
        Message::tool_result("t1", "c1", "old_string not found in src/lib.rs", true),
    ];
    let later = vec![
        Message::assistant(
            "a2",
            "",
            vec![call("c2", "edit", json!({"path": "src/lib.rs"}))],
        ),
        Message::tool_result("t2", "c2", "ok", false),
    ];
    let alone = summary_before(messages.clone(), Vec::new());
    assert!(alone.contains("last change failed"), "{alone}");
    let text = summary_before(messages, later);
    assert!(!text.contains("last change failed"), "{text}");
    assert!(section(&text, "Errors still open").is_empty(), "{text}");
}

/// An agent's own compaction replaced the messages that held the task, a
/// rule and the approved plan, and its summary kept none of them: the next
/// summary takes them back from those messages (and only them: the rest is
/// the agent's summary's to tell).
#[test]
fn what_an_agents_summary_dropped_comes_back_from_the_messages_it_replaced() {
    let plan = "# Plan\n\n## Steps\n1. Read the RAPL counters\n2. Draw the panel text";
    let replaced = vec![
        Message::user("u1", "Build a power applet. Never run sudo yourself."),
        Message::assistant(
            "a1",
            "",
            vec![call("c1", "ExitPlanMode", json!({"plan": plan}))],
        ),
        Message::tool_result("t1", "c1", "User has approved your plan.", false),
        Message::assistant("a2", "", bash("c2", "cargo build --release")),
        Message::tool_result("t2", "c2", "error: linker `cc` not found", true),
    ];
    let agents = "This session is being continued from a previous conversation. The applet's backend is written.";
    let request = SummaryRequest {
        earlier: replaced.into_iter().map(Into::into).collect(),
        ..request(
            vec![Message::user("u9", "Now the popup, please")],
            Some(agents.to_string()),
        )
    };
    let text = summary(&request);
    for needle in [
        "## Task\n- \"Build a power applet. Never run sudo yourself.\" [u1]",
        "## User rules\n- \"Never run sudo yourself.\"",
        "## Plan\n- Plan\n- 1. Read the RAPL counters",
        "The applet's backend is written.",
        "Now the popup, please",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    // What else those messages hold is not told again.
    assert!(!text.contains("linker"), "{text}");
    // Without them, the agent's summary is all there is.
    let text = summary(&request_without_earlier(&request));
    assert!(
        !text.contains("## Plan") && !text.contains("## User rules"),
        "{text}"
    );
}

/// The person's words through tools' results in messages an agent's own
/// summary replaced (a reply refusing a call, a call refused without a
/// word) come back too: the agent's summary tends to drop them.
#[test]
fn refusals_an_agents_summary_dropped_come_back() {
    let refused = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). To tell you how to proceed, the user said:\nuse the sessionId from the hook payload instead";
    let plain = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed.";
    let replaced = vec![
        Message::user("u1", "Fix the session end handler"),
        Message::assistant(
            "a1",
            "",
            vec![call("c1", "Edit", json!({"file_path": "handlers.go"}))],
        ),
        Message::tool_result("t1", "c1", refused, true),
        Message::assistant("a2", "", bash("c2", "gh repo view --json owner")),
        Message::tool_result("t2", "c2", plain, true),
        Message::assistant("a3", "", bash("c3", "go test ./...")),
        Message::tool_result("t3", "c3", "ok", false),
    ];
    let agents = "This session is being continued from a previous conversation. The handler parses stdin once.";
    let request = SummaryRequest {
        earlier: replaced.into_iter().map(Into::into).collect(),
        ..request(
            vec![Message::user("u9", "Now the tests")],
            Some(agents.to_string()),
        )
    };
    let text = summary(&request);
    for needle in [
        "\"use the sessionId from the hook payload instead (refusing Edit handlers.go)\" [t1]",
        "`gh repo view --json owner` → rejected by the user.",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    let text = summary(&request_without_earlier(&request));
    assert!(!text.contains("sessionId from the hook"), "{text}");
}

fn request_without_earlier(request: &SummaryRequest) -> SummaryRequest {
    SummaryRequest {
        earlier: Vec::new(),
        ..request.clone()
    }
}

#[test]
fn stopping_a_shell_that_had_stopped_is_no_error() {
    let messages = vec![
        Message::user("u1", "Stop the dev server"),
        Message::assistant(
            "a1",
            "",
            vec![call("c1", "KillShell", json!({"shell_id": "dce0af"}))],
        ),
        Message::tool_result(
            "t1",
            "c1",
            "Shell dce0af is not running, so cannot be killed (status: killed)",
            true,
        ),
    ];
    let text = check(messages.clone(), None, &["KillShell"], &["not running"]);
    assert!(section(&text, "Errors still open").is_empty(), "{text}");
    // Other failures of it stay failures.
    let mut other = messages[..2].to_vec();
    other.push(Message::tool_result("t1", "c1", "Permission denied", true));
    let text = check(other, None, &[], &[]);
    assert_eq!(section(&text, "Errors still open").len(), 1, "{text}");
}

#[test]
fn a_chain_that_succeeded_answers_the_failure_of_each_of_its_commands() {
    let messages = vec![
        Message::user("u1", "Release v0.8.0"),
        Message::assistant("a1", "", bash("c1", "git commit -m \"Release v0.8.0\"")),
        Message::tool_result(
            "t1",
            "c1",
            "test-theme-colors.ts(23,35): error TS2345: Argument of type '\"toolText\"' is not assignable",
            true,
        ),
        Message::assistant("a2", "", bash("c2", "git add . && git commit -m \"Release v0.8.0\"")),
        Message::tool_result("t2", "c2", "[main 1a2b3c4] Release v0.8.0", false),
    ];
    let text = check(messages.clone(), None, &["TS2345"], &[]);
    assert!(section(&text, "Errors still open").is_empty(), "{text}");
    // A chain that ran other commands answers nothing.
    let mut other = messages[..3].to_vec();
    other.push(Message::assistant(
        "a2",
        "",
        bash("c2", "git add . && git status"),
    ));
    other.push(Message::tool_result("t2", "c2", "On branch main", false));
    let text = check(other, None, &[], &[]);
    assert_eq!(section(&text, "Errors still open").len(), 1, "{text}");
}

/// Claude Code 2.1's task tools build the list item by item; the summary
/// shows each item with its state, and updates from after a compaction
/// apply to the items the summary carried.
#[test]
fn claude_codes_task_tools_keep_each_item_and_its_state() {
    let create = |id: &str, subject: &str, n: u32| {
        [
            Message::assistant(
                format!("a{id}"),
                "",
                vec![call(
                    &format!("c{id}"),
                    "TaskCreate",
                    json!({"subject": subject, "description": "…", "activeForm": "…"}),
                )],
            ),
            Message::tool_result(
                format!("t{id}"),
                format!("c{id}"),
                format!("Task #{n} created successfully: {subject}"),
                false,
            ),
        ]
    };
    let update = |id: &str, args: serde_json::Value| {
        [
            Message::assistant(
                format!("a{id}"),
                "",
                vec![call(&format!("c{id}"), "TaskUpdate", args)],
            ),
            Message::tool_result(format!("t{id}"), format!("c{id}"), "Updated task", false),
        ]
    };
    let mut messages = vec![Message::user("u1", "Ship the plugin")];
    messages.extend(create("1", "Create the plugin manifest", 1));
    messages.extend(create("2", "Write publish.sh", 2));
    messages.extend(create("3", "Document it", 3));
    messages.extend(create("4", "Try a web UI", 4));
    messages.extend(update("5", json!({"taskId": "1", "status": "completed"})));
    messages.extend(update("6", json!({"taskId": "2", "status": "in_progress"})));
    messages.extend(update("7", json!({"taskId": "4", "status": "deleted"})));
    let first = check(
        messages,
        None,
        &["## Plan\n- [x] #1 Create the plugin manifest\n- [>] #2 Write publish.sh\n- [ ] #3 Document it"],
        &["Try a web UI"],
    );
    // After a compaction: updates to items only the summary holds.
    let mut later = vec![Message::user("u9", "go on")];
    later.extend(update("8", json!({"taskId": "2", "status": "completed"})));
    later.extend(update(
        "9",
        json!({"taskId": "3", "status": "in_progress", "subject": "Document it in README.md"}),
    ));
    let second = check(
        later.clone(),
        Some(&first),
        &["- [x] #1 Create the plugin manifest\n- [x] #2 Write publish.sh\n- [>] #3 Document it in README.md"],
        &[],
    );
    // Every item done: the list is finished, not current.
    let mut done = vec![Message::user("u10", "thanks")];
    done.extend(update("10", json!({"taskId": "3", "status": "completed"})));
    check(
        done,
        Some(&second),
        &["## Plan\n- [x] Finished, every task done: Create the plugin manifest; Write publish.sh; Document it in README.md"],
        &["[ ]", "[>]"],
    );
}

/// An approved plan, then a commit (`hash`) by a shell call `id`.
fn plan_then_commit(id: &str, hash: &str) -> Vec<Message> {
    let plan =
        "# Plan: Share plugin\n\n1. Create the plugin manifest\n2. Write publish.sh using gh";
    vec![
        Message::user("u1", "Plan a plugin that publishes the session"),
        Message::assistant(
            "a1",
            "",
            vec![call("c1", "ExitPlanMode", json!({"plan": plan}))],
        ),
        Message::tool_result("t1", "c1", "User has approved your plan.", false),
        Message::assistant(
            format!("a{id}"),
            "",
            vec![call(
                &format!("c{id}"),
                "Bash",
                json!({"command": "git commit -am 'Step'"}),
            )],
        ),
        Message::tool_result(
            format!("t{id}"),
            format!("c{id}"),
            format!("[main {hash}] Step\n 1 file changed"),
            false,
        ),
    ]
}

/// A plan still under way names the commit made since its approval, and
/// keeps it through a compaction; a commit before the plan is not its.
#[test]
fn a_plan_under_way_names_the_commit_made_since() {
    let approved = plan_then_commit("2", "1a2b3c4");
    let first = check(
        approved.clone(),
        None,
        &["## Plan\n- Committed since this plan was approved: 1a2b3c4\n- Plan: Share plugin\n- 1. Create the plugin manifest"],
        &["carried out"],
    );
    check(
        vec![Message::user("u2", "go on")],
        Some(&first),
        &["- Committed since this plan was approved: 1a2b3c4\n- Plan: Share plugin"],
        &["approved: 1a2b3c4\n- Committed"],
    );
    let mut before = vec![approved[3].clone(), approved[4].clone()];
    before.extend(approved[..3].iter().cloned());
    check(
        before,
        None,
        &["- Plan: Share plugin"],
        &["Committed since"],
    );
}

/// A plan carried out is said to be so, with the commit made since, in
/// one line: never presented as current, its steps still on record.
#[test]
fn a_plan_carried_out_is_one_line_with_its_commit() {
    let mut messages = plan_then_commit("2", "1a2b3c4");
    let first = check(messages.clone(), None, &["Committed since"], &[]);
    let done = json!({"todos": [{"content": "Write publish.sh", "status": "completed"}]});
    messages = vec![
        Message::user("u3", "finish it"),
        Message::assistant("a3", "", vec![call("c3", "TodoWrite", done)]),
        Message::tool_result("t3", "c3", "Todos have been modified successfully.", false),
    ];
    messages.extend(plan_then_commit("4", "5e6f7a8b").into_iter().skip(3));
    check(
        messages,
        Some(&first),
        &["## Plan\n- [x] Finished, every task done: Write publish.sh\n- Plan carried out (commit 5e6f7a8b): Plan: Share plugin; Create the plugin manifest; Write publish.sh using gh\n"],
        &["Committed since", "- 1. Create"],
    );
}

/// A slash command's or skill's expansion (a prompt template full of
/// "Don't …" lines) is the client's text: the task is the command as the
/// person typed it, with its arguments, and none of the template's lines
/// is a user rule. A rule the person typed later still is one.
#[test]
fn a_commands_expansion_is_neither_the_task_nor_a_rule() {
    let expansion = "<command-expansion>\nBase directory for this skill: /home/me/skills/review\n\nReview the pull request. Don't comment on style. Never approve a change without tests.\n</command-expansion>";
    check(
        vec![
            Message::user(
                "u1",
                format!("/review-pr 42 focus on the parser\n\n{expansion}"),
            ),
            Message::assistant("a1", "Reviewing.", vec![]),
            Message::user("u2", "Never push to main."),
        ],
        None,
        &[
            "## Task\n- \"/review-pr 42 focus on the parser\" [u1]",
            "## User rules\n- \"Never push to main.\" [u2]",
        ],
        &["Don't comment on style", "Never approve", "Base directory"],
    );
}

/// A long message whose request comes at its end, after a review pasted as
/// prose: the request line keeps the ending, not only the head.
#[test]
fn a_long_messages_request_at_its_end_is_kept() {
    let review = "The review found that the release workflow reuses the cache key of the test job, that the artifact names collide between platforms, and that the signing step runs before the checksums are written. ".repeat(3);
    let later = format!(
        "{review}Given all that, make a plan to fix that path only for the nightly builds."
    );
    check(
        vec![
            Message::user("u1", "Set up the release pipeline for the CLI."),
            Message::assistant("a1", "Done.", vec![]),
            Message::user("u2", &later),
        ],
        None,
        &["make a plan to fix that path only for the nightly builds."],
        &[],
    );
    // The same when it is the task.
    let task = format!(
        "{}\n\nGiven all that, make a plan to fix that path only for the nightly builds.",
        review.repeat(5)
    );
    check(
        vec![Message::user("u1", &task)],
        None,
        &[
            "## Task\n- \"The review found",
            "make a plan to fix that path only for the nightly builds.\" [u1]",
        ],
        &[],
    );
}

/// `AskUserQuestion`'s call and result as Claude Code 2.0.55 wrote them
/// (the deep-manifest session), and an answer typed under "Other".
fn asked(id: &str, questions: serde_json::Value) -> Vec<ToolCall> {
    vec![call(
        id,
        "AskUserQuestion",
        json!({ "questions": questions }),
    )]
}

#[test]
fn answers_to_the_agents_questions_are_requests_decisions_and_rules() {
    let tar = json!([
        {"question": "Should tar archives found in the filesystem (not just embedded) also be processed recursively like ZIP files are?", "header": "Filesystem tar", "options": [{"label": "Yes, both filesystem and embedded", "description": "Treat .tar/.tar.gz like .zip"}, {"label": "Only embedded tar archives", "description": "Only inside ZIP files"}], "multiSelect": false},
        {"question": "Which tar formats should be supported?", "header": "Tar formats", "options": [{"label": ".tar and .tar.gz only", "description": "most common"}, {"label": "Also .tgz", "description": "alias"}], "multiSelect": false},
        {"question": "What should the listing show?", "header": "Listing", "options": [{"label": "Always show sizes", "description": "every entry"}, {"label": "Names only", "description": "short"}], "multiSelect": false}
    ]);
    let state = json!([
        {"question": "How should the session state be kept?", "header": "State", "options": [{"label": "Derive it from the log", "description": "no new field"}, {"label": "Store it explicitly", "description": "a field"}], "multiSelect": false}
    ]);
    let text = check(
        vec![
            Message::user("u1", "Add tar support to the manifest"),
            Message::assistant("a1", "", asked("c1", tar)),
            Message::tool_result(
                "t1",
                "c1",
                "User has answered your questions: \"Should tar archives found in the filesystem (not just embedded) also be processed recursively like ZIP files are?\"=\"Yes, both filesystem and embedded\", \"Which tar formats should be supported?\"=\"Also .tgz\", \"What should the listing show?\"=\"Always show sizes\". You can now continue with the user's answers in mind.",
                false,
            ),
            Message::assistant("a2", "", asked("c2", state)),
            Message::tool_result(
                "t2",
                "c2",
                "User has answered your questions: \"How should the session state be kept?\"=\"store it explicitly, but the change from ACTIVE to IDLE must condense\". You can now continue with the user's answers in mind.",
                false,
            ),
        ],
        None,
        &[],
        &["You can now continue"],
    );
    let requests = section(&text, "Later requests");
    assert!(
        requests.contains(&"\"Yes, both filesystem and embedded (asked: Should tar archives found in the filesystem (not just embedded) also be processed recursively like ZIP files are?)\" [t1]".to_string())
            && requests.contains(&"\"Also .tgz (asked: Which tar formats should be supported?)\" [t1]".to_string())
            && requests.iter().any(|r| r.starts_with("\"store it explicitly, but the change from ACTIVE to IDLE must condense")),
        "{text}"
    );
    let decisions = section(&text, "Decisions and findings");
    assert!(
        decisions.contains(&"User chose \"Also .tgz\" (Which tar formats should be supported?)".to_string())
            && decisions.contains(&"User answered \"store it explicitly, but the change from ACTIVE to IDLE must condense\" (How should the session state be kept?)".to_string()),
        "{text}"
    );
    let rules = section(&text, "User rules");
    assert!(
        rules
            .iter()
            .any(|r| r.contains("the change from ACTIVE to IDLE must condense")),
        "{text}"
    );
    // An option the agent offered, chosen, is a decision, not a rule.
    assert!(
        !rules.iter().any(|r| r.contains("Always show sizes")),
        "{text}"
    );
    // The latest answer is the latest request.
    assert_eq!(
        section(&text, "Next step"),
        ["Continue with the last request above."]
    );
}

/// Claude Code 2.0.x words a refusal with a reason so (the
/// coderabbit-review-helper and JSSoundRecorder sessions).
#[test]
fn a_call_the_user_rejected_says_so_and_their_reason_is_a_request() {
    let with_reason = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). The user provided the following reason for the rejection:  Let's keep the name of the py file but change the pyproject script to reference it, otherwise gtg";
    let plain = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed.";
    let text = check(
        vec![
            Message::user("u1", "Make it installable with uv"),
            Message::assistant("a1", "", bash("c1", "git mv extract.py tool.py")),
            Message::tool_result("t1", "c1", with_reason, true),
            Message::assistant("a2", "", bash("c2", "git push")),
            Message::tool_result("t2", "c2", plain, true),
        ],
        None,
        &[
            "`git mv extract.py tool.py`: rejected by the user",
            "`git push`: rejected by the user",
            // Refused without a word: recorded as the person's "no".
            "## Progress\n- `git push` → rejected by the user.",
        ],
        &["no result", "## Errors still open"],
    );
    assert_eq!(
        section(&text, "Later requests"),
        ["\"Let's keep the name of the py file but change the pyproject script to reference it, otherwise gtg (refusing `git mv extract.py tool.py`)\" [t1]"]
    );
}

/// Older clients put the person's reply itself where a refused call's
/// result goes, as an error: it is their request, not a failure.
#[test]
fn a_refusal_in_the_users_own_words_is_a_request_not_a_failure() {
    let text = check(
        vec![
            Message::user("u1", "Publish the site"),
            Message::assistant("a1", "", bash("c1", "git push")),
            Message::tool_result("t1", "c1", "please add the favicon too first", true),
            Message::assistant("a2", "", bash("c2", "ls missing")),
            Message::tool_result(
                "t2",
                "c2",
                "ls: cannot access 'missing': No such file or directory",
                true,
            ),
        ],
        None,
        &["`git push`: rejected by the user"],
        &["failed: please add"],
    );
    assert_eq!(
        section(&text, "Later requests"),
        ["\"please add the favicon too first (refusing `git push`)\" [t1]"]
    );
}

/// A rejected change and a rejected command, read back by a later
/// compaction, stay rejected.
#[test]
fn a_rejection_survives_an_update() {
    let refused = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed.";
    let first = summary(&request(
        vec![
            Message::user("u1", "Ship the release notes"),
            Message::assistant(
                "a1",
                "",
                vec![
                    call(
                        "c1",
                        "Write",
                        json!({"file_path": "NOTES.md", "content": "x"}),
                    ),
                    call("c2", "bash", json!({"command": "git push"})),
                ],
            ),
            Message::tool_result("t1", "c1", refused, true),
            Message::tool_result("t2", "c2", refused, true),
        ],
        None,
    ));
    check(
        vec![Message::user("u2", "Now write the changelog entry for it")],
        Some(&first),
        &[
            "`NOTES.md`: change rejected by the user",
            "`git push`: rejected by the user",
        ],
        &["no result"],
    );
}

/// Shrinking to a budget counts commands that ran once without trouble;
/// a rejected one did not run, and stays listed.
#[test]
fn a_rejected_command_is_not_counted_as_having_run_ok() {
    let refused = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed.";
    let request = request(
        vec![
            Message::user("u1", "Publish the site once it builds"),
            Message::assistant("a1", "", bash("c1", "npm run build")),
            Message::tool_result("t1", "c1", "built in 2s", false),
            Message::assistant("a2", "", bash("c2", "git push")),
            Message::tool_result("t2", "c2", refused, true),
            // A long request the budget clips after it counts the commands.
            Message::user(
                "u2",
                format!(
                    "Then move the docs over to the new site {}",
                    "and keep every old link working ".repeat(12)
                ),
            ),
        ],
        None,
    );
    let digest = digest_of_request(&request);
    let shrunk: Vec<String> = (20..400)
        .map(|budget| digest.render(budget))
        .filter(|text| text.contains("other commands ran once, ok"))
        .collect();
    for text in &shrunk {
        assert!(text.contains("… 1 other commands ran once, ok"), "{text}");
    }
    // Until the budget drops every command that did not fail.
    assert!(
        shrunk
            .iter()
            .any(|text| text.contains("`git push`: rejected by the user")),
        "{shrunk:?}"
    );
}

#[test]
fn where_things_stand_comes_from_after_the_last_action() {
    // The text announced the run; the run's result is the state.
    let messages = vec![
        Message::user("u1", "Make the flaky test pass"),
        Message::assistant(
            "a1",
            "I fixed the race in the setup. Let me run the suite again.",
            bash("c1", "go test ./..."),
        ),
        Message::tool_result("t1", "c1", "ok  \texample.com/queue\t0.8s\nPASS", false),
    ];
    check(
        messages,
        None,
        &["## Current state\n- I fixed the race in the setup. Let me run the suite again. Last action: `go test ./...` → PASS."],
        &[],
    );
    // A call the person turned down is said so.
    let messages = vec![
        Message::user("u1", "Publish the release"),
        Message::assistant("a1", "", bash("c1", "git push --tags")),
        Message::tool_result(
            "t1",
            "c1",
            "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed.",
            true,
        ),
    ];
    check(
        messages,
        None,
        &["Last action: `git push --tags` → rejected by the user."],
        &[],
    );
}

#[test]
fn a_question_the_agent_asked_last_is_the_next_step() {
    let messages = vec![
        Message::user("u1", "Clean up the config loader"),
        Message::assistant("a1", "", bash("c1", "rm src/legacy_config.rs")),
        Message::tool_result("t1", "c1", "", false),
        Message::assistant(
            "a2",
            "I removed the legacy loader. Should I also drop the `LEGACY_CONFIG` environment variable?",
            vec![],
        ),
    ];
    check(
        messages.clone(),
        None,
        &["## Next step\n- Act on the user's reply to the agent's last question, or wait for it: \"Should I also drop the `LEGACY_CONFIG` environment variable?\""],
        &["Continue with the task above"],
    );
    // Answered: the next step is the answer's.
    let mut answered = messages;
    answered.push(Message::user("u2", "Yes, drop it"));
    check(answered, None, &[], &["the agent's last question"]);
}

#[test]
fn a_turn_that_only_changed_files_reads_as_one_sentence() {
    let messages = vec![
        Message::user("u1", "Reset the retry counter on success"),
        Message::assistant(
            "a1",
            "",
            vec![call("c1", "edit", json!({"path": "src/reset.go"}))],
        ),
        Message::tool_result("t1", "c1", "ok", false),
        Message::assistant("a2", "Done.", vec![]),
    ];
    check(messages, None, &["Changed reset.go."], &["Changed changed"]);
}

/// What actions produced is recorded, not only the last action: the
/// commit, the pushed branch, the pull request a turn created, also when
/// its closing text says none of it, and in a turn cut mid-work.
#[test]
fn results_of_actions_are_recorded() {
    let bash = |id: &str, command: &str, output: &str| {
        vec![
            Message::assistant(
                format!("a{id}"),
                "",
                vec![call(&format!("c{id}"), "Bash", json!({"command": command}))],
            ),
            Message::tool_result(format!("t{id}"), format!("c{id}"), output, false),
        ]
    };
    let mut messages = vec![Message::user("u1", "Commit, push and open a PR")];
    messages.extend(bash(
        "1",
        "git commit -am 'Reset the counter'",
        "[fix 1a2b3c4] Reset the counter\n 1 file changed",
    ));
    messages.extend(bash(
        "2",
        "git push -u origin fix",
        "To github.com:o/r.git\n * [new branch]      fix -> fix",
    ));
    messages.extend(bash(
        "3",
        "gh pr create --fill",
        "https://github.com/o/r/pull/12",
    ));
    messages.push(Message::assistant(
        "a4",
        "All set, the pull request is open and ready for review.",
        vec![],
    ));
    check(
        messages.clone(),
        None,
        &["(results: commit 1a2b3c4 \"Reset the counter\"; pushed fix (new branch); created https://github.com/o/r/pull/12)."],
        &[],
    );
    // Cut mid-work: what it produced so far.
    messages.truncate(5);
    check(
        messages,
        None,
        &["- Results: commit 1a2b3c4 \"Reset the counter\"; pushed fix (new branch)."],
        &[],
    );
}

/// A turn's outcome names something: "Good catch on both points." is
/// no progress when the turn said what it found, nor on its own.
#[test]
fn a_turns_outcome_is_a_sentence_that_names_something() {
    let turn = |answer: &str| {
        vec![
            Message::user("u1", "Why does the client time out?"),
            Message::assistant(
                "a1",
                "",
                vec![call("c1", "edit", json!({"path": "src/net.rs"}))],
            ),
            Message::tool_result("t1", "c1", "ok", false),
            Message::assistant("a2", answer, vec![]),
        ]
    };
    check(
        turn("Good catch on both points. The retry loop never yields to the runtime, so the 30 s timeout fires first."),
        None,
        &["## Progress\n- The retry loop never yields to the runtime"],
        &["Good catch"],
    );
    check(
        turn("Good catch on both points."),
        None,
        &["## Progress\n- Changed net.rs."],
        &["Good catch"],
    );
    check(
        turn("I think I found it. Ok, I see."),
        None,
        &["- Changed net.rs."],
        &["I think I found it"],
    );
}

#[test]
fn an_agents_scratchpad_is_not_carried_as_its_summary() {
    let previous = "This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\nAnalysis:\nLet me chronologically analyze the conversation: the user must be tired.\n\nSummary:\n1. Primary Request and Intent:\n   Build the power applet.";
    check(
        vec![Message::user("u9", "go on")],
        Some(previous),
        &["Primary Request and Intent", "Build the power applet."],
        &[
            "chronologically",
            "This session is being continued",
            "Analysis:",
        ],
    );
    let tagged = "<analysis>\nDraft notes: never mind.\n</analysis>\n<summary>\nThe parser is fixed.\n</summary>";
    check(
        vec![Message::user("u9", "go on")],
        Some(tagged),
        &["The parser is fixed."],
        &["Draft notes"],
    );
}

#[test]
fn findings_are_sentences_with_content_not_openers() {
    for opener in [
        "I see the issue.",
        "This is very revealing.",
        "Now I have a complete picture.",
        "Based on the git diff, here's what these two methods do.",
        "You're out of extra usage · resets 11pm (America/Denver)",
    ] {
        let messages = vec![
            Message::user("u1", "Why does the export drop rows?"),
            Message::assistant("a1", "", bash("c1", "git diff HEAD~1 -- export.py")),
            Message::tool_result("t1", "c1", "- rows = rows[1:]", false),
            Message::assistant("a2", opener, vec![]),
        ];
        check(messages, None, &[], &[opener]);
    }
    // What follows an opener is the finding.
    let messages = vec![
        Message::user("u1", "Why does the export drop rows?"),
        Message::assistant("a1", "", bash("c1", "git diff HEAD~1 -- export.py")),
        Message::tool_result("t1", "c1", "- rows = rows[1:]", false),
        Message::assistant(
            "a2",
            "I see the issue. The export skips the first row since commit 4f2a, which treats it as a header.",
            vec![],
        ),
    ];
    check(
        messages,
        None,
        &["The export skips the first row since commit 4f2a, which treats it as a header."],
        &["I see the issue."],
    );
}

#[test]
fn an_agents_terminal_copied_into_a_request_is_a_paste() {
    let console = "this is the console:\n❯ commit this please\n\n⏺ Skill(commit)\n  ⎿  Initializing…\n  ⎿  Error: Unknown skill: commit\n\n⏺ Bash(git add docs/red.md && git commit -m \"red\")\n  ⎿  [feat/colours 1a2b3c4] red\n\nwhy did the skill fail?";
    let messages = vec![
        Message::user("u1", "Set up the release skills"),
        Message::assistant("a1", "Done.", vec![]),
        Message::user("u2", console),
    ];
    check(
        messages,
        None,
        &[
            "## Later requests\n- \"this is the console: ❯ commit this please […] why did the skill fail?\"",
            "latest request: \"this is the console: ❯ commit this please […] why did the skill fail?\"",
        ],
        &["Unknown skill"],
    );
}

#[test]
fn plan_mode_at_the_cut_is_said() {
    let stay = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). User chose to stay in plan mode and continue planning";
    let mut messages = vec![
        Message::user("u1", "Plan the migration to the new queue"),
        Message::assistant("a1", "", vec![call("c1", "EnterPlanMode", json!({}))]),
        Message::tool_result("t1", "c1", "Entered plan mode.", false),
        Message::assistant(
            "a2",
            "",
            vec![call(
                "c2",
                "ExitPlanMode",
                json!({"plan": "1. Drain the old queue\n2. Switch the writers"}),
            )],
        ),
        Message::tool_result("t2", "c2", stay, true),
    ];
    check(
        messages.clone(),
        None,
        &["## Current state\n- In plan mode: the agent is planning"],
        &[],
    );
    // An approved plan ends it.
    messages.extend([
        Message::assistant(
            "a3",
            "",
            vec![call("c3", "ExitPlanMode", json!({"plan": "1. Drain the old queue\n2. Switch the writers\n3. Remove the old client"}))],
        ),
        Message::tool_result("t3", "c3", "User has approved your plan. You can now start coding.", false),
    ]);
    check(messages, None, &[], &["In plan mode"]);
}

/// An agent's summary over the budget loses its background first (key
/// concepts, files and code), then its middle: what it says last (the
/// user's messages, the current work, the next step) stays. Cutting its
/// end instead lost the latest request.
#[test]
fn an_agents_long_summary_keeps_its_end_when_shrunk() {
    let mut agents = String::from("1. Primary Request and Intent:\n   Fix the session end handler.\n2. Key Technical Concepts:\n");
    for n in 0..60 {
        agents.push_str(&format!(
            "   - Concept number {n} about the phase state machine and its events\n"
        ));
    }
    agents.push_str("3. Files and Code Sections:\n");
    for n in 0..60 {
        agents.push_str(&format!(
            "   - cmd/handler_{n}.go: a note about what changed in it\n"
        ));
    }
    agents.push_str("6. All User Messages:\n   - \"fix it up\"\n9. Optional Next Step:\n   Run the integration tests, then push.\n");
    let digest = super::digest::Digest::parse(&agents);
    let text = digest.render(900);
    for kept in [
        "Fix the session end handler.",
        "\"fix it up\"",
        "Run the integration tests, then push.",
    ] {
        assert!(text.contains(kept), "missing {kept:?} in\n{text}");
    }
    assert!(!text.contains("Concept number 59"), "{text}");
    assert!(text.contains("lines left out"), "{text}");
}

/// Instructions over several lines (a handoff's goal, then what to carry
/// over) read as sentences in the Focus, not run together.
#[test]
fn instructions_over_lines_stay_sentences() {
    let request = SummaryRequest {
        instructions: Some(
            "Write the first message of a new session whose goal is: write the release notes\nCarry over only what that goal needs.".into(),
        ),
        ..request(vec![Message::user("u1", "Ship 1.2")], None)
    };
    let text = summary(&request);
    assert!(
        text.contains("write the release notes. Carry over only what that goal needs."),
        "{text}"
    );
}
