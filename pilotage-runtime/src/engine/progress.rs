//! How far a Run got, as it goes: the [`Progress`] observer the runtime attaches to a Run's
//! [`Recorder`](super::Recorder), told of every trace entry recorded and passing a bounded
//! number of [`Tick`]s on (to a client's `notifications/progress`, or a task's record).
//!
//! The engine writes nothing for it: every entry it records through [`Run`](super::Run) counts.

use std::sync::Arc;

/// How far a Run got: entries recorded so far, the plan's step count where known, and the
/// (iteration-qualified) id of the last entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tick {
    /// Trace entries recorded so far.
    pub done: usize,
    /// The plan's step count, while `done` has not passed it (loops may record more entries
    /// than the plan has steps: past it, the total is unknown).
    pub total: Option<usize>,
    /// The id of the entry just recorded.
    pub step: String,
}

/// Slices of the plan a Run reports: one tick each time `done` enters a new thirty-second of
/// `total`.
pub const PROGRESS_SLICES: usize = 32;

/// The most ticks a Run of at most `max_steps` entries passes on, the runtime's closing tick
/// included: one per power of two up to `max_steps`, one per slice of the plan, and the last.
/// 47 for the default bound of 10 000 steps.
pub fn max_ticks(max_steps: usize) -> usize {
    let powers = (usize::BITS - max_steps.leading_zeros()) as usize;
    powers + PROGRESS_SLICES + 1
}

/// Whether the entry that makes `done` is reported: the first, every power of two (so a Run
/// of unknown length still shows life at a shrinking rate), and the first entry of each slice
/// of the plan's `total`.
pub fn is_due(done: usize, total: Option<usize>) -> bool {
    if done == 0 {
        return false;
    }
    if done.is_power_of_two() {
        return true;
    }
    match total {
        Some(t) if t > 0 && done <= t => {
            done.saturating_mul(PROGRESS_SLICES) / t != (done - 1).saturating_mul(PROGRESS_SLICES) / t
        }
        _ => false,
    }
}

/// What the runtime does with a tick. Called on the engine's thread, with the Run's recorder
/// held: it must only hand the tick on (a channel send, an atomic store), never block.
pub type TickSink = Arc<dyn Fn(Tick) + Send + Sync>;

/// The observer of one Run: counts entries, passes the due ones to its sink.
#[derive(Clone)]
pub struct Progress {
    total: Option<usize>,
    done: usize,
    reported: usize,
    sink: TickSink,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress").field("total", &self.total).field("done", &self.done).finish()
    }
}

impl Progress {
    /// An observer for a Run whose plan has `total` steps (where known), reporting to `sink`.
    pub fn new(total: Option<usize>, sink: TickSink) -> Self {
        Progress { total, done: 0, reported: 0, sink }
    }

    /// One more entry, `step`, was recorded.
    pub(super) fn recorded(&mut self, step: &str) {
        self.done += 1;
        if is_due(self.done, self.total) {
            self.report(step);
        }
    }

    /// The closing tick, when the last entry recorded was not reported yet.
    pub(super) fn close(&mut self, last: Option<&str>) {
        if self.done > self.reported {
            self.report(last.unwrap_or_default());
        }
    }

    fn report(&mut self, step: &str) {
        self.reported = self.done;
        let total = self.total.filter(|t| self.done <= *t);
        (self.sink)(Tick { done: self.done, total, step: step.to_owned() });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    fn ticks(n: usize, total: Option<usize>) -> Vec<Tick> {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let mut p = Progress::new(total, Arc::new(move |t| sink.lock().unwrap().push(t)));
        for i in 0..n {
            p.recorded(&format!("s{i}"));
        }
        p.close(Some(&format!("s{}", n.saturating_sub(1))));
        let out = seen.lock().unwrap().clone();
        out
    }

    #[test]
    fn ten_thousand_steps_send_forty_six_ticks() {
        let t = ticks(10_000, Some(10_000));
        assert_eq!(t.len(), 46);
        assert!(t.len() <= max_ticks(10_000));
        assert_eq!(max_ticks(10_000), 47);
        assert_eq!(t.first().unwrap(), &Tick { done: 1, total: Some(10_000), step: "s0".into() });
        assert_eq!(t.last().unwrap(), &Tick { done: 10_000, total: Some(10_000), step: "s9999".into() });
        assert!(t.windows(2).all(|w| w[0].done < w[1].done));
    }

    #[test]
    fn unknown_totals_report_powers_of_two_and_the_end() {
        let t = ticks(100, None);
        let done: Vec<usize> = t.iter().map(|t| t.done).collect();
        assert_eq!(done, vec![1, 2, 4, 8, 16, 32, 64, 100]);
    }

    #[test]
    fn past_the_plan_the_total_is_dropped() {
        let t = ticks(5, Some(3));
        let totals: Vec<Option<usize>> = t.iter().map(|t| t.total).collect();
        assert_eq!(totals, vec![Some(3), Some(3), Some(3), None, None]);
    }

    #[test]
    fn nothing_recorded_sends_nothing() {
        assert!(ticks(0, Some(4)).is_empty());
    }
}
