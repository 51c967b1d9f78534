//! Guide folders: front matter parsing and the folder-level rules.
//!
//! Every `*.md` file of the folder (sorted by file name) is one guide:
//!
//! ```text
//! ---
//! id: core
//! title: Workflow core guide
//! level: core            # core | reference | examples
//! topics: [steps, calls, closed-sets]
//! ---
//! # body markdown...
//! ```
//!
//! Front matter is simple `key: value` lines (blank lines and `#` comments ignored, values may
//! be quoted, a `#` after whitespace starts a comment). `topics` is a `[a, b]` flow list or a
//! block list of `- item` lines. The body is the text after the closing `---` line, leading
//! newlines trimmed.
//!
//! Whether the closed-sets guide names every member of the declared closed sets needs the
//! enums' variants, which this macro cannot see: `language::expand` emits that check as
//! constants the compiler evaluates (`pilotage_runtime::model::closed_sets::GuideSet`).

use std::path::{Path, PathBuf};

use crate::errors::{closest, list, unknown};

/// The guide levels.
pub const LEVELS: [&str; 3] = ["core", "reference", "examples"];
const KEYS: [&str; 4] = ["id", "title", "level", "topics"];
/// The topic of the closed-sets guide.
pub const CLOSED_SETS: &str = "closed-sets";

/// One parsed guide file.
#[derive(Debug)]
pub struct Guide {
    /// Absolute path (for `include_str!`).
    pub path: PathBuf,
    /// Id.
    pub id: String,
    /// Title.
    pub title: String,
    /// `core`, `reference` or `examples`.
    pub level: &'static str,
    /// Topics.
    pub topics: Vec<String>,
    /// Body after the front matter.
    pub body: String,
    /// The file as the user's folder path shows it (`guides/closed-sets.md`), for messages.
    pub file: String,
    /// Line of the `id:` key, for messages.
    id_line: usize,
    /// Line of the `level:` key, for messages.
    level_line: usize,
}

/// Load every guide of `dir` (`shown` is the folder as the user wrote it, for messages) and
/// apply the folder rules. Every problem is returned, each naming its file and line.
pub fn load(dir: &Path, shown: &str) -> Result<Vec<Guide>, Vec<String>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            return Err(vec![format!(
                "cannot read the guide folder `{shown}` ({}): {e}; the path is relative to the crate root (CARGO_MANIFEST_DIR)",
                dir.display()
            )])
        }
    };
    let mut files: Vec<(String, PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "md"))
        .map(|p| (p.file_name().unwrap_or_default().to_string_lossy().into_owned(), p))
        .collect();
    files.sort();
    let mut problems = Vec::new();
    let mut guides = Vec::new();
    for (file, path) in files {
        let shown_file = format!("{shown}/{file}");
        match std::fs::read_to_string(&path) {
            Ok(text) => match parse(&shown_file, &text) {
                Ok(mut guide) => {
                    guide.path = path.canonicalize().unwrap_or(path);
                    guides.push(guide);
                }
                Err(mut e) => problems.append(&mut e),
            },
            Err(e) => problems.push(format!("cannot read guide `{shown_file}`: {e}")),
        }
    }
    folder_rules(&guides, shown, &mut problems);
    if problems.is_empty() {
        Ok(guides)
    } else {
        Err(problems)
    }
}

fn folder_rules(guides: &[Guide], shown: &str, problems: &mut Vec<String>) {
    for (i, g) in guides.iter().enumerate() {
        if let Some(first) = guides[..i].iter().find(|o| o.id == g.id) {
            problems.push(format!(
                "{}:{}: duplicate guide id `{}` (already used by {}:{}): give each guide its own id",
                g.file, g.id_line, g.id, first.file, first.id_line
            ));
        }
    }
    if !problems.is_empty() && guides.is_empty() {
        return;
    }
    if !guides.iter().any(|g| g.level == "core") {
        problems.push(format!(
            "the guide folder `{shown}` has no `core` guide: add a guide with `level: core` (the minimum instruction set)"
        ));
    }
    let closed: Vec<&Guide> = guides.iter().filter(|g| g.topics.iter().any(|t| t == CLOSED_SETS)).collect();
    let near = guides.iter().find_map(|g| {
        g.topics
            .iter()
            .find(|t| closest(t, &[CLOSED_SETS]).is_some())
            .map(|t| format!(" ({} has the topic `{t}`: did you mean `closed-sets`?)", g.file))
    });
    match closed.as_slice() {
        [] => problems.push(format!(
            "no guide in `{shown}` has the topic `closed-sets`{}: add `closed-sets` to the topics of one `reference` guide that lists the Language's codes, risk levels, statuses and kinds",
            near.unwrap_or_default()
        )),
        [one] => {
            if one.level != "reference" {
                problems.push(format!(
                    "{}:{}: the `closed-sets` guide must have `level: reference`, not `{}`",
                    one.file, one.level_line, one.level
                ));
            }
        }
        several => problems.push(format!(
            "exactly one guide may have the topic `closed-sets`, but {} do: {}",
            several.len(),
            several.iter().map(|g| g.file.as_str()).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// Parse one guide file (`file` names it in messages).
fn parse(file: &str, text: &str) -> Result<Guide, Vec<String>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = Vec::new();
    let mut offset = 0;
    for raw in text.split_inclusive('\n') {
        lines.push((offset, raw.trim_end_matches(['\n', '\r'])));
        offset += raw.len();
    }
    if lines.first().map(|(_, l)| l.trim_end()) != Some("---") {
        return Err(vec![format!(
            "{file}:1: a guide starts with front matter: a `---` line, `id:`, `title:`, `level:`, `topics:` lines, and a closing `---` line"
        )]);
    }
    let Some(close) = lines.iter().skip(1).position(|(_, l)| l.trim_end() == "---").map(|i| i + 1) else {
        return Err(vec![format!(
            "{file}:1: the front matter opened here is never closed: add a `---` line after its last key"
        )]);
    };
    let mut problems = Vec::new();
    let mut id: Option<(String, usize)> = None;
    let mut title: Option<(String, usize)> = None;
    let mut level: Option<(&'static str, usize)> = None;
    let mut topics: Option<(Vec<String>, usize)> = None;
    // Keys that appeared (even with a bad value) or that a misspelling was taken for.
    let mut mentioned: Vec<&str> = Vec::new();
    let mut i = 1;
    while i < close {
        let number = i + 1;
        let line = lines[i].1;
        i += 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            problems.push(format!("{file}:{number}: expected `key: value`, found `{trimmed}`"));
            continue;
        };
        let key = key.trim();
        let value = strip_comment(value.trim());
        let seen = match key {
            "id" => id.is_some(),
            "title" => title.is_some(),
            "level" => level.is_some(),
            "topics" => topics.is_some(),
            _ => {
                mentioned.extend(closest(key, &KEYS));
                problems.push(format!("{file}:{number}: {}", unknown("front matter key", key, &KEYS)));
                continue;
            }
        };
        mentioned.extend(KEYS.iter().find(|k| **k == key));
        if seen {
            problems.push(format!("{file}:{number}: `{key}` is given twice: keep one"));
            continue;
        }
        match key {
            "id" | "title" => {
                let v = unquote(value);
                if v.is_empty() {
                    problems.push(format!("{file}:{number}: `{key}` is empty: give the guide a {key}"));
                } else if key == "id" && v.contains(char::is_whitespace) {
                    problems
                        .push(format!("{file}:{number}: the id `{v}` contains whitespace: use `-` or `_`"));
                } else if key == "id" {
                    id = Some((v.to_owned(), number));
                } else {
                    title = Some((v.to_owned(), number));
                }
            }
            "level" => {
                let v = unquote(value);
                match LEVELS.iter().find(|l| **l == v) {
                    Some(l) => level = Some((l, number)),
                    None => problems.push(format!(
                        "{file}:{number}: {}",
                        match closest(v, &LEVELS) {
                            Some(best) => format!(
                                "unknown level `{v}`: did you mean `{best}`? (levels: {})",
                                list(&LEVELS)
                            ),
                            None => format!("unknown level `{v}`; the levels are {}", list(&LEVELS)),
                        }
                    )),
                }
            }
            _ => {
                if value.is_empty() {
                    // A block list: `- item` lines.
                    let mut items = Vec::new();
                    while i < close {
                        let item = lines[i].1.trim();
                        if let Some(item) = item.strip_prefix('-') {
                            items.push(unquote(strip_comment(item.trim())).to_owned());
                            i += 1;
                        } else if item.is_empty() {
                            i += 1;
                        } else {
                            break;
                        }
                    }
                    topics = Some((items, number));
                } else if let Some(inner) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
                    let items: Vec<String> = inner
                        .split(',')
                        .map(|t| unquote(t.trim()).to_owned())
                        .filter(|t| !t.is_empty())
                        .collect();
                    topics = Some((items, number));
                } else {
                    problems.push(format!(
                        "{file}:{number}: `topics` must be a list such as `[steps, closed-sets]`, found `{value}`"
                    ));
                }
            }
        }
    }
    for (key, present) in [("id", id.is_some()), ("title", title.is_some()), ("level", level.is_some())] {
        if !present && !mentioned.contains(&key) {
            problems.push(format!("{file}:1: the front matter has no `{key}:` line: add one"));
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let (id, id_line) = id.unwrap_or_default();
    let (level, level_line) = level.unwrap_or(("core", 0));
    let body_start = lines.get(close + 1).map_or(text.len(), |(o, _)| *o);
    Ok(Guide {
        path: PathBuf::new(),
        id,
        title: title.unwrap_or_default().0,
        level,
        topics: topics.unwrap_or_default().0,
        body: text[body_start..].trim_start_matches(['\r', '\n']).to_owned(),
        file: file.to_owned(),
        id_line,
        level_line,
    })
}

/// Drop a trailing `# comment` (a `#` preceded by whitespace, outside quotes).
fn strip_comment(value: &str) -> &str {
    if value.starts_with('"') || value.starts_with('\'') {
        let quote = &value[..1];
        if let Some(end) = value[1..].find(quote) {
            return &value[..end + 2];
        }
        return value;
    }
    let bytes = value.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'#' && i > 0 && bytes[i - 1].is_ascii_whitespace() {
            return value[..i].trim_end();
        }
    }
    value
}

fn unquote(value: &str) -> &str {
    for q in ['"', '\''] {
        if value.len() >= 2 && value.starts_with(q) && value.ends_with(q) {
            return &value[1..value.len() - 1];
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter() {
        let g = parse(
            "g/core.md",
            "---\nid: core\ntitle: \"Core # one\"\nlevel: core   # the minimum\ntopics: [steps, 'calls', closed-sets]\n---\n\n# Body\ntext\n",
        )
        .unwrap();
        assert_eq!(g.id, "core");
        assert_eq!(g.title, "Core # one");
        assert_eq!(g.level, "core");
        assert_eq!(g.topics, ["steps", "calls", "closed-sets"]);
        assert_eq!(g.body, "# Body\ntext\n");
    }

    #[test]
    fn block_topics_and_crlf() {
        let g = parse(
            "x.md",
            "---\r\nid: x\r\ntitle: X\r\nlevel: reference\r\ntopics:\r\n  - a\r\n  - b\r\n---\r\nbody",
        )
        .unwrap();
        assert_eq!(g.topics, ["a", "b"]);
        assert_eq!(g.body, "body");
    }

    #[test]
    fn problems() {
        let e = parse("x.md", "---\nid: x\nlevl: core\nlevel: cor\n---\n").unwrap_err();
        assert!(e[0].contains("x.md:3") && e[0].contains("did you mean `level`"), "{e:?}");
        assert!(e[1].contains("x.md:4") && e[1].contains("did you mean `core`"), "{e:?}");
        assert!(e[2].contains("no `title:`"), "{e:?}");
        assert!(parse("x.md", "# no front matter").is_err());
        assert!(parse("x.md", "---\nid: x\n").unwrap_err()[0].contains("never closed"));
    }

    #[test]
    fn folder() {
        let core =
            parse("g/a.md", "---\nid: a\ntitle: A\nlevel: core\ntopics: [closed_sets]\n---\n").unwrap();
        let twin = parse("g/b.md", "---\nid: a\ntitle: B\nlevel: examples\n---\n").unwrap();
        let mut problems = Vec::new();
        folder_rules(&[core, twin], "g", &mut problems);
        assert!(problems[0].starts_with("g/b.md:2: duplicate guide id `a`"), "{problems:?}");
        assert!(problems[1].contains("did you mean `closed-sets`"), "{problems:?}");
        let sets =
            parse("g/s.md", "---\nid: s\ntitle: S\nlevel: examples\ntopics: [closed-sets]\n---\n").unwrap();
        let mut problems = Vec::new();
        folder_rules(&[sets], "g", &mut problems);
        assert!(problems[0].contains("no `core` guide"), "{problems:?}");
        assert!(problems[1].contains("must have `level: reference`"), "{problems:?}");
    }
}
