//! The threads engine calls run on: never the async workers. Process-wide engine threads (one
//! per core, see [`engine_threads`]) take a call at once when one of them is free, and the rest
//! go to tokio's blocking pool, so a call never waits behind another one.
//!
//! Sizing: engine code is CPU work, so one engine thread per core lets every core run an engine
//! call without a blocking-pool hand-off, on 2 cores as on 64 (a fixed cap of 8 left half of a
//! 16-core machine to the slower path, issue 33). Calls past them (engines that wait on I/O,
//! bursts) go to the blocking pool, whose default size (512 threads) is above the server's
//! default cap on concurrent engine calls (4 per core) up to 128 cores; the cap on engine calls
//! (`ServerBuilder::max_engine_calls`), not the pool, is what bounds them.
//!
//! The engine threads make the hand-off cheap when the server is not busy. Waking a sleeping
//! thread costs tens of microseconds on a virtual machine, more than a small validation itself
//! (`benches/fair`), and a call pays it twice: once to wake the thread that runs it, once to
//! wake the worker that answers. So:
//! - an engine thread that finishes a call while no other call is in flight looks for the next
//!   one for [`LINGER`] before it sleeps (one thread at most looks; the others sleep), unless
//!   the next call did not come within [`LINGER`] the last time a call of the same [`Work`]
//!   ended (`sql/postgres`'s client reads a 1,000-row answer for longer than that before it
//!   validates again, and the looking thread would take a core from it on 2 cores, issue 31;
//!   the same server answering `SELECT 1` is asked again within it). The gap is measured on
//!   every call, whether a thread looked or slept, so the choice follows the client;
//! - a request whose call is the only one in flight polls for its answer for up to [`POLL`]
//!   (never past its deadline) before its worker waits like any other task, unless the last
//!   engine call of the same [`Work`] ran for [`POLL`] or longer (an engine waiting on a
//!   database would not answer within it, and the polling worker would take a core from the
//!   work it waits for). The history is kept per kind of work because one request makes
//!   several calls of different lengths: `sql/postgres` validates in 0.2 ms, then runs for 3.
//!
//! Both loops yield the core to any other runnable thread on every turn, and neither runs while
//! other calls are in flight or the process serves other requests ([`Request`]): a busy server
//! keeps its cores for work. A request's engine call is a short part of it (the HTTP exchange,
//! the parse, the answer's serialisation are the rest), so a server loaded by many clients
//! often has one engine call or none in flight while its workers are busy with the others'
//! requests; a thread looking or polling then took a core from them (issue 33: at 64 clients,
//! the engine threads used up to 33 µs a call, for a trivial validation of a few). A call that
//! never returns counts as in flight for good, so the process then hands off without either
//! loop.
//! The request does not poll on a current-thread runtime or a runtime with one worker, where
//! that worker also drives the I/O the engine may be waiting for.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::oneshot;

/// How long an engine thread looks for its next call before it sleeps, when no call is in
/// flight.
pub(crate) const LINGER: Duration = Duration::from_micros(500);

/// How long a request whose engine call is the only one in flight polls for its answer before
/// its worker waits like any other task.
pub(crate) const POLL: Duration = Duration::from_millis(1);

/// Most engine threads, whatever the core count reported: a bound on what a misreported core
/// count could make the process start, far above the machines this runs on.
const MAX_THREADS: usize = 256;

/// The engine threads of this process: one per available core, at most [`MAX_THREADS`].
pub(crate) fn engine_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_THREADS)
}

type Job = Box<dyn FnOnce() + Send>;

/// The process's engine threads.
struct Threads {
    /// Calls handed to a free engine thread and not yet taken.
    waiting: Mutex<Waiting>,
    wake: Condvar,
    /// Engine threads free to take a call (spinning or asleep), less the calls waiting for them.
    free: AtomicUsize,
    /// Length of the queue, read without the lock.
    queued: AtomicUsize,
    /// Engine calls running or waiting anywhere (engine threads and blocking pool).
    in_flight: AtomicUsize,
    /// Requests the process is serving ([`Request`]), whatever each is doing now.
    requests: AtomicUsize,
    /// Per kind of work (by [`Work::ALL`] index): how long after the last call of that kind
    /// ended, with no other call in flight, the next call came, in microseconds (0 until one
    /// did: look, as for a client that asks again at once).
    gaps: [AtomicU64; 4],
    /// When the last call ended (microseconds since `epoch`; 0: none yet), and its kind.
    ended_at: AtomicU64,
    ended_kind: AtomicUsize,
    epoch: Instant,
}

/// A kind of engine call, whose recent length decides whether a request polls for its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Work {
    /// A validation (`validate_program`, a promoted program's schema).
    Validate,
    /// A run.
    Execute,
    /// A catalog snapshot.
    Snapshot,
    /// A plain tool.
    Tool,
}

impl Work {
    const ALL: [Work; 4] = [Work::Validate, Work::Execute, Work::Snapshot, Work::Tool];

    /// How long the last call of this kind to end ran, in microseconds.
    fn last(self) -> &'static AtomicU64 {
        static LAST: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];
        &LAST[self as usize]
    }

    /// Whether the last call of this kind ran shorter than [`POLL`].
    fn short(self) -> bool {
        self.last().load(Ordering::Relaxed) < POLL.as_micros() as u64
    }
}

#[derive(Default)]
struct Waiting {
    jobs: VecDeque<Job>,
    asleep: usize,
    /// One engine thread at most looks for the next call; the others sleep, so that idle
    /// engine threads never crowd the cores.
    lingering: bool,
}

fn threads() -> &'static Threads {
    static THREADS: OnceLock<Threads> = OnceLock::new();
    THREADS.get_or_init(|| {
        for i in 0..engine_threads() {
            // A thread that cannot be started is one fewer fast path; calls then go to the pool.
            let _ =
                std::thread::Builder::new().name(format!("pilotage-engine-{i}")).spawn(|| threads().serve());
        }
        Threads::new()
    })
}

/// Runs `f`, a call of kind `work`, off the async workers and answers with its value, or `None`
/// if it panicked. Must be called from within a tokio runtime.
pub(crate) fn spawn<T: Send + 'static>(work: Work, f: impl FnOnce() -> T + Send + 'static) -> Answer<T> {
    let threads = threads();
    let (tx, rx) = oneshot::channel();
    let handle = Handle::current();
    threads.arrived();
    // In flight until the job has run, or is dropped unrun (a runtime shutting down).
    let flight = InFlight::start(threads);
    let job = {
        let handle = handle.clone();
        move || {
            let _flight = flight;
            let _runtime = handle.enter();
            let started = Instant::now();
            let value = std::panic::catch_unwind(AssertUnwindSafe(f)).ok();
            let ran = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
            work.last().store(ran, Ordering::Relaxed);
            threads.ended(work);
            let _ = tx.send(value);
        }
    };
    let claimed = threads.free.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    if claimed.is_ok() {
        threads.hand(Box::new(job));
    } else {
        drop(tokio::task::spawn_blocking(job));
    }
    let poll = handle.runtime_flavor() == RuntimeFlavor::MultiThread && handle.metrics().num_workers() > 1;
    Answer { rx, poll, threads, work }
}

/// One engine call counted in [`Threads::in_flight`] while it lives.
struct InFlight(&'static Threads);

impl InFlight {
    fn start(threads: &'static Threads) -> Self {
        threads.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(threads)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One `tools/call` counted while it is served, from its arrival to its answer: while the
/// process serves more than one, no engine thread looks for the next call and no request polls
/// for its answer (see the module's documentation).
pub(crate) struct Request(&'static Threads);

impl Request {
    pub fn begin() -> Request {
        let threads = threads();
        threads.requests.fetch_add(1, Ordering::AcqRel);
        Request(threads)
    }
}

impl Drop for Request {
    fn drop(&mut self) {
        self.0.requests.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The answer of an engine call started by [`spawn`].
pub(crate) struct Answer<T> {
    rx: oneshot::Receiver<Option<T>>,
    poll: bool,
    threads: &'static Threads,
    work: Work,
}

impl<T> Answer<T> {
    /// The call's value, `Some(None)` if it panicked, `None` if `deadline` came first.
    pub async fn until(mut self, deadline: tokio::time::Instant) -> Option<Option<T>> {
        // A call as long as the last one of its kind (an engine waiting on a database, a large
        // program) would not answer within the poll: the worker waits at once instead of
        // taking a core from the work it waits for (on 2 cores, the database's own backend).
        if self.poll && self.work.short() {
            let until = (Instant::now() + POLL).min(deadline.into_std());
            while self.threads.quiet(1) && Instant::now() < until {
                match self.rx.try_recv() {
                    Ok(value) => return Some(value),
                    Err(oneshot::error::TryRecvError::Closed) => return Some(None),
                    Err(oneshot::error::TryRecvError::Empty) => std::thread::yield_now(),
                }
            }
        }
        match tokio::time::timeout_at(deadline, self.rx).await {
            Ok(Ok(value)) => Some(value),
            Ok(Err(_)) => Some(None),
            Err(_) => None,
        }
    }
}

impl Threads {
    fn new() -> Threads {
        Threads {
            waiting: Mutex::default(),
            wake: Condvar::new(),
            free: AtomicUsize::new(0),
            queued: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            requests: AtomicUsize::new(0),
            gaps: [const { AtomicU64::new(0) }; 4],
            ended_at: AtomicU64::new(0),
            ended_kind: AtomicUsize::new(0),
            epoch: Instant::now(),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX).max(1)
    }

    /// A call of kind `work` ended now.
    fn ended(&self, work: Work) {
        self.ended_kind.store(work as usize, Ordering::Relaxed);
        self.ended_at.store(self.now(), Ordering::Release);
    }

    /// A call arrives: when none is in flight, how long after the last one ended is the gap of
    /// that one's kind.
    fn arrived(&self) {
        let ended = self.ended_at.load(Ordering::Acquire);
        if ended != 0 && self.in_flight.load(Ordering::Acquire) == 0 {
            let kind = self.ended_kind.load(Ordering::Relaxed) % Work::ALL.len();
            self.gaps[kind].store(self.now().saturating_sub(ended), Ordering::Relaxed);
        }
    }

    /// Whether at most `calls` engine calls are in flight and at most one request is served:
    /// when a thread may look for a call or a request poll for its answer.
    fn quiet(&self, calls: usize) -> bool {
        self.in_flight.load(Ordering::Acquire) <= calls && self.requests.load(Ordering::Acquire) <= 1
    }

    /// Whether a thread that finds no call now should look for the next one for [`LINGER`]:
    /// none in flight, one request served at most, and the last time a call of the kind that
    /// just ended ended, the next came within it.
    fn worth_lingering(&self) -> bool {
        let kind = self.ended_kind.load(Ordering::Relaxed) % Work::ALL.len();
        self.quiet(0) && self.gaps[kind].load(Ordering::Relaxed) < LINGER.as_micros() as u64
    }

    /// Queues `job` for the free engine thread claimed for it.
    fn hand(&self, job: Job) {
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        waiting.jobs.push_back(job);
        self.queued.fetch_add(1, Ordering::Release);
        // A lingering thread takes one call at most: any more wake a sleeping one.
        if waiting.asleep > 0 && waiting.jobs.len() > usize::from(waiting.lingering) {
            self.wake.notify_one();
        }
    }

    /// An engine thread's life: take a call, run it, be free again.
    fn serve(&self) {
        self.free.fetch_add(1, Ordering::AcqRel);
        loop {
            let job = self.next();
            // The job catches the engine's panics; this keeps the thread whatever happens.
            let _ = std::panic::catch_unwind(AssertUnwindSafe(job));
            self.free.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// The next call: looked for during [`LINGER`] if no other engine thread is looking and it
    /// is [worth it](Threads::worth_lingering), then waited for asleep.
    fn next(&self) -> Job {
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        let mut lingered = false;
        loop {
            if let Some(job) = self.take(&mut waiting) {
                return job;
            }
            if !lingered && !waiting.lingering && self.worth_lingering() {
                waiting.lingering = true;
                drop(waiting);
                waiting = self.linger();
                lingered = true;
                continue;
            }
            waiting.asleep += 1;
            waiting = self.wake.wait(waiting).unwrap_or_else(|e| e.into_inner());
            waiting.asleep -= 1;
        }
    }

    /// Looks for a call during [`LINGER`], yielding the core on every turn; answers the lock
    /// with the lingering flag cleared, so that no call is handed to it in between.
    fn linger(&self) -> MutexGuard<'_, Waiting> {
        let until = Instant::now() + LINGER;
        loop {
            let over = Instant::now() >= until;
            if over || self.queued.load(Ordering::Acquire) > 0 {
                let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
                if over || !waiting.jobs.is_empty() {
                    waiting.lingering = false;
                    return waiting;
                }
            }
            std::thread::yield_now();
        }
    }

    fn take(&self, waiting: &mut Waiting) -> Option<Job> {
        let job = waiting.jobs.pop_front()?;
        self.queued.fetch_sub(1, Ordering::Release);
        Some(job)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use tokio::time::Instant as TokioInstant;

    use crate::ops::threads::{engine_threads, spawn, Threads, Work, LINGER};

    fn later(ms: u64) -> TokioInstant {
        TokioInstant::now() + Duration::from_millis(ms)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn calls_run_off_the_calling_thread_and_see_the_runtime() {
        let caller = std::thread::current().id();
        let seen = spawn(Work::Tool, move || {
            let handle = tokio::runtime::Handle::current();
            let slept = handle.block_on(async {
                tokio::time::sleep(Duration::from_millis(1)).await;
                7
            });
            (std::thread::current().id() != caller, slept)
        });
        assert_eq!(seen.until(later(5_000)).await, Some(Some((true, 7))));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn more_waiting_calls_than_engine_threads_all_run_at_once() {
        // Each call waits until all have started: with fewer threads than calls this finishes
        // only because the calls past the engine threads go to the blocking pool.
        let n = engine_threads() + 3;
        let started = Arc::new(AtomicUsize::new(0));
        let answers: Vec<_> = (0..n)
            .map(|_| {
                let started = started.clone();
                spawn(Work::Tool, move || {
                    started.fetch_add(1, Ordering::SeqCst);
                    let until = Instant::now() + Duration::from_secs(10);
                    while started.load(Ordering::SeqCst) < n && Instant::now() < until {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    started.load(Ordering::SeqCst) == n
                })
            })
            .collect();
        for answer in answers {
            assert_eq!(answer.until(later(20_000)).await, Some(Some(true)));
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_call_handed_while_a_thread_lingers_is_never_stranded_behind_another() {
        // Each pair's first call waits for the second to start. A second call queued for the
        // lingering thread that took the first would never start.
        for round in 0..1000u64 {
            let second = Arc::new(AtomicUsize::new(0));
            let seen = second.clone();
            let first = spawn(Work::Tool, move || {
                let until = Instant::now() + Duration::from_secs(5);
                while seen.load(Ordering::SeqCst) == 0 && Instant::now() < until {
                    std::hint::spin_loop();
                }
                seen.load(Ordering::SeqCst) == 1
            });
            let other = spawn(Work::Tool, move || second.store(1, Ordering::SeqCst));
            assert_eq!(first.until(later(10_000)).await, Some(Some(true)), "round {round}");
            assert_eq!(other.until(later(10_000)).await, Some(Some(())), "round {round}");
            // Let the threads settle into lingering or sleeping in between, at varied points.
            std::thread::sleep(Duration::from_micros(round % 7 * 100));
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panic_answers_none_and_the_threads_serve_on() {
        assert_eq!(
            spawn(Work::Tool, || -> u8 { panic!("engine fault") }).until(later(5_000)).await,
            Some(None)
        );
        for i in 0..50u32 {
            assert_eq!(spawn(Work::Tool, move || i * 2).until(later(5_000)).await, Some(Some(i * 2)));
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_deadline_answers_even_while_the_call_runs_on() {
        let started = Instant::now();
        let answer = spawn(Work::Tool, || std::thread::sleep(Duration::from_millis(300)));
        assert_eq!(answer.until(later(20)).await, None);
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(20) && waited < Duration::from_millis(250), "{waited:?}");
    }

    #[test]
    fn a_thread_lingers_after_a_kind_of_call_only_while_the_next_call_follows_it_soon() {
        let threads = Threads::new();
        // Nothing measured yet: look, as for a client that asks again at once.
        threads.ended(Work::Execute);
        assert!(threads.worth_lingering());
        // The next call came after LINGER: after an execute, sleep at once.
        std::thread::sleep(LINGER * 3);
        threads.arrived();
        threads.ended(Work::Validate);
        assert!(threads.worth_lingering(), "the validate's own gap is still unmeasured");
        threads.arrived();
        threads.ended(Work::Execute);
        assert!(!threads.worth_lingering());
        // Measured again on every call: an execute followed at once is looked after again.
        threads.arrived();
        threads.ended(Work::Execute);
        assert!(threads.worth_lingering());
        // One request served (the one whose call just ended): still.
        threads.requests.fetch_add(1, Ordering::AcqRel);
        assert!(threads.worth_lingering());
        // Another request served: never, whatever it is doing.
        threads.requests.fetch_add(1, Ordering::AcqRel);
        assert!(!threads.worth_lingering());
        threads.requests.fetch_sub(1, Ordering::AcqRel);
        assert!(threads.worth_lingering());
        // A call in flight: never.
        threads.in_flight.fetch_add(1, Ordering::AcqRel);
        assert!(!threads.worth_lingering());
    }

    #[test]
    fn a_request_polls_for_its_answer_only_while_its_call_and_itself_are_alone() {
        let threads = Threads::new();
        // Its own call in flight, itself the one request served.
        threads.in_flight.fetch_add(1, Ordering::AcqRel);
        threads.requests.fetch_add(1, Ordering::AcqRel);
        assert!(threads.quiet(1));
        // Another request served, even one that has no call in flight: no poll.
        threads.requests.fetch_add(1, Ordering::AcqRel);
        assert!(!threads.quiet(1));
        threads.requests.fetch_sub(1, Ordering::AcqRel);
        // Another call in flight: no poll.
        threads.in_flight.fetch_add(1, Ordering::AcqRel);
        assert!(!threads.quiet(1));
    }

    #[test]
    fn there_is_one_engine_thread_per_core() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(engine_threads(), cores.min(256));
    }

    #[tokio::test]
    async fn a_current_thread_runtime_waits_without_polling() {
        let answer = spawn(Work::Tool, || {
            tokio::runtime::Handle::current().block_on(tokio::time::sleep(Duration::from_millis(5)));
            3
        });
        assert!(!answer.poll);
        assert_eq!(answer.until(later(5_000)).await, Some(Some(3)));
    }
}
