//! The runtime's layout, kept by tests: one room per concept, dependencies pointing one way
//! (model ← engine ← state ← ops ← server ← transport ← testkit; the side room `host` uses
//! `model` only and nothing uses it), no import cycle between files, and no function longer
//! than a page.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The rooms in dependency order: each may use only itself and the rooms before it.
const ROOMS: [&str; 7] = ["model", "engine", "state", "ops", "server", "transport", "testkit"];

/// Rooms beside the chain: each may use only itself and the rooms it names, and no other room
/// may use it (the Host half of Pilotage shares the wire model, never the server's machinery).
const SIDE_ROOMS: [(&str, &[&str]); 1] = [("host", &["model"])];

/// The longest function body allowed, in lines (signature to closing brace).
const MAX_FN_LINES: usize = 80;

struct Source {
    /// Module path, e.g. `["ops", "execute", "run"]` (`["ops"]` for `ops/mod.rs`).
    module: Vec<String>,
    text: String,
}

fn sources() -> BTreeMap<PathBuf, Source> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("src is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(&root).expect("under src");
                let mut module: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
                let last = module.pop().unwrap_or_default();
                if last != "mod.rs" && last != "lib.rs" {
                    module.push(last.trim_end_matches(".rs").to_owned());
                }
                let text = std::fs::read_to_string(&path).expect("a readable source file");
                out.insert(rel.to_path_buf(), Source { module, text });
            }
        }
    }
    out
}

/// Code lines only: whole-line comments dropped.
fn code(text: &str) -> String {
    text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// Every `crate::`/`super::`/`self::` path a file names, braces of `use` trees expanded, as
/// absolute module paths. `pub use` re-exports are a facade, not a dependency, and skipped.
fn paths(src: &Source) -> Vec<Vec<String>> {
    let text = code(&src.text);
    let mut found = Vec::new();
    let mut body = String::new();
    let mut at = 0;
    while let Some(i) = text[at..].find("use ").map(|i| i + at) {
        let before = &text[..i];
        let word_start = before.is_empty() || before.ends_with(char::is_whitespace);
        let Some(end) = text[i..].find(';').map(|e| e + i) else { break };
        if !word_start {
            body.push_str(&text[at..i + 4]);
            at = i + 4;
            continue;
        }
        let public = before.trim_end().ends_with("pub") || before.trim_end().ends_with(')');
        if !public {
            expand(&text[i + 4..end], "", &mut found);
        }
        body.push_str(&text[at..i]);
        at = end + 1;
    }
    body.push_str(&text[at..]);
    for (i, _) in body.match_indices("crate::").chain(body.match_indices("super::")) {
        let tail: String =
            body[i..].chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
        found.push(tail);
    }
    found.into_iter().filter_map(|p| absolute(&p, &src.module)).collect()
}

/// Expand a `use` tree (`a::{b, c::{d}}`) into its leaf paths.
fn expand(tree: &str, prefix: &str, out: &mut Vec<String>) {
    let tree = tree.trim();
    match tree.find('{') {
        None => out.push(format!("{prefix}{}", tree.split(" as ").next().unwrap_or(tree).trim())),
        Some(open) => {
            let head = &tree[..open];
            let close = tree.rfind('}').filter(|c| *c > open).unwrap_or(tree.len());
            let inner = &tree[open + 1..close];
            let mut depth = 0;
            let mut start = 0;
            for (i, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        expand(&inner[start..i], &format!("{prefix}{head}"), out);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            if !inner[start..].trim().is_empty() {
                expand(&inner[start..], &format!("{prefix}{head}"), out);
            }
        }
    }
}

fn absolute(path: &str, module: &[String]) -> Option<Vec<String>> {
    let mut segs = path.split("::").filter(|s| !s.is_empty());
    let mut base: Vec<String> = match segs.next()? {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        "super" => {
            let mut b = module.to_vec();
            b.pop();
            b
        }
        _ => return None,
    };
    for s in segs {
        if s == "super" {
            base.pop();
        } else if s != "self" {
            base.push(s.to_owned());
        }
    }
    Some(base)
}

/// The source file a module path lands in: its longest prefix that is a module file.
fn file_of(path: &[String], files: &BTreeMap<Vec<String>, PathBuf>) -> Option<PathBuf> {
    (1..=path.len()).rev().find_map(|n| files.get(&path[..n]).cloned())
}

fn rank(room: &str) -> Option<usize> {
    ROOMS.iter().position(|r| *r == room)
}

fn edges() -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let sources = sources();
    let files: BTreeMap<Vec<String>, PathBuf> =
        sources.iter().map(|(p, s)| (s.module.clone(), p.clone())).collect();
    let mut graph = BTreeMap::new();
    for (file, src) in &sources {
        let deps: BTreeSet<PathBuf> = paths(src)
            .iter()
            .filter_map(|p| file_of(p, &files))
            .filter(|target| target != file && !target.ends_with("lib.rs"))
            .collect();
        graph.insert(file.clone(), deps);
    }
    graph
}

fn room_of(file: &Path) -> String {
    file.iter().next().map(|c| c.to_string_lossy().trim_end_matches(".rs").to_owned()).unwrap_or_default()
}

#[test]
fn every_dependency_points_to_an_earlier_room() {
    let mut wrong = Vec::new();
    for (file, deps) in edges() {
        let Some(from) = rank(&room_of(&file)) else { continue };
        for dep in deps {
            if rank(&room_of(&dep)).is_some_and(|to| to > from) {
                wrong.push(format!("{} uses {}", file.display(), dep.display()));
            }
        }
    }
    assert_eq!(wrong, Vec::<String>::new(), "rooms depend only on earlier rooms: {ROOMS:?}");
}

#[test]
fn a_side_room_uses_only_the_rooms_it_names_and_nothing_uses_it() {
    let mut wrong = Vec::new();
    for (file, deps) in edges() {
        let from = room_of(&file);
        for dep in deps {
            let to = room_of(&dep);
            if to == from {
                continue;
            }
            let side_from = SIDE_ROOMS.iter().find(|(room, _)| *room == from);
            if side_from.is_some_and(|(_, allowed)| !allowed.contains(&to.as_str())) {
                wrong.push(format!("{} uses {}", file.display(), dep.display()));
            }
            if SIDE_ROOMS.iter().any(|(room, _)| *room == to) {
                wrong.push(format!("{} uses the side room {}", file.display(), dep.display()));
            }
        }
    }
    assert_eq!(wrong, Vec::<String>::new(), "side rooms: {SIDE_ROOMS:?}");
    // The check sees the host's edges: its loop uses the model's plan.
    let graph = edges();
    let run = graph.get(Path::new("host/run.rs")).expect("host/run.rs exists");
    assert!(run.contains(Path::new("model/plan.rs")), "{run:?}");
}

#[test]
fn no_file_imports_form_a_cycle() {
    let graph = edges();
    // Depth-first search with colours; report the first cycle found from each file.
    fn visit(
        n: &PathBuf,
        g: &BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        state: &mut BTreeMap<PathBuf, u8>,
        stack: &mut Vec<PathBuf>,
        cycles: &mut Vec<String>,
    ) {
        state.insert(n.clone(), 1);
        stack.push(n.clone());
        for m in g.get(n).into_iter().flatten() {
            match state.get(m).copied().unwrap_or(0) {
                0 => visit(m, g, state, stack, cycles),
                1 => {
                    let at = stack.iter().position(|s| s == m).unwrap_or(0);
                    let names: Vec<String> = stack[at..].iter().map(|p| p.display().to_string()).collect();
                    cycles.push(format!("{} -> {}", names.join(" -> "), m.display()));
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.clone(), 2);
    }
    let mut state = BTreeMap::new();
    let mut cycles = Vec::new();
    for n in graph.keys() {
        if state.get(n).copied().unwrap_or(0) == 0 {
            visit(n, &graph, &mut state, &mut Vec::new(), &mut cycles);
        }
    }
    assert_eq!(cycles, Vec::<String>::new());
}

#[test]
fn the_checks_see_a_known_dependency_and_a_known_cycle() {
    // The layout tests must be able to fail: a known edge is found, and a cycle is reported.
    let graph = edges();
    let run = graph.get(Path::new("ops/execute/run.rs")).expect("ops/execute/run.rs exists");
    assert!(run.contains(Path::new("ops/validate.rs")), "{run:?}");
    assert!(run.contains(Path::new("engine/mod.rs")), "{run:?}");
    let fake =
        Source { module: vec!["engine".into(), "run".into()], text: "use super::step::{A, b::C};".into() };
    assert_eq!(
        paths(&fake),
        vec![
            vec!["engine".to_owned(), "step".into(), "A".into()],
            vec!["engine".into(), "step".into(), "b".into(), "C".into()]
        ]
    );
}

/// `(file, first line, length)` of every function longer than `max` lines.
fn long_functions(max: usize) -> Vec<(PathBuf, usize, usize)> {
    let mut long = Vec::new();
    for (file, src) in sources() {
        if file.ends_with("tests.rs") || file.ends_with("layout_tests.rs") {
            continue;
        }
        let lines: Vec<&str> = src.text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let trimmed = line.trim_start();
            let indent = line.len() - trimmed.len();
            let is_fn = [
                "fn ",
                "pub fn ",
                "pub(crate) fn ",
                "pub(super) fn ",
                "async fn ",
                "pub async fn ",
                "pub(crate) async fn ",
            ]
            .iter()
            .any(|p| trimmed.starts_with(p));
            if !is_fn || line.trim_end().ends_with(';') {
                continue;
            }
            let close = format!("{}}}", " ".repeat(indent));
            if let Some(end) = lines[i..].iter().position(|l| l.trim_end() == close) {
                if end + 1 > max {
                    long.push((file.clone(), i + 1, end + 1));
                }
            }
        }
    }
    long
}

#[test]
fn no_function_is_longer_than_a_page() {
    assert_eq!(long_functions(MAX_FN_LINES), vec![], "functions of at most {MAX_FN_LINES} lines");
    // The measure itself sees functions: the longest one here is longer than 20 lines.
    assert!(!long_functions(20).is_empty());
}
