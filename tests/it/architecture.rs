//! The shape of `src/`, checked: no import cycle among its modules, the
//! command line apart from the server, the core free of I/O layers, and
//! functions and `session.rs` kept small. It reads the sources as text:
//! every `crate::…` and `super::…` path outside comments, `use` trees
//! expanded, resolved to the longest module path that exists.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn modules() -> BTreeMap<String, PathBuf> {
    modules_in(&src())
}

/// Every `.rs` file under `src`, by module path (`server::handlers::open`;
/// `lib.rs` is the root, ``).
fn modules_in(src: &Path) -> BTreeMap<String, PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(src, &mut files);
    files
        .into_iter()
        // The binary's root names the library as `compactd::`.
        .filter(|f| !f.ends_with("main.rs"))
        .map(|file| {
            let relative = file.strip_prefix(src).unwrap().with_extension("");
            let mut parts: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
                parts.pop();
            }
            (parts.join("::"), file)
        })
        .collect()
}

/// The code of a file without its comments (line comments, and doc
/// comments, which may name paths in prose).
fn code(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths of a `use` tree (`a::{b, c::{d, e}}` → `a::b`, `a::c::d`,
/// `a::c::e`).
fn expand_use(tree: &str) -> Vec<String> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    let Some(open) = tree.find('{') else {
        return vec![tree];
    };
    let (prefix, inner) = (&tree[..open], &tree[open + 1..tree.len() - 1]);
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    items
        .into_iter()
        .filter(|item| !item.is_empty())
        .flat_map(expand_use)
        .map(|item| format!("{prefix}{item}"))
        .collect()
}

/// Every `crate::`/`super::` path a file's code names.
fn referenced_paths(code: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut statement: Option<String> = None;
    for line in code.lines() {
        let trimmed = line.trim_start();
        let visibility = ["pub(crate) ", "pub(super) ", "pub "]
            .iter()
            .fold(trimmed, |rest, prefix| {
                rest.strip_prefix(prefix).unwrap_or(rest)
            });
        if statement.is_none() {
            statement = visibility.strip_prefix("use ").map(|_| String::new());
        }
        if let Some(text) = &mut statement {
            text.push_str(visibility.strip_prefix("use ").unwrap_or(trimmed));
            if let Some(end) = text.find(';') {
                paths.extend(expand_use(&text[..end]));
                statement = None;
            }
        }
    }
    let bytes = code.as_bytes();
    for root in ["crate::", "super::"] {
        for (at, _) in code.match_indices(root) {
            let before = at.checked_sub(1).map(|i| bytes[i] as char);
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let path: String = code[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            paths.push(path);
        }
    }
    paths
}

/// The module a path names: the longest prefix that is a module.
fn resolve(from: &str, path: &str, modules: &BTreeMap<String, PathBuf>) -> Option<String> {
    let mut segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let mut base: Vec<&str> = match segments.first() {
        Some(&"crate") => Vec::new(),
        Some(&"super") => {
            let mut base: Vec<&str> = from.split("::").filter(|s| !s.is_empty()).collect();
            while segments.first() == Some(&"super") {
                segments.remove(0);
                base.pop();
            }
            segments.insert(0, "super");
            base
        }
        _ => return None,
    };
    for segment in &segments[1..] {
        let candidate = base.iter().chain(std::iter::once(segment)).copied();
        let candidate = candidate.collect::<Vec<_>>().join("::");
        if !modules.contains_key(&candidate) {
            break;
        }
        base.push(segment);
    }
    Some(base.join("::"))
}

/// `a` is `b` or one of its ancestors (`server` of `server::routes`).
fn is_ancestor(a: &str, b: &str) -> bool {
    a.is_empty() || a == b || b.starts_with(&format!("{a}::"))
}

/// Paths through modules a `use` brought into scope by name (`use
/// crate::engine;` then `engine::append::append(…)`), as `crate::` paths.
fn aliased_paths(
    code: &str,
    from: &str,
    uses: &[String],
    modules: &BTreeMap<String, PathBuf>,
) -> Vec<String> {
    let mut aliases: BTreeMap<String, String> = BTreeMap::new();
    for path in uses {
        let path = path.strip_suffix("::self").unwrap_or(path);
        let Some(module) = resolve(from, path, modules) else {
            continue;
        };
        let name = path.rsplit("::").next().unwrap_or_default();
        if module.rsplit("::").next() == Some(name) && !matches!(name, "crate" | "super") {
            aliases.insert(name.to_string(), module);
        }
    }
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    for (name, module) in &aliases {
        for (at, _) in code.match_indices(&format!("{name}::")) {
            let before = at.checked_sub(1).map(|i| bytes[i] as char);
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let rest: String = code[at + name.len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            out.push(format!("crate::{module}{rest}"));
        }
    }
    out
}

/// The modules each module uses, leaving out its ancestors and
/// descendants: a parent module is the namespace of its children.
fn dependency_graph() -> BTreeMap<String, BTreeSet<String>> {
    dependency_graph_in(&src())
}

fn dependency_graph_in(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let modules = modules_in(src);
    let mut graph = BTreeMap::new();
    for (module, file) in &modules {
        let code = code(file);
        let mut paths = referenced_paths(&code);
        paths.extend(aliased_paths(&code, module, &paths, &modules));
        let uses: BTreeSet<String> = paths
            .iter()
            .filter_map(|path| resolve(module, path, &modules))
            .filter(|used| !is_ancestor(used, module) && !is_ancestor(module, used))
            .collect();
        graph.insert(module.clone(), uses);
    }
    graph
}

/// A cycle through the graph, if there is one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|n| n == node) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, done, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut done, &mut Vec::new()))
}

fn top(module: &str) -> &str {
    module.split("::").next().unwrap_or("")
}

#[test]
fn the_resolver_reads_use_trees_and_paths() {
    assert_eq!(
        expand_use("super::{create, EngineError, x::{a, b}}"),
        [
            "super::create",
            "super::EngineError",
            "super::x::a",
            "super::x::b"
        ]
    );
    let modules = modules();
    let check = |from: &str, path: &str, expected: &str| {
        assert_eq!(
            resolve(from, path, &modules).as_deref(),
            Some(expected),
            "{path} from {from}"
        );
    };
    check("engine::auto", "super::window::meter", "engine::window");
    check("engine::auto", "super::EngineError", "engine");
    check(
        "server::handlers::open",
        "crate::engine::create::Resumed",
        "engine::create",
    );
    check(
        "server::handlers::open",
        "crate::session::Session",
        "session",
    );
    check("engine", "super::x", "");
}

/// The checker sees a cycle through a sibling's alias and `super::`, and
/// none between a module and its parent.
#[test]
fn the_checker_finds_a_cycle_and_only_a_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "pub mod a;\npub mod b;\n");
    write("a/mod.rs", "pub mod inner;\nuse inner::Thing;\n");
    write("a/inner.rs", "use super::Shared; // a parent is no cycle\n");
    write("b.rs", "use crate::a;\npub fn f() { a::inner::g(); }\n");
    assert_eq!(find_cycle(&dependency_graph_in(dir.path())), None);
    write("a/inner.rs", "use crate::{b::f, x};\n");
    assert_eq!(
        find_cycle(&dependency_graph_in(dir.path())),
        Some(vec!["a::inner".into(), "b".into(), "a::inner".into()])
    );
}

#[test]
fn no_import_cycle_among_modules() {
    let graph = dependency_graph();
    assert!(graph.len() > 80, "{} modules read", graph.len());
    assert!(
        graph["server::handlers::append"].contains("engine::append"),
        "{:?}",
        graph["server::handlers::append"]
    );
    if let Some(cycle) = find_cycle(&graph) {
        panic!("import cycle: {}", cycle.join(" → "));
    }
}

#[test]
fn the_command_line_does_not_use_the_server() {
    for (module, uses) in dependency_graph() {
        if top(&module) == "cli" {
            let server: Vec<_> = uses.iter().filter(|u| top(u) == "server").collect();
            assert!(server.is_empty(), "{module} uses {server:?}");
        }
    }
}

/// Handlers are adapters: they call no other handler, and the wire types
/// they take come from `protocol` (which re-exports the core's).
#[test]
fn handlers_call_no_handler_and_take_wire_types_from_protocol() {
    let mut handlers = 0;
    for (module, uses) in dependency_graph() {
        if !module.starts_with("server::handlers::") {
            continue;
        }
        handlers += 1;
        for used in &uses {
            assert!(
                !used.starts_with("server::handlers"),
                "{module} calls into {used}"
            );
            assert!(
                !matches!(top(used), "conversation" | "config" | "tokens"),
                "{module} takes {used} types directly, not from protocol"
            );
        }
    }
    assert!(handlers >= 20, "{handlers} handlers");
}

/// The pure core: `conversation`, `tokens`, `compaction`, `session` and the
/// file ledger (`files` but its I/O edges `watch` and `disk`).
#[test]
fn the_core_uses_no_edge_and_no_runtime() {
    let core = |module: &str| {
        matches!(
            top(module),
            "conversation" | "tokens" | "compaction" | "session"
        ) || (top(module) == "files" && !matches!(module, "files::watch" | "files::disk"))
    };
    let edges = [
        "summarize",
        "store",
        "server",
        "protocol",
        "engine",
        "cli",
        "import",
        "transcript",
        "agents",
        "transport",
    ];
    let modules = modules();
    let mut checked = 0;
    for (module, uses) in dependency_graph() {
        if !core(&module) {
            continue;
        }
        checked += 1;
        let bad: Vec<_> = uses.iter().filter(|u| edges.contains(&top(u))).collect();
        assert!(bad.is_empty(), "core module {module} uses {bad:?}");
        let text = code(&modules[&module]);
        assert!(!text.contains("tokio"), "core module {module} uses tokio");
    }
    assert!(checked >= 15, "{checked} core modules");
}

/// Each function's length in lines, from its `fn` line to the closing
/// brace at the same indentation (the sources are rustfmt-formatted).
fn function_lengths(path: &Path) -> Vec<(usize, usize, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let signature = [
            "pub(crate) ",
            "pub(super) ",
            "pub ",
            "const ",
            "async ",
            "unsafe ",
        ]
        .iter()
        .fold(trimmed, |rest, prefix| {
            rest.strip_prefix(prefix).unwrap_or(rest)
        });
        // Declarations, and one-line functions (`fn f() {}`).
        let end = line.trim_end();
        if !signature.starts_with("fn ") || end.ends_with(';') || end.ends_with("{}") {
            continue;
        }
        // A body on the signature's line (`fn f() {}`) ends there.
        let opened = line.matches('{').count();
        if opened > 0 && opened == line.matches('}').count() {
            out.push((1, i + 1, trimmed.to_string()));
            continue;
        }
        // An empty body on the signature's line: one line, not up to the
        // next closing brace at this indent.
        if line.trim_end().ends_with("{}") {
            out.push((1, i + 1, trimmed.to_string()));
            continue;
        }
        let closing = format!("{indent}}}");
        if let Some(end) = (i..lines.len()).find(|&j| lines[j] == closing) {
            out.push((end - i + 1, i + 1, trimmed.to_string()));
        }
    }
    out
}

#[test]
fn functions_are_under_80_lines_and_session_under_700() {
    let mut longest = (0, String::new());
    for file in modules().values() {
        for (length, line, signature) in function_lengths(file) {
            let place = format!("{}:{line} {signature}", file.display());
            assert!(length < 80, "{length} lines: {place}");
            if length > longest.0 {
                longest = (length, place);
            }
        }
    }
    println!("longest function: {} lines, {}", longest.0, longest.1);
    let session = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/session.rs");
    let lines = std::fs::read_to_string(&session).unwrap().lines().count();
    println!("src/session.rs: {lines} lines");
    assert!(lines < 700, "src/session.rs has {lines} lines");
}

/// "Every wire type is in `protocol/`": each type the committed schemas
/// name is defined there or re-exported from there.
#[test]
fn every_wire_type_is_defined_or_re_exported_in_protocol() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let protocol: String = modules_in(&root.join("src"))
        .iter()
        .filter(|(module, _)| top(module) == "protocol")
        .map(|(_, file)| code(file))
        .collect();
    let declares = |name: &str| {
        let defined = ["pub struct ", "pub enum "]
            .iter()
            .any(|kind| protocol.contains(&format!("{kind}{name} ")));
        let re_exported = protocol.split("pub use ").skip(1).any(|rest| {
            let statement = &rest[..rest.find(';').unwrap_or(rest.len())];
            statement
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .any(|word| word == name)
        });
        defined || re_exported
    };
    let mut names = BTreeSet::new();
    for entry in std::fs::read_dir(root.join("schemas")).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().is_some_and(|f| f == "methods.json") {
            continue;
        }
        let schema: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        names.extend(schema["title"].as_str().map(str::to_string));
        if let Some(defs) = schema["$defs"].as_object() {
            names.extend(defs.keys().cloned());
        }
    }
    assert!(names.len() > 40, "{} wire types", names.len());
    let missing: Vec<_> = names.iter().filter(|n| !declares(n)).collect();
    assert!(
        missing.is_empty(),
        "wire types outside protocol/: {missing:?}"
    );
}

/// One compaction pipeline: the transcript commands run the engine's
/// `compact` (plan, write, settle), the server its `write` in a task and
/// `settle` on the state owner; none of them records or applies a
/// compaction itself.
#[test]
fn every_front_end_compacts_through_the_engine_pipeline() {
    for file in ["cli/compact.rs", "cli/replay.rs"] {
        let text = code(&src().join(file));
        assert!(text.contains("engine::compaction::compact("), "{file}");
        for own in [
            "apply_compaction",
            ".record(",
            "::conclude(",
            "JobSummarizer::new",
        ] {
            assert!(!text.contains(own), "{file} calls {own} itself");
        }
    }
    let server = code(&src().join("server/compactor.rs"));
    assert!(server.contains("engine::compaction::write("));
    for own in ["apply_compaction", ".record(", "::conclude(", ".prepare()"] {
        assert!(
            !server.contains(own),
            "server/compactor.rs calls {own} itself"
        );
    }
}

/// What compactd knows about one agent lives in that agent's module
/// (`src/agents/<agent>/`): no other code names an agent, its folders or
/// its variables; it goes through the registry. Comments may name them.
#[test]
fn agents_are_named_only_in_their_modules() {
    let names = [
        "claude_code",
        "ClaudeCode",
        "claude-code",
        "Claude Code",
        "CLAUDE_",
        ".claude",
        "Codex",
        "codex::",
        "\"codex\"",
        "CODEX_",
        ".codex",
        "pi::",
        "::Pi",
        "\"pi\"",
        "PI_CODING",
        ".pi/",
        "\".pi\"",
    ];
    assert!(names_it("use crate::agents::pi::x;", "pi::"));
    assert!(!names_it("use std::pin::Pin;", "::Pi") && !names_it("api::call()", "pi::"));
    let mut found = Vec::new();
    let mut checked = 0;
    for (module, file) in modules() {
        if module == "agents" || module.starts_with("agents::") {
            continue;
        }
        checked += 1;
        let text = code(&file);
        for (number, line) in text.lines().enumerate() {
            for name in names.iter().filter(|name| names_it(line, name)) {
                found.push(format!("{}:{}: {name}", file.display(), number + 1));
            }
        }
    }
    assert!(checked > 80, "{checked} modules");
    assert!(
        found.is_empty(),
        "agents named outside src/agents/:\n{}",
        found.join("\n")
    );
}

/// `line` names `name`: not inside a longer word (`::Pin` is no `::Pi`).
fn names_it(line: &str, name: &str) -> bool {
    let word = |c: char| c.is_alphanumeric();
    line.match_indices(name).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + name.len()..].chars().next();
        let glued_before = name.starts_with(word) && before.is_some_and(word);
        let glued_after = name.ends_with(word) && after.is_some_and(word);
        !glued_before && !glued_after
    })
}
