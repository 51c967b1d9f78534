//! Narration on the trace fetch door (`trace_fetch.narrate`): deterministic prose built from
//! the recorded facts, beside them. It is interpretation, never instead of the envelope.

use pilotage::model::trace::TraceFetchResponse;

/// The prose for a fetched run, answering `question` when one is given.
pub fn narrate(run: &TraceFetchResponse, question: Option<&str>) -> String {
    let steps = &run.trace.steps;
    let calls: Vec<&str> = steps.iter().filter_map(|s| s.calls.as_deref()).collect();
    let is_loop_decision = |took: &str| took == "continue" || took == "exit";
    let decided = |s: &&pilotage::model::trace::TraceStep, looped: bool| {
        s.decisions.as_ref().is_some_and(|d| d.iter().any(|x| is_loop_decision(&x.took) == looped))
    };
    let branches = steps.iter().filter(|s| decided(s, false)).count();
    let loops = steps.iter().filter(|s| decided(s, true)).count();
    let ended = match run.outcome.error() {
        None => "succeeded".to_owned(),
        Some(e) => format!("ended with status {} ({e})", run.outcome.status()),
    };
    let failed = steps.iter().find(|s| !s.outcome.ok());
    let mut text = format!(
        "Run {} {ended}. It recorded {} trace entr{}: {} call{}{}, {} branch decision{} and {} loop activation{}.",
        run.run_id,
        steps.len(),
        if steps.len() == 1 { "y" } else { "ies" },
        calls.len(),
        if calls.len() == 1 { "" } else { "s" },
        if calls.is_empty() { String::new() } else { format!(" ({})", calls.join(", ")) },
        branches,
        if branches == 1 { "" } else { "s" },
        loops,
        if loops == 1 { "" } else { "s" },
    );
    if let Some(q) = question {
        let q_lower = q.to_lowercase();
        let answer = if q_lower.contains("fail") || q_lower.contains("why") || q_lower.contains("wrong") {
            match failed {
                Some(s) => format!(
                    "The first failing entry is '{}' with status {}: {}.",
                    s.id,
                    s.outcome.status(),
                    s.outcome.error().unwrap_or_default()
                ),
                None if run.outcome.ok() => "Nothing failed: every recorded entry succeeded.".to_owned(),
                None => format!("No entry failed; the run itself ended {}.", run.outcome.status()),
            }
        } else if q_lower.contains("call") || q_lower.contains("action") || q_lower.contains("what") {
            if calls.is_empty() {
                "No entry invoked a catalog entry.".to_owned()
            } else {
                format!("The run invoked, in order: {}.", calls.join(", "))
            }
        } else {
            "This narration can only restate the recorded facts: ask what the run called or why it failed."
                .to_owned()
        };
        text.push_str(&format!(" You asked: \"{q}\". {answer}"));
    }
    text.push_str(" (Narration is interpretation; the trace envelope is the record.)");
    text
}
