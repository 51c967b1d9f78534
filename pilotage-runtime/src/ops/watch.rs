//! What watches one execute beside the caller awaiting its answer (beyond Pilotage 1.1, all
//! opt-in): the client's cancellation, fired into the Run's signal, and where the Run's
//! progress goes (a client's `notifications/progress`, a task's record). A plain execute has
//! neither and runs exactly as before.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::engine::progress::{max_ticks, Progress, Tick};
use crate::engine::Recorder;

/// Where a Run's ticks go (with the Run's id), on the request's own task (so a notification
/// leaves before the answer, on the request's stream).
pub(crate) type TickOut = Arc<dyn Fn(&str, Tick) -> BoxFuture<'static, ()> + Send + Sync>;

/// Told a Run's id and recorder once it starts.
pub(crate) type OnStart = Arc<dyn Fn(&str, &Recorder) + Send + Sync>;

/// The watchers of one execute.
#[derive(Clone, Default)]
pub(crate) struct Watch {
    /// Fired when the client cancels (`notifications/cancelled`, `tasks/cancel`).
    pub cancel: Option<CancellationToken>,
    /// Where progress goes, when someone asked for it.
    pub progress: Option<TickOut>,
    /// The Run id to use (a task names its Run before it starts).
    pub run_id: Option<String>,
    /// Told the Run's recorder once the Run starts (a task's live trace).
    pub started: Option<OnStart>,
}

impl Watch {
    /// Whether the client cancelled.
    pub fn cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(CancellationToken::is_cancelled)
    }

    /// Attach the progress observer to `recorder`: ticks queue on a channel as long as the
    /// most a Run can send, so the engine's thread never waits.
    pub fn observe(
        &self,
        recorder: &Recorder,
        total: Option<usize>,
        max_steps: usize,
    ) -> Option<tokio::sync::mpsc::Receiver<Tick>> {
        self.progress.as_ref()?;
        let (tx, rx) = tokio::sync::mpsc::channel(max_ticks(max_steps).max(1));
        recorder.observe(Progress::new(total, Arc::new(move |t| drop(tx.try_send(t)))));
        Some(rx)
    }

    /// Await `work` (the engine call), meanwhile firing `recorder`'s signal when the client
    /// cancels and passing ticks on; the ticks left when it ends are sent before returning.
    /// `work` is lent pinned where the caller made it, not given: a future taken by value an
    /// `async fn` holds twice.
    pub async fn around<T>(
        &self,
        run_id: &str,
        recorder: &Recorder,
        mut ticks: Option<tokio::sync::mpsc::Receiver<Tick>>,
        mut work: std::pin::Pin<&mut impl std::future::Future<Output = T>>,
    ) -> T {
        let never = CancellationToken::new();
        let cancel = self.cancel.as_ref().unwrap_or(&never);
        let mut fired = false;
        let out = loop {
            tokio::select! {
                out = work.as_mut() => break out,
                _ = cancel.cancelled(), if !fired => {
                    fired = true;
                    recorder.cancel();
                }
                Some(tick) = next(&mut ticks) => self.send(run_id, tick).await,
            }
        };
        recorder.close_progress();
        if let Some(rx) = ticks.as_mut() {
            while let Ok(tick) = rx.try_recv() {
                self.send(run_id, tick).await;
            }
        }
        out
    }

    async fn send(&self, run_id: &str, tick: Tick) {
        if let Some(out) = &self.progress {
            out(run_id, tick).await;
        }
    }
}

async fn next(ticks: &mut Option<tokio::sync::mpsc::Receiver<Tick>>) -> Option<Tick> {
    match ticks.as_mut().map(|rx| rx.recv()) {
        Some(recv) => match recv.await {
            Some(tick) => Some(tick),
            None => std::future::pending().await,
        },
        None => std::future::pending().await,
    }
}
