//! The shape of `src/`, checked: no import cycle among its modules, the
//! command line apart from the server, the core free of I/O layers, and
//! functions and `session/mod.rs` kept small. It reads the sources as text:
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
/// `a::c::e`); an item renamed with `as` keeps its path.
fn expand_use(tree: &str) -> Vec<String> {
    expand_use_named(tree)
        .into_iter()
        .map(|(path, _)| path)
        .collect()
}

/// `expand_use`, each path with the name it is known by here (`x` for
/// `a::b as x`, `*` for a glob).
fn expand_use_named(tree: &str) -> Vec<(String, String)> {
    let tree = tree.replace(" as ", "@");
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    let Some(open) = tree.find('{') else {
        let (path, alias) = match tree.split_once('@') {
            Some((path, alias)) => (path.to_string(), alias.to_string()),
            None => (
                tree.clone(),
                tree.rsplit("::").next().unwrap_or("").to_string(),
            ),
        };
        return vec![(path, alias)];
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
        .flat_map(|item| expand_use_named(&item.replace('@', " as ")))
        .map(|(path, alias)| {
            let path = format!("{prefix}{path}");
            // `a::{self}` is `a`, known as `a`.
            match path.strip_suffix("::self") {
                Some(module) => (
                    module.to_string(),
                    module.rsplit("::").next().unwrap_or("").to_string(),
                ),
                None => (path, alias),
            }
        })
        .collect()
}

/// What one file tells the graph: the paths its code uses (private `use`s
/// and paths written out), and the names it re-exports (`pub use`), each
/// as a path from the crate root (`server::clients::Clients`).
#[derive(Debug, Default)]
struct Unit {
    uses: Vec<String>,
    reexports: Vec<(String, String)>,
    /// Where a name it declares lives: its `struct`s, `enum`s, `fn`s, …
    code: String,
}

/// The code without its unit-test module (`#[cfg(test)] mod tests { … }`,
/// last in a file), whose `super::` is the file's own module.
fn without_tests(code: &str) -> &str {
    match code.find("#[cfg(test)]\nmod tests {") {
        Some(at) => &code[..at],
        None => code,
    }
}

/// The submodules a file declares (`mod x;`, `pub mod x;`).
fn declared_children(code: &str) -> Vec<String> {
    code.lines()
        .filter_map(|line| {
            let line = line.trim();
            let line = ["pub(crate) ", "pub(super) ", "pub "]
                .iter()
                .fold(line, |rest, prefix| {
                    rest.strip_prefix(prefix).unwrap_or(rest)
                });
            let name = line.strip_prefix("mod ")?.strip_suffix(';')?;
            Some(name.to_string())
        })
        .collect()
}

/// A path as written in `module` (rooted at `crate`, `self`, `super` or a
/// name in scope) as a path from the crate root; `None` for other crates.
fn absolute(module: &str, path: &str, scope: &BTreeMap<String, String>) -> Option<String> {
    let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let mut base: Vec<String> = module
        .split("::")
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let mut rest = &segments[..];
    match *rest.first()? {
        "crate" => {
            base.clear();
            rest = &rest[1..];
        }
        "self" => rest = &rest[1..],
        "super" => {
            while rest.first() == Some(&"super") {
                base.pop();
                rest = &rest[1..];
            }
        }
        first => {
            let known = scope.get(first)?;
            base = known
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            rest = &rest[1..];
        }
    }
    Some(
        base.iter()
            .map(String::as_str)
            .chain(rest.iter().copied())
            .collect::<Vec<_>>()
            .join("::"),
    )
}

/// The paths a file's code names, from the crate root, and its re-exports.
fn read_unit(module: &str, code: &str) -> Unit {
    let code = without_tests(code);
    let mut scope: BTreeMap<String, String> = BTreeMap::new();
    for child in declared_children(code) {
        let path = if module.is_empty() {
            child.clone()
        } else {
            format!("{module}::{child}")
        };
        scope.insert(child, path);
    }
    // `use` statements, in order: a later one may start from an earlier one's name.
    let mut statements: Vec<(bool, String)> = Vec::new();
    let mut statement: Option<(bool, String)> = None;
    for line in code.lines() {
        let trimmed = line.trim_start();
        let public = ["pub(crate) use ", "pub(super) use ", "pub use "]
            .iter()
            .find(|p| trimmed.starts_with(*p));
        if statement.is_none() {
            if let Some(prefix) = public {
                statement = Some((true, trimmed[prefix.len()..].to_string()));
            } else if let Some(rest) = trimmed.strip_prefix("use ") {
                statement = Some((false, rest.to_string()));
            }
        } else if let Some((_, text)) = &mut statement {
            text.push(' ');
            text.push_str(trimmed);
        }
        if let Some((public, text)) = &statement {
            if let Some(end) = text.find(';') {
                statements.push((*public, text[..end].to_string()));
                statement = None;
            }
        }
    }
    let mut unit = Unit {
        code: code.to_string(),
        ..Unit::default()
    };
    for (public, tree) in statements {
        for (path, name) in expand_use_named(&tree) {
            let Some(full) = absolute(module, &path, &scope) else {
                continue;
            };
            if public {
                unit.reexports.push((name.clone(), full.clone()));
            } else {
                unit.uses.push(full.clone());
            }
            if name != "*" {
                scope.insert(name, full);
            }
        }
    }
    // Paths written out in the code: from a root, or from a name in scope.
    let bytes = code.as_bytes();
    let body: String = code
        .lines()
        .filter(|line| {
            let t = line.trim_start();
            !t.starts_with("use ")
                && !t.starts_with("pub use ")
                && !t.starts_with("pub(crate) use ")
        })
        .collect::<Vec<_>>()
        .join("\n");
    let _ = bytes;
    let body_bytes = body.as_bytes();
    let roots: Vec<String> = ["crate", "super", "self"]
        .into_iter()
        .map(str::to_string)
        .chain(scope.keys().cloned())
        .collect();
    for root in roots {
        for (at, _) in body.match_indices(&format!("{root}::")) {
            let before = at.checked_sub(1).map(|i| body_bytes[i] as char);
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let path: String = body[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            if let Some(full) = absolute(module, &path, &scope) {
                unit.uses.push(full);
            }
        }
    }
    // A name in scope used bare (`Clients::new`, `Server { … }`) is a use
    // of where it lives; the `use` statement above already counted it.
    unit
}

/// Whether a file's code declares `name` (a type, function, constant, …).
fn declares(code: &str, name: &str) -> bool {
    [
        "struct ", "enum ", "fn ", "trait ", "type ", "const ", "static ", "mod ", "union ",
    ]
    .iter()
    .any(|kind| {
        code.match_indices(&format!("{kind}{name}")).any(|(at, m)| {
            let after = code[at + m.len()..].chars().next();
            !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    })
}

/// The module a path from the crate root names: the longest prefix that
/// is a module, then through its re-exports to where the item lives.
fn resolve_in(
    path: &str,
    modules: &BTreeMap<String, PathBuf>,
    units: &BTreeMap<String, Unit>,
    depth: usize,
) -> String {
    let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let mut base: Vec<&str> = Vec::new();
    let mut next = 0;
    while let Some(segment) = segments.get(next) {
        let candidate = base
            .iter()
            .chain(std::iter::once(segment))
            .copied()
            .collect::<Vec<_>>()
            .join("::");
        if !modules.contains_key(&candidate) {
            break;
        }
        base.push(segment);
        next += 1;
    }
    let module = base.join("::");
    let (Some(name), Some(unit)) = (segments.get(next), units.get(&module)) else {
        return module;
    };
    if depth > 8 || declares(&unit.code, name) {
        return module;
    }
    let rest = segments[next + 1..].join("::");
    let join = |target: &str| {
        if rest.is_empty() {
            target.to_string()
        } else {
            format!("{target}::{rest}")
        }
    };
    if let Some((_, target)) = unit.reexports.iter().find(|(n, _)| n == name) {
        return resolve_in(&join(target), modules, units, depth + 1);
    }
    for (_, glob) in unit.reexports.iter().filter(|(n, _)| n == "*") {
        let glob = glob.strip_suffix("::*").unwrap_or(glob);
        let target = resolve_in(glob, modules, units, depth + 1);
        let through = units
            .get(&target)
            .is_some_and(|u| declares(&u.code, name) || u.reexports.iter().any(|(n, _)| n == name));
        if through {
            return resolve_in(
                &join(&format!("{target}::{name}")),
                modules,
                units,
                depth + 1,
            );
        }
    }
    module
}

/// The module a path written in `from` names (for the resolver's test).
fn resolve(from: &str, path: &str, modules: &BTreeMap<String, PathBuf>) -> Option<String> {
    let units = units_of(modules);
    let scope = BTreeMap::new();
    let full = absolute(from, path, &scope)?;
    Some(resolve_in(&full, modules, &units, 0))
}

fn units_of(modules: &BTreeMap<String, PathBuf>) -> BTreeMap<String, Unit> {
    modules
        .iter()
        .map(|(module, file)| (module.clone(), read_unit(module, &code(file))))
        .collect()
}

/// The modules each module uses, parents and children included: a child
/// calling into its parent while the parent calls the child is a cycle
/// like any other. Re-exports (`pub use`) are a module's namespace, not a
/// use: a path through one resolves to where the item lives.
fn dependency_graph() -> BTreeMap<String, BTreeSet<String>> {
    dependency_graph_in(&src())
}

fn dependency_graph_in(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let modules = modules_in(src);
    let units = units_of(&modules);
    let mut graph = BTreeMap::new();
    for (module, unit) in &units {
        // `use crate::engine;` only names a module; the paths through it
        // are the uses.
        let uses: BTreeSet<String> = unit
            .uses
            .iter()
            .filter(|path| !modules.contains_key(*path))
            .map(|path| resolve_in(path, &modules, &units, 0))
            .filter(|used| used != module)
            .collect();
        graph.insert(module.clone(), uses);
    }
    graph
}

/// Every set of modules that use each other (strongly connected, more
/// than one module), each sorted.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Kosaraju: finish order on the graph, then components on its reverse.
    fn finish(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        seen: &mut BTreeSet<String>,
        order: &mut Vec<String>,
    ) {
        if !seen.insert(node.to_string()) {
            return;
        }
        for next in graph.get(node).into_iter().flatten() {
            finish(next, graph, seen, order);
        }
        order.push(node.to_string());
    }
    let mut seen = BTreeSet::new();
    let mut order = Vec::new();
    for node in graph.keys() {
        finish(node, graph, &mut seen, &mut order);
    }
    let mut reverse: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, tos) in graph {
        for to in tos {
            reverse.entry(to.clone()).or_default().insert(from.clone());
        }
    }
    let mut assigned = BTreeSet::new();
    let mut out = Vec::new();
    for node in order.iter().rev() {
        let mut component = Vec::new();
        finish(node, &reverse, &mut assigned, &mut component);
        if component.len() > 1 {
            component.sort();
            out.push(component);
        }
    }
    out
}

fn top(module: &str) -> &str {
    module.split("::").next().unwrap_or("")
}

#[test]
fn the_resolver_reads_use_trees_and_paths() {
    assert_eq!(
        expand_use("super::{create, EngineError, x::{a, b as c}}"),
        [
            "super::create",
            "super::EngineError",
            "super::x::a",
            "super::x::b"
        ]
    );
    assert_eq!(
        expand_use_named("a::{self, b as c}"),
        [
            ("a".to_string(), "a".to_string()),
            ("a::b".into(), "c".into())
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
    check("engine::auto", "super::meter::meter", "engine::meter");
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
    // Through a re-export to where the item lives.
    check(
        "cli::stats",
        "crate::protocol::Format",
        "transcript::format",
    );
    check(
        "server",
        "crate::agents::AutoCompactPoint",
        "agents::limits",
    );
}

/// The checker sees a cycle through a sibling's alias, and one between a
/// module and its parent when each calls the other; a re-export is no use.
#[test]
fn the_checker_finds_a_cycle_and_only_a_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "pub mod a;\npub mod b;\n");
    write(
        "a/mod.rs",
        "pub mod inner;\npub mod shared;\npub use shared::Shared;\nuse inner::Thing;\n",
    );
    write("a/shared.rs", "pub struct Shared;\n");
    write(
        "a/inner.rs",
        "use super::Shared; // where it lives: a::shared\npub struct Thing;\n",
    );
    write("b.rs", "use crate::a;\npub fn f() { a::inner::g(); }\n");
    let graph = dependency_graph_in(dir.path());
    assert_eq!(cycles(&graph), Vec::<Vec<String>>::new(), "{graph:?}");
    assert!(graph["a::inner"].contains("a::shared"), "{graph:?}");
    // The parent defines what its child uses, and calls the child.
    write(
        "a/mod.rs",
        "pub mod inner;\npub struct Shared;\nuse inner::Thing;\n",
    );
    assert_eq!(
        cycles(&dependency_graph_in(dir.path())),
        [["a", "a::inner"]]
    );
    write(
        "a/mod.rs",
        "pub mod inner;\npub mod shared;\npub use shared::Shared;\nuse inner::Thing;\n",
    );
    write("a/inner.rs", "use crate::{b::f, x};\n");
    assert_eq!(
        cycles(&dependency_graph_in(dir.path())),
        [["a::inner", "b"]]
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
    let found = cycles(&graph);
    // Each cycle as the uses inside it.
    let shown: Vec<String> = found
        .iter()
        .map(|members| {
            let inside: Vec<String> = members
                .iter()
                .flat_map(|from| {
                    graph[from]
                        .iter()
                        .filter(|to| members.contains(to))
                        .map(move |to| format!("  {from} → {to}"))
                })
                .collect();
            format!("{}:\n{}", members.join(", "), inside.join("\n"))
        })
        .collect();
    assert!(
        found.is_empty(),
        "{} import cycles:\n{}",
        found.len(),
        shown.join("\n")
    );
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
    let units = units_of(&modules());
    for (module, uses) in dependency_graph() {
        if !module.starts_with("server::handlers::") {
            continue;
        }
        handlers += 1;
        for used in &uses {
            assert!(
                !used.starts_with("server::handlers::"),
                "{module} calls into {used}"
            );
        }
        // As written: `protocol` re-exports the core's wire types.
        for path in &units[&module].uses {
            assert!(
                !matches!(top(path), "conversation" | "config" | "tokens"),
                "{module} takes {path} directly, not from protocol"
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
    let session = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/session/mod.rs");
    let lines = std::fs::read_to_string(&session).unwrap().lines().count();
    println!("src/session/mod.rs: {lines} lines");
    assert!(lines < 700, "src/session/mod.rs has {lines} lines");
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
    let server: String = [
        "server/compactions.rs",
        "server/state.rs",
        "server/following.rs",
    ]
    .iter()
    .map(|file| code(&src().join(file)))
    .collect();
    assert!(server.contains("engine::compaction::write("));
    assert!(server.contains("engine::compaction::settle("));
    for own in ["apply_compaction", ".record(", "::conclude(", ".prepare()"] {
        assert!(!server.contains(own), "the server calls {own} itself");
    }
}

/// The server's state has owners with their own state (`sessions`,
/// `compactions`, `following`, `file_tracking`, tied together in `state`);
/// they and the handlers say what to send (`effects`) and never hold the
/// dispatcher: only its own methods take it, and no owner reaches the
/// clients.
#[test]
fn only_the_dispatcher_holds_itself_and_owners_reach_no_client() {
    let modules = modules();
    let graph = dependency_graph();
    let mut checked = 0;
    for (module, file) in &modules {
        if top(module) != "server" || module == "server::dispatcher" {
            continue;
        }
        checked += 1;
        let text = code(file);
        for held in ["&mut Dispatcher", "&mut Server", "&Dispatcher", "&Server"] {
            assert!(!text.contains(held), "{module} takes {held}");
        }
        let owner = matches!(
            module.as_str(),
            "server::state"
                | "server::sessions"
                | "server::compactions"
                | "server::following"
                | "server::file_tracking"
                | "server::importer"
        );
        for used in &graph[module] {
            assert!(
                used != "server::dispatcher" || module == "server::shared",
                "{module} uses the dispatcher"
            );
            assert!(
                !(owner && used == "server::clients"),
                "{module} reaches the clients"
            );
        }
    }
    assert!(checked > 40, "{checked} server modules");
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

/// `docs/ARCHITECTURE.md`'s code map names every file of `src/`: by its
/// path, or in the row of a folder it is in (by its file name, `mod.rs` by
/// the folder itself, every file by `*.rs`).
#[test]
fn the_code_map_names_every_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).unwrap();
    // Each code-map row's first cell (one path, or a folder).
    let rows: Vec<(String, &str)> = doc
        .lines()
        .filter(|line| line.starts_with("| `src/"))
        .map(|line| {
            let cell = line[3..].split('`').next().unwrap_or("").to_string();
            (cell, line)
        })
        .collect();
    assert!(rows.len() > 30, "{} rows", rows.len());
    let named = |file: &str| {
        let name = file.rsplit('/').next().unwrap();
        let folder = &file[..file.len() - name.len()];
        doc.contains(&format!("`{file}`"))
            || rows.iter().any(|(cell, line)| {
                // The folder the row is about (`src/a/` of `src/a/b.rs`).
                let cell_folder = &cell[..cell.rfind('/').map_or(0, |i| i + 1)];
                folder.starts_with(cell_folder)
                    && (cell.ends_with("*.rs")
                        || line.contains(&format!("`{name}`"))
                        || (name == "mod.rs" && folder == cell))
            })
            || (name == "mod.rs" && doc.contains(&format!("`{folder}`")))
    };
    let mut missing = Vec::new();
    for file in modules().values() {
        let relative = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if !named(&relative) {
            missing.push(relative);
        }
    }
    missing.sort();
    assert!(
        missing.is_empty(),
        "not in docs/ARCHITECTURE.md's code map: {missing:?}"
    );
    assert!(!named("src/nowhere/invented.rs"));
}
