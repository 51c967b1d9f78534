//! The example engines' closed-sets guides are tables, one row per member: this checks that
//! every member of a Language's closed sets has its row. Each engine's `tests.rs` includes it
//! with `#[path = "../../common/closed_sets_table.rs"] mod closed_sets_table;`.

use pilotage::engine::LanguageSpec;

/// Assert that the closed-sets guide `text` has a row for every code and status of `spec`, for
/// every risk level with its hints, and for every entry kind with whether it is callable.
pub fn assert_closed_sets_listed(spec: &LanguageSpec, text: &str) {
    for code in &spec.sets.codes {
        assert!(text.contains(&format!("| `{code}` |")), "closed-sets guide lacks code {code}");
    }
    for s in &spec.sets.statuses {
        assert!(text.contains(&format!("| `{}` |", s.name)), "closed-sets guide lacks status {}", s.name);
    }
    for r in &spec.sets.risks {
        let h = r.hints;
        let row = format!(
            "| `{}` | `{{\"readOnly\": {}, \"destructive\": {}, \"openWorld\": {}}}` |",
            r.name, h.read_only, h.destructive, h.open_world
        );
        assert!(text.contains(&row), "closed-sets guide lacks risk row {row}");
    }
    for k in &spec.sets.kinds {
        let row = format!("| `{}` | {}", k.name, if k.callable { "yes" } else { "no" });
        assert!(text.contains(&row), "closed-sets guide lacks kind row {row}");
    }
}
