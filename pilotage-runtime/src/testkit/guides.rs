//! The guides of an engine's Language, as its tests read them: every fenced example in a guide
//! should validate, and the runnable ones run.

use crate::engine::Engine;

/// Every guide the Language of `engine` serves (embedded at compile time), as `(id, body)`.
pub fn guides(engine: &dyn Engine) -> Vec<(&'static str, &'static str)> {
    engine.language_spec().guides.iter().map(|g| (g.id, g.body)).collect()
}

/// The body of the guide `id`.
///
/// # Panics
/// When the Language has no such guide.
pub fn guide(engine: &dyn Engine, id: &str) -> &'static str {
    let all = guides(engine);
    let ids: Vec<&str> = all.iter().map(|(g, _)| *g).collect();
    all.iter().find(|(g, _)| *g == id).map(|(_, b)| *b).unwrap_or_else(|| panic!("no guide {id}: {ids:?}"))
}

/// The fenced code blocks of `lang` (```` ```json ````, ```` ```sql ````, ...) in `text`, each
/// with its trailing newline.
///
/// ```
/// use pilotage_runtime::testkit::fenced_blocks;
/// let text = "Intro\n```json\n{\"a\": 1}\n```\n```sql\nSELECT 1\n```\n";
/// assert_eq!(fenced_blocks(text, "json"), ["{\"a\": 1}\n"]);
/// assert_eq!(fenced_blocks(text, "sql"), ["SELECT 1\n"]);
/// ```
pub fn fenced_blocks(text: &str, lang: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    let open = format!("```{lang}");
    for line in text.lines() {
        match (&mut current, line.trim()) {
            (None, l) if l == open => current = Some(String::new()),
            (Some(_), "```") => out.extend(current.take()),
            (Some(buf), _) => {
                buf.push_str(line);
                buf.push('\n');
            }
            _ => {}
        }
    }
    out
}
