//! A made-up agent, registered only in tests: this file and its line in
//! the registry are all it takes, and discovery, following, limits and the
//! meter work for it unchanged. That is the promise of `agents`: an agent
//! is one module.
//!
//! - **Folders**: `$FAKE_AGENT_HOME`, else `~/.fake-agent`.
//! - **Sessions**: `<home>/<the workspace's path, '/' as '_'>/*.jsonl`.
//! - **Transcript**: `{"fake":"say","role":"user"|"assistant","text":…,
//!   "context":N}` (an assistant's `context`: the provider's count of the
//!   request), `{"fake":"window","tokens":N}`, and
//!   `{"fake":"compacted","summary":…,"before":N}` (it compacted
//!   everything before).
//! - **Auto-compaction**: at 80% of the window.

use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::folders::{jsonl_files, under, Cwds};
use super::limits::{AutoCompactPoint, Basis};
use super::{AgentKind, Homes, LimitsInput};
use crate::compaction::Trigger;
use crate::conversation::{Message, Usage};
use crate::store::SessionSettings;
use crate::transcript::{Emitter, ForeignCompaction, Imported, Line, Reader};

pub struct Fake;

const NAME: &str = "fake";
const HOME: &str = "FAKE_AGENT_HOME";

fn home(homes: &Homes) -> PathBuf {
    homes
        .var(HOME)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| homes.home().join(".fake-agent"))
}

impl AgentKind for Fake {
    fn name(&self) -> &'static str {
        NAME
    }

    fn display_name(&self) -> &'static str {
        "Fake Agent"
    }

    fn format_description(&self) -> &'static str {
        "fake agent JSONL"
    }

    fn env_vars(&self) -> &'static [&'static str] {
        &[HOME]
    }

    fn sessions(&self, homes: &Homes, _: &Cwds, workspace: &Path, _: usize) -> Vec<PathBuf> {
        jsonl_files(&self.session_dir(homes, workspace))
    }

    fn session_dir(&self, homes: &Homes, workspace: &Path) -> PathBuf {
        home(homes).join(workspace.to_string_lossy().replace('/', "_"))
    }

    fn owns(&self, homes: &Homes, path: &Path) -> bool {
        under(path, &home(homes))
    }

    fn classify(&self, line: &Value) -> bool {
        line.get("fake").is_some()
    }

    fn reader(&self, _: Option<&Path>) -> io::Result<Box<dyn Reader + Send>> {
        Ok(Box::new(FakeReader))
    }

    fn import(&self, lines: &[Line]) -> Imported {
        crate::transcript::read_all(
            &mut FakeReader,
            crate::transcript::Format::named(NAME),
            lines,
        )
    }

    fn limits(&self, input: &LimitsInput) -> (u64, AutoCompactPoint) {
        let window = input
            .stated_window
            .or(input.table_window)
            .unwrap_or(input.default_window);
        let at = window * 8 / 10;
        let point = AutoCompactPoint {
            at: Some(at),
            basis: Basis::Exact,
            rule: format!("Fake Agent: 80% of window {window} = {at}"),
        };
        (window, point)
    }
}

struct FakeReader;

impl Reader for FakeReader {
    fn line(&mut self, number: usize, entry: &Value, out: &mut Emitter) {
        let text = |key: &str| entry.get(key).and_then(Value::as_str).unwrap_or("");
        let tokens = |key: &str| entry.get(key).and_then(Value::as_u64);
        match text("fake") {
            "say" => {
                let message = match text("role") {
                    "user" => Message::user("", text("text")),
                    "assistant" => Message {
                        usage: tokens("context").map(|input| Usage {
                            input,
                            ..Usage::default()
                        }),
                        ..Message::assistant("", text("text"), Vec::new())
                    },
                    _ => return out.skip(number, "lines without a role"),
                };
                out.message(number, None, message, false);
            }
            "window" => out.facts(SessionSettings {
                context_window: tokens("tokens"),
                ..SessionSettings::default()
            }),
            "compacted" => out.compaction(ForeignCompaction {
                summary: text("summary").to_string(),
                first_kept: None,
                tokens_before: tokens("before").unwrap_or(0),
                tokens_after: None,
                read_files: Vec::new(),
                modified_files: Vec::new(),
                trigger: Trigger::Threshold,
                line: number,
                created_at: None,
                duration_ms: None,
                cleared: false,
            }),
            other => out.skip_line_type(number, other, &[]),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs::OpenOptions;
    use std::io::Write;

    use super::super::{discover, Agent};
    use super::*;
    use crate::config::Config;
    use crate::engine::follow::{self, FollowEnv};
    use crate::engine::SessionEnv;
    use crate::files::{disk, FileTools};
    use crate::store::{Durability, SessionStore};
    use crate::tokens::MeterSource;

    fn agent() -> Agent {
        Agent::from_name(NAME).expect("registered")
    }

    fn write(path: &Path, lines: &[&str]) {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        for line in lines {
            writeln!(file, "{line}").unwrap();
        }
    }

    /// Its sessions are found and named, and its transcripts told apart,
    /// through the code every agent goes through.
    #[test]
    fn discovery_finds_its_sessions() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("ws");
        std::fs::create_dir_all(&workspace).unwrap();
        let homes = Homes::under(dir.path()).with_var(HOME, dir.path().join("fake-home"));
        let cwds = Cwds::default();
        let real = discover::real_workspace(&workspace);
        let sessions_dir = agent().session_dir(&homes, &real);
        assert!(discover::session_dirs(&homes, &workspace).contains(&sessions_dir));
        std::fs::create_dir_all(&sessions_dir).unwrap();
        let first = sessions_dir.join("one.jsonl");
        write(
            &first,
            &[r#"{"fake":"say","role":"user","text":"fix   the build"}"#],
        );
        let found = discover::all_sessions(&homes, &cwds, &workspace, 10);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].agent, &found[0].path), (agent(), &first));
        assert_eq!(
            discover::title(agent(), &first).as_deref(),
            Some("fix the build")
        );
        assert_eq!(discover::agent_of(&homes, &first), Some(agent()));
        // Outside its folders, by its content.
        let elsewhere = dir.path().join("loose.jsonl");
        std::fs::copy(&first, &elsewhere).unwrap();
        assert_eq!(discover::agent_of(&homes, &elsewhere), Some(agent()));
        let imported = crate::import::read_file(&elsewhere, None, 1 << 20).unwrap();
        assert_eq!(imported.format.name(), NAME);
        assert!(crate::import::parse_name(NAME).is_some());
        // On the wire by its name, and listed for the editors.
        assert_eq!(serde_json::to_value(agent()).unwrap(), NAME);
        let back: Agent = serde_json::from_value(NAME.into()).unwrap();
        assert_eq!(back, agent());
        assert!(Agent::display_names().contains("Fake Agent"));
    }

    /// Followed, its transcript is a session with its limits and a meter
    /// from its usage, that drops when it compacts.
    #[test]
    fn follow_limits_and_the_meter_work_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let transcript = dir.path().join("session.jsonl");
        // About 5,000 tokens of request in a 7,000-token context: the
        // rest is the agent's system prompt and tools.
        let request = serde_json::json!({
            "fake": "say", "role": "user", "text": "read the code ".repeat(1_700)
        });
        write(
            &transcript,
            &[
                r#"{"fake":"window","tokens":10000}"#,
                &request.to_string(),
                r#"{"fake":"say","role":"assistant","text":"done","context":7000}"#,
            ],
        );
        let config = Config::default();
        let homes = Homes::under(dir.path());
        let tools = FileTools::default();
        let session_env = SessionEnv::new(&config, disk::workspace(Vec::new()));
        let env = FollowEnv {
            config: &config,
            tools: &tools,
            homes: &homes,
            session_env: &session_env,
        };
        let store = SessionStore::new(dir.path().join("data"), Durability::Flush);
        let (mut open, mut mirror) =
            follow::follow(&store, agent(), &transcript, dir.path(), &env).unwrap();
        assert_eq!(open.session.message_count(), 2);
        assert_eq!(mirror.auto_compact.at, Some(8_000));
        assert_eq!(mirror.auto_compact.basis, Basis::Exact);
        let meter = follow::meter(&config, &open.session, &mirror);
        assert_eq!(
            (meter.context_window, meter.auto_compact_at, meter.source),
            (10_000, 8_000, MeterSource::Usage)
        );
        assert!(meter.context_tokens >= 7_000, "{meter:?}");
        assert!((1_000..3_000).contains(&meter.overhead_tokens), "{meter:?}");

        write(
            &transcript,
            &[r#"{"fake":"compacted","summary":"read the code; done","before":7000}"#],
        );
        let polled = mirror.poll(&mut open, &env).unwrap();
        assert_eq!(polled.compactions.len(), 1, "seen as it was written");
        let after = follow::meter(&config, &open.session, &mirror);
        assert_eq!(after.overhead_tokens, meter.overhead_tokens, "{after:?}");
        assert!(
            after.context_tokens < meter.overhead_tokens + 100,
            "the summary is all that is left: {after:?}"
        );
        assert_eq!(
            follow::transcript_meter(agent(), &transcript, dir.path(), &env)
                .unwrap()
                .context_tokens,
            after.context_tokens,
            "the status line's figure is the follow meter's"
        );
    }
}
