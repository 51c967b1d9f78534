//! A catalog snapshot its Run confirms (`pilotage::engine::confirm`), through the in-process
//! duplex transport: an engine that answers a run's snapshot from what it kept, without
//! proving it current, and whose Run checks it before any step. Unchanged, runs read nothing;
//! moved behind the server's back, the program is admitted again against a current snapshot
//! and runs once; `expected_catalog_version` is judged against the current catalog; an engine
//! that says "moved" of a snapshot it was not asked to confirm, or after a step, gets its own
//! failure as the outcome. An engine that proves every snapshot current runs an execute on
//! the snapshot the session answered last only while the engine's is still of its version.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support;

use pilotage::engine::{Caller, CatalogSnapshot};
use pilotage::model::catalog::CatalogEntry;
use pilotage::model::risk::RiskHints;
use pilotage::prelude::*;
use serde_json::{json, Value};
use support::Conn;

#[allow(dead_code)] // declared, never reported
#[derive(Clone, Copy, pilotage::Codes)]
enum KeptCode {
    NotWritable,
}

#[derive(Clone, Copy, pilotage::RiskLevels)]
enum KeptRisk {
    #[risk(read_only)]
    Safe,
}

#[allow(dead_code)] // the entry's kind, written as its wire name
#[derive(Clone, Copy, Debug, PartialEq, Eq, pilotage::EntryKinds)]
enum KeptKind {
    Table,
}

/// The world the catalog describes, and what the engine did.
#[derive(Default)]
struct World {
    /// Moves the catalog (the description of its one entry) when it changes.
    generation: AtomicU32,
    /// Snapshots read from the world (proven current).
    reads: AtomicUsize,
    /// Runs that went past their check.
    runs: AtomicUsize,
    /// The snapshot read last.
    kept: Mutex<Option<Arc<CatalogSnapshot>>>,
    /// Read every snapshot from the world, never answering a kept one.
    prove: AtomicBool,
    /// How long reading a snapshot from the world takes, in milliseconds.
    read_ms: AtomicU64,
}

struct Kept(Arc<World>);

/// The generation a snapshot describes.
fn generation(snapshot: &CatalogSnapshot) -> u32 {
    let description = snapshot.entries()[0].description.clone().unwrap_or_default();
    description.trim_start_matches("generation ").parse().unwrap_or(u32::MAX)
}

#[pilotage::language(
    name = "kept/v1", title = "A kept catalog", program = "program", locator = "json-pointer",
    capabilities(guides, catalog, validate, plan, execute), execution = "immediate", trace = "full",
    retention = "none", guides = "examples/sql/guides", codes = KeptCode, risk = KeptRisk,
    kinds = KeptKind, catalog = catalog_snapshot,
)]
impl Kept {
    #[loop_tool(validate, name = "validate_kept")]
    fn validate(&self, _program: &Json, v: &mut Validation<KeptCode, KeptRisk>) {
        v.step("go", KeptRisk::Safe);
    }

    #[loop_tool(execute, name = "run_kept", no_input)]
    async fn run(&self, program: &Json, run: &mut Run) -> Finish {
        if program["step_first"] == true {
            run.step("early").succeeded();
        }
        let seen = run.catalog().map(generation).unwrap_or(u32::MAX);
        let moved = seen != self.0.generation.load(Ordering::SeqCst);
        // Time the first attempt spends (before it finds the catalog moved), then the second.
        let spend = |key: &str| Duration::from_millis(program[key].as_u64().unwrap_or(0));
        if run.catalog_unconfirmed() {
            tokio::time::sleep(spend("first_ms")).await;
        } else {
            tokio::time::sleep(spend("then_ms")).await;
        }
        if program["always_moved"] == true || (run.catalog_unconfirmed() && moved) {
            return run.catalog_moved();
        }
        self.0.runs.fetch_add(1, Ordering::SeqCst);
        run.step("go").succeeded();
        Finish::output(json!({"generation": seen, "confirmed": !run.catalog_unconfirmed()}))
    }

    fn catalog_snapshot(&self, _caller: &Caller) -> Arc<CatalogSnapshot> {
        let mut kept = self.0.kept.lock().unwrap();
        if let Some(snapshot) = kept.clone().filter(|_| !self.0.prove.load(Ordering::SeqCst)) {
            if pilotage::engine::confirm::defer_to_run() {
                return snapshot;
            }
        }
        self.0.reads.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(self.0.read_ms.load(Ordering::SeqCst)));
        let entry = CatalogEntry {
            id: "thing".into(),
            kind: "table".into(),
            name: "thing".into(),
            description: Some(format!("generation {}", self.0.generation.load(Ordering::SeqCst))),
            input_schema: None,
            output_schema: None,
            risk: "safe".into(),
            risk_hints: RiskHints::READ_ONLY,
            tags: Vec::new(),
            languages: None,
            revision: None,
        };
        let snapshot = Arc::new(CatalogSnapshot::new(vec![entry]));
        *kept = Some(snapshot.clone());
        snapshot
    }
}

async fn serve() -> (Arc<World>, Conn) {
    serve_within(pilotage::engine::Limits::default()).await
}

async fn serve_within(limits: pilotage::engine::Limits) -> (Arc<World>, Conn) {
    let world = Arc::new(World::default());
    let engine = world.clone();
    let server = pilotage::Server::builder()
        .name("deferred", "0")
        .language(move || Kept(engine.clone()))
        .limits(limits)
        .build()
        .expect("the server builds");
    let mut conn = Conn::duplex(&server);
    conn.initialize(true).await;
    (world, conn)
}

async fn run(conn: &mut Conn, args: Value) -> Value {
    conn.call_ok("run_kept", args).await
}

#[tokio::test]
async fn runs_of_a_kept_snapshot_read_nothing_and_a_moved_one_is_admitted_again_once() {
    let (world, mut conn) = serve().await;
    let v = conn.call_ok("validate_kept", json!({"program": {}})).await;
    assert_eq!(v["valid"], true, "{v}");
    let version = v["catalog_version"].clone();
    assert_eq!(world.reads.load(Ordering::SeqCst), 1);
    for _ in 0..3 {
        let ran = run(&mut conn, json!({"program": {}})).await;
        assert_eq!(ran["output"], json!({"generation": 0, "confirmed": false}), "{ran}");
    }
    assert_eq!(world.reads.load(Ordering::SeqCst), 1, "the runs confirmed the kept snapshot themselves");

    // Moved behind the server's back: the first attempt stops before any step, the second
    // reads the current catalog and runs (once).
    world.generation.store(1, Ordering::SeqCst);
    let ran = run(&mut conn, json!({"program": {}})).await;
    assert_eq!(ran["output"], json!({"generation": 1, "confirmed": true}), "{ran}");
    assert_eq!(ran["trace"]["steps"].as_array().map(Vec::len), Some(1), "{ran}");
    assert_eq!((world.reads.load(Ordering::SeqCst), world.runs.load(Ordering::SeqCst)), (2, 4));

    // The version validated at generation 0 is judged against the current catalog.
    world.generation.store(2, Ordering::SeqCst);
    let drift = run(&mut conn, json!({"program": {}, "expected_catalog_version": version})).await;
    assert_eq!(
        drift["outcome"],
        json!({"ok": false, "status": "catalog_drift", "error": "catalog version mismatch"})
    );
    assert_eq!((world.reads.load(Ordering::SeqCst), world.runs.load(Ordering::SeqCst)), (3, 4));
    // A version the caller holds is accepted when it is the current catalog's, though the
    // kept snapshot differs from it.
    let two = conn.call_ok("validate_kept", json!({"program": {}})).await["catalog_version"].clone();
    world.generation.store(3, Ordering::SeqCst);
    let three = conn.call_ok("validate_kept", json!({"program": {}})).await["catalog_version"].clone();
    assert_ne!(two, three);
    world.generation.store(2, Ordering::SeqCst);
    let ran = run(&mut conn, json!({"program": {}, "expected_catalog_version": two})).await;
    assert_eq!(ran["output"], json!({"generation": 2, "confirmed": true}), "{ran}");
    assert_eq!((world.reads.load(Ordering::SeqCst), world.runs.load(Ordering::SeqCst)), (6, 5));
}

#[tokio::test]
async fn moved_said_of_a_confirmed_snapshot_or_after_a_step_is_the_runs_own_failure() {
    let (world, mut conn) = serve().await;
    let error = "the catalog moved before the run began; validate the program again";
    // Without a kept snapshot, a run's snapshot is read current: moved is its own failure.
    let ran = run(&mut conn, json!({"program": {"always_moved": true}})).await;
    assert_eq!(ran["outcome"], json!({"ok": false, "status": "error", "error": error}), "{ran}");
    assert_eq!(world.reads.load(Ordering::SeqCst), 1);
    // Said every time: the first attempt is admitted again, the second's answer is the caller's.
    let ran = run(&mut conn, json!({"program": {"always_moved": true}})).await;
    assert_eq!(ran["outcome"], json!({"ok": false, "status": "error", "error": error}), "{ran}");
    assert_eq!(world.reads.load(Ordering::SeqCst), 2, "the kept snapshot unconfirmed, then one current");
    // After a step, nothing is run again: the step stays in the trace.
    let ran = run(&mut conn, json!({"program": {"always_moved": true, "step_first": true}})).await;
    assert_eq!(ran["outcome"], json!({"ok": false, "status": "error", "error": error}), "{ran}");
    assert_eq!(ran["trace"]["steps"][0]["id"], "early", "{ran}");
    assert_eq!(ran["trace"]["steps"].as_array().map(Vec::len), Some(1), "{ran}");
    assert_eq!(world.reads.load(Ordering::SeqCst), 2, "no second attempt");
    assert_eq!(world.runs.load(Ordering::SeqCst), 0);
}

/// Both attempts share one run bound: the second gets what the first left of it, not a bound
/// of its own (a request answers within `execute_time` of its engine calls, however often the
/// catalog moved).
#[tokio::test]
async fn the_second_attempt_runs_within_what_the_first_left_of_the_bound() {
    let limits = pilotage::engine::Limits { execute_time: Duration::from_millis(1000), ..Default::default() };
    let (world, mut conn) = serve_within(limits).await;
    let v = conn.call_ok("validate_kept", json!({"program": {}})).await;
    assert_eq!(v["valid"], true, "{v}");
    // Each attempt alone fits in the bound; the two together do not.
    world.generation.store(1, Ordering::SeqCst);
    let ran = run(&mut conn, json!({"program": {"first_ms": 600, "then_ms": 600}})).await;
    assert_eq!(
        ran["outcome"],
        json!({"ok": false, "status": "partial", "error": "execution exceeded its time bound of 1s"}),
        "{ran}"
    );
    assert_eq!(world.runs.load(Ordering::SeqCst), 0);
    // Within the bound together, the second attempt runs.
    world.generation.store(2, Ordering::SeqCst);
    let ran = run(&mut conn, json!({"program": {"first_ms": 300, "then_ms": 300}})).await;
    assert_eq!(ran["output"], json!({"generation": 2, "confirmed": true}), "{ran}");
    assert_eq!(world.runs.load(Ordering::SeqCst), 1);
}

/// An engine that proves every snapshot current: an execute after a validate runs on the
/// snapshot the session answered last, its one engine call reading the engine's snapshot as it
/// begins; moved in between, the Run does not begin on the old one, and the program is
/// admitted again against the current snapshot and runs once.
#[tokio::test]
async fn a_run_on_the_snapshot_answered_last_begins_only_while_it_is_current() {
    let (world, mut conn) = serve().await;
    world.prove.store(true, Ordering::SeqCst);
    let reads_and_runs = |w: &World| (w.reads.load(Ordering::SeqCst), w.runs.load(Ordering::SeqCst));
    let v = conn.call_ok("validate_kept", json!({"program": {}})).await;
    assert_eq!(v["valid"], true, "{v}");
    assert_eq!(reads_and_runs(&world), (1, 0));
    let ran = run(&mut conn, json!({"program": {}})).await;
    assert_eq!(ran["output"], json!({"generation": 0, "confirmed": true}), "{ran}");
    assert_eq!(reads_and_runs(&world), (2, 1), "one read, in the run's own engine call");

    // Moved between the calls: the run's read finds another version and nothing begins on the
    // old snapshot; the second attempt reads the current one and runs on it, once.
    world.generation.store(1, Ordering::SeqCst);
    let ran = run(&mut conn, json!({"program": {}})).await;
    assert_eq!(ran["output"], json!({"generation": 1, "confirmed": true}), "{ran}");
    assert_eq!(ran["trace"]["steps"].as_array().map(Vec::len), Some(1), "{ran}");
    assert_eq!(reads_and_runs(&world), (4, 2));
    // The snapshot the second attempt answered is the session's last: one read a run again.
    let ran = run(&mut conn, json!({"program": {}})).await;
    assert_eq!(ran["output"], json!({"generation": 1, "confirmed": true}), "{ran}");
    assert_eq!(reads_and_runs(&world), (5, 3));

    // The version validated at generation 0 is judged against the current catalog.
    world.generation.store(2, Ordering::SeqCst);
    let drift =
        run(&mut conn, json!({"program": {}, "expected_catalog_version": v["catalog_version"]})).await;
    assert_eq!(
        drift["outcome"],
        json!({"ok": false, "status": "catalog_drift", "error": "catalog version mismatch"})
    );
    assert_eq!(reads_and_runs(&world).1, 3, "nothing ran");
}

/// The snapshot a Run's own engine call reads keeps a snapshot's time bound (the shorter of
/// `validate_time` and `tool_time`), not the run's: one that outlasts it is answered at that
/// bound and nothing runs; one within it runs.
#[tokio::test]
async fn the_snapshot_a_run_reads_keeps_a_snapshots_time_bound() {
    let limits = pilotage::engine::Limits {
        validate_time: Duration::from_millis(300),
        execute_time: Duration::from_secs(5),
        ..Default::default()
    };
    let (world, mut conn) = serve_within(limits).await;
    world.prove.store(true, Ordering::SeqCst);
    let v = conn.call_ok("validate_kept", json!({"program": {}})).await;
    assert_eq!(v["valid"], true, "{v}");

    world.read_ms.store(1500, Ordering::SeqCst);
    let asked = std::time::Instant::now();
    let late = conn.call("run_kept", json!({"program": {}})).await;
    let answered = asked.elapsed();
    assert!(late.is_error, "{}", late.raw);
    assert_eq!(
        late.structured["error"],
        json!({"kind": "bounds_exceeded", "message": "the catalog snapshot exceeded its time bound of 300ms"}),
        "{}",
        late.raw
    );
    assert!(
        answered < Duration::from_millis(1200),
        "answered after {answered:?}, not at the snapshot's bound"
    );
    assert_eq!(world.runs.load(Ordering::SeqCst), 0);

    // The late read still holds the engine's lock on its kept snapshot until it ends.
    tokio::time::sleep(Duration::from_millis(1600).saturating_sub(asked.elapsed())).await;
    world.read_ms.store(100, Ordering::SeqCst);
    let ran = run(&mut conn, json!({"program": {}})).await;
    assert_eq!(ran["output"], json!({"generation": 0, "confirmed": true}), "{ran}");
    assert_eq!(world.runs.load(Ordering::SeqCst), 1);
}
