//! What the catalog's `changed_since` and `list` with `q` cost as the catalog grows.
//!
//! For 1 000, 100 000 and 1 000 000 entries: `changed_since` from a snapshot with the same
//! token (answered without looking at the entries), and from one 100 changes away (25 added, 25
//! removed, 50 modified), against the full comparison of both snapshots' defined fields that
//! `changed_since` did before (up to 100 000 entries: at 1 000 000 it took seconds and
//! gigabytes); and `list` with a `q` that matches nothing, one that matches ten entries and the
//! first page of one every entry matches, answered from the snapshot's index, against a scan.
//! Each row is the median and range of `ROUNDS` timings, with the peak of memory allocated
//! during one call (a counting allocator). The first `q` builds the index: its time and size and
//! the snapshot build time are reported too.
//!
//! The durable stores, `SqliteState` on a temporary file and, when `PILOTAGE_TEST_POSTGRES` (by
//! default `postgres://postgres@127.0.0.1:5432/test`) answers, `PostgresState` in a schema of its
//! own: `catalog_changes` across the same 100 changes (two versions in the owner's chain), and
//! the `remember_catalog` calls that serve them. Each round starts from empty catalog tables:
//! the first version served anywhere (its id and digest list stored), the next one from the same
//! process (hot: the previous snapshot is in memory; computes the delta, stores the new list),
//! the same from a second store on the same database (cold: reads the previous list back), and
//! the same change served to another owner (the delta is already stored). Reported, never
//! asserted: `cargo bench --bench catalog` (`CATALOG_BENCH_SIZES=1000,100000` to choose sizes).

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use pilotage::engine::search::contains_text;
use pilotage::engine::CatalogSnapshot;
use pilotage::model::catalog::CatalogEntry;
use pilotage::state::catalog_history::changed_since;
use pilotage::state::suite::TestSchema;
use pilotage::state::{PostgresState, SharedState, SqliteState};
use std::sync::Arc;

/// Counts the bytes in use and their peak, to report what one call allocates at most.
struct Counting;

static IN_USE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = IN_USE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `alloc` above with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const ROUNDS: usize = 7;

#[derive(Clone, Copy, pilotage::EntryKinds)]
enum Kind {
    Dataset,
}

#[derive(Clone, Copy, pilotage::RiskLevels)]
enum Risk {
    #[risk(read_only)]
    Safe,
}

fn entry(i: usize) -> CatalogEntry {
    CatalogEntry::new(format!("ds_{i:07}"), Kind::Dataset, format!("Dataset {i}"), Risk::Safe)
        .description(format!("Monthly figures of region {} for year {}", i % 97, 1990 + i % 35))
        .tag(format!("region_{}", i % 97))
}

/// `n` entries, and the same catalog 100 changes away.
fn catalogs(n: usize) -> (Vec<CatalogEntry>, Vec<CatalogEntry>) {
    let old: Vec<CatalogEntry> = (0..n).map(entry).collect();
    let step = n / 100;
    let mut new: Vec<CatalogEntry> = Vec::with_capacity(n + 25);
    for (i, e) in old.iter().enumerate() {
        match (i % step == 0, (i / step) % 4) {
            (true, 0) => {}
            (true, 1) => new.push(e.clone()),
            (true, _) => new.push(e.clone().description("revised")),
            (false, _) => new.push(e.clone()),
        }
        if i % step == 0 && (i / step) % 4 == 1 {
            new.push(entry(i).description("added").revision("x"));
            if let Some(added) = new.last_mut() {
                added.id.push_str("_new");
            }
        }
    }
    (old, new)
}

/// An entry's defined fields, by id.
fn forms(s: &CatalogSnapshot) -> BTreeMap<&str, serde_json::Value> {
    s.entries()
        .iter()
        .map(|e| {
            let mut v = serde_json::to_value(e).unwrap_or_default();
            if let Some(m) = v.as_object_mut() {
                m.remove("revision");
            }
            (e.id.as_str(), v)
        })
        .collect()
}

/// `changed_since` before: both snapshots' defined fields, compared by id.
fn by_comparison(old: &CatalogSnapshot, new: &CatalogSnapshot) -> usize {
    let (before, after) = (forms(old), forms(new));
    after.iter().filter(|(id, f)| before.get(*id) != Some(f)).count()
        + before.keys().filter(|id| !after.contains_key(*id)).count()
}

/// `q` before: every entry's fields, lowercased.
fn scan(snapshot: &CatalogSnapshot, q: &str) -> usize {
    let q = q.to_lowercase();
    snapshot.entries().iter().filter(|e| contains_text(e, &q)).count()
}

/// Median, min and max of `ROUNDS` timings of `f`, and the peak bytes one call allocated.
fn measure(mut f: impl FnMut() -> usize, expect: usize) -> (Duration, Duration, Duration, usize) {
    let mut times = Vec::with_capacity(ROUNDS);
    let mut peak = 0;
    for _ in 0..ROUNDS {
        let (time, got, bytes) = timed(&mut f);
        times.push(time);
        peak = peak.max(bytes);
        assert_eq!(got, expect, "the bench's own sanity check");
    }
    summary(times, peak)
}

/// One call of `f`: its time, its value and the peak bytes it allocated.
fn timed<T>(f: impl FnOnce() -> T) -> (Duration, T, usize) {
    let base = IN_USE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let start = Instant::now();
    let got = f();
    let time = start.elapsed();
    (time, got, PEAK.load(Ordering::Relaxed).saturating_sub(base))
}

/// Median, min and max of `times`, with `peak`.
fn summary(mut times: Vec<Duration>, peak: usize) -> (Duration, Duration, Duration, usize) {
    times.sort();
    (times[times.len() / 2], times[0], times[times.len() - 1], peak)
}

fn row(what: &str, n: usize, (median, min, max, peak): (Duration, Duration, Duration, usize)) {
    println!(
        "{what:<44} {n:>9} entries: median {median:>12.3?} (range {min:.3?} - {max:.3?}), peak {:.1} KiB allocated",
        peak as f64 / 1024.0
    );
}

fn main() {
    let sizes: Vec<usize> = std::env::var("CATALOG_BENCH_SIZES")
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000, 100_000, 1_000_000]);
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let dir = std::env::temp_dir().join(format!("pilotage-bench-catalog-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("bench directory");
    let sqlite = Stores::sqlite(&dir.join("state.sqlite"));
    let postgres = runtime.block_on(Stores::postgres());
    for n in sizes {
        let (old, new) = catalogs(n);
        let start = Instant::now();
        let old = CatalogSnapshot::new(old);
        println!("snapshot build {:>38} entries: {:.3?}", n, start.elapsed());
        let new = CatalogSnapshot::new(new);
        let same = CatalogSnapshot::new(old.entries().to_vec());
        let changes = changed_since(Some(&old), &new, old.version()).map(|c| c.changes.len()).unwrap_or(0);
        assert_eq!(changes, 100);
        row(
            "changed_since, same token",
            n,
            measure(
                || changed_since(Some(&old), &same, old.version()).map(|c| c.changes.len()).unwrap_or(1),
                0,
            ),
        );
        row(
            "changed_since, 100 changes",
            n,
            measure(
                || changed_since(Some(&old), &new, old.version()).map(|c| c.changes.len()).unwrap_or(0),
                100,
            ),
        );
        if n <= 100_000 {
            row("changed_since, 100 changes, full comparison", n, measure(|| by_comparison(&old, &new), 100));
        }
        let (old, new) = (Arc::new(old), Arc::new(new));
        for stores in [Some(&sqlite), postgres.as_ref()].into_iter().flatten() {
            runtime.block_on(stores.rows(n, &old, &new));
        }
        let (before, start) = (IN_USE.load(Ordering::Relaxed), Instant::now());
        let first = old.matching(Some("no such text"), 0).count();
        println!(
            "first q (builds the index) {:>26} entries: {:.3?}, the index holds {:.1} MiB",
            n,
            start.elapsed(),
            IN_USE.load(Ordering::Relaxed).saturating_sub(before) as f64 / (1024.0 * 1024.0)
        );
        assert_eq!(first, 0);
        row(
            "list q matching nothing, index",
            n,
            measure(|| old.matching(Some("no such text"), 0).count(), 0),
        );
        row("list q matching nothing, scan", n, measure(|| scan(&old, "no such text"), 0));
        let ten = format!("ds_{:06}", n / 10 - 1);
        row("list q matching ten, index", n, measure(|| old.matching(Some(&ten), 0).count(), 10));
        row("list q matching ten, scan", n, measure(|| scan(&old, &ten), 10));
        // A q every entry matches: a page (and the check for a next one) stops at 101.
        row(
            "list q matching all, first page, index",
            n,
            measure(|| old.matching(Some("ds_0"), 0).take(101).count(), 101),
        );
        row(
            "list q matching all, first page, scan",
            n,
            measure(|| old.entries().iter().filter(|e| contains_text(e, "ds_0")).take(101).count(), 101),
        );
    }
    if let Some(stores) = postgres {
        runtime.block_on(stores.finish());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A durable store twice on one database (the second a replica with a cold cache), and a
/// direct connection to empty the catalog tables between rounds.
struct Stores {
    name: &'static str,
    store: Arc<dyn SharedState>,
    replica: Arc<dyn SharedState>,
    admin: Admin,
    schema: Option<TestSchema>,
}

enum Admin {
    Sqlite(std::sync::Mutex<rusqlite::Connection>),
    Postgres(tokio_postgres::Client),
}

impl Admin {
    async fn run(&self, sql: &str) {
        match self {
            Admin::Sqlite(c) => c.lock().expect("admin").execute_batch(sql).expect("admin statement"),
            Admin::Postgres(c) => c.batch_execute(sql).await.expect("admin statement"),
        }
    }
}

const EMPTY_ALL: &str =
    "DELETE FROM pilotage_catalog_chain; DELETE FROM pilotage_catalog_lists; DELETE FROM pilotage_catalog_deltas;";

impl Stores {
    fn sqlite(path: &std::path::Path) -> Stores {
        let open = || Arc::new(SqliteState::open(path).expect("sqlite")) as Arc<dyn SharedState>;
        let (store, replica) = (open(), open());
        let admin = Admin::Sqlite(std::sync::Mutex::new(rusqlite::Connection::open(path).expect("admin")));
        Stores { name: "SQLite", store, replica, admin, schema: None }
    }

    /// `None` (and a line saying so) when no PostgreSQL answers.
    async fn postgres() -> Option<Stores> {
        let url = pilotage::state::suite::test_postgres_url();
        if let Err(e) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await {
            println!("no PostgreSQL at {url} ({e}): PostgresState rows skipped");
            return None;
        }
        let schema = TestSchema::create("catalog").await;
        let connect = || async { Arc::new(PostgresState::connect(&schema.url).await.expect("postgres")) };
        let (store, replica): (Arc<dyn SharedState>, Arc<dyn SharedState>) =
            (connect().await, connect().await);
        let (client, connection) = tokio_postgres::connect(&schema.url, tokio_postgres::NoTls).await.ok()?;
        tokio::spawn(connection);
        Some(Stores {
            name: "PostgreSQL",
            store,
            replica,
            admin: Admin::Postgres(client),
            schema: Some(schema),
        })
    }

    async fn finish(self) {
        if let Some(schema) = self.schema {
            schema.drop_all().await;
        }
    }

    /// The store rows at `n` entries: `remember_catalog` (first version, hot, cold, delta
    /// already stored) and `catalog_changes` across the 100 changes from `old` to `new`.
    async fn rows(&self, n: usize, old: &Arc<CatalogSnapshot>, new: &Arc<CatalogSnapshot>) {
        const LANG: &str = "bench/v1";
        let mut times: [Vec<Duration>; 4] = Default::default();
        let mut peaks = [0usize; 4];
        for round in 0..ROUNDS {
            self.admin.run(EMPTY_ALL).await;
            let owner = |what: &str| format!("{what}-{round}");
            let mut record = |i: usize, (time, (), peak): (Duration, (), usize)| {
                times[i].push(time);
                peaks[i] = peaks[i].max(peak);
            };
            record(0, timed_async(self.store.remember_catalog(&owner("hot"), LANG, old)).await);
            record(1, timed_async(self.store.remember_catalog(&owner("hot"), LANG, new)).await);
            self.admin.run("DELETE FROM pilotage_catalog_deltas").await;
            self.admin
                .run(&format!("DELETE FROM pilotage_catalog_lists WHERE version = '{}'", new.version()))
                .await;
            self.store.remember_catalog(&owner("cold"), LANG, old).await.expect("remember");
            record(2, timed_async(self.replica.remember_catalog(&owner("cold"), LANG, new)).await);
            self.store.remember_catalog(&owner("again"), LANG, old).await.expect("remember");
            record(3, timed_async(self.store.remember_catalog(&owner("again"), LANG, new)).await);
        }
        let what = [
            "first version served (list stored)",
            "next version, hot cache",
            "next version, cold cache",
            "next version, delta already stored",
        ];
        for (i, times) in times.into_iter().enumerate() {
            row(&format!("{} remember_catalog, {}", self.name, what[i]), n, summary(times, peaks[i]));
        }
        let owner = format!("hot-{}", ROUNDS - 1);
        let mut changes = Vec::with_capacity(ROUNDS);
        let mut peak = 0;
        for _ in 0..ROUNDS {
            let (time, got, bytes) =
                timed_async(self.store.catalog_changes(&owner, LANG, old.version(), new)).await;
            assert_eq!(got.map(|c| c.len()), Some(100), "the bench's own sanity check");
            changes.push(time);
            peak = peak.max(bytes);
        }
        row(&format!("{} catalog_changes, 100 changes", self.name), n, summary(changes, peak));
    }
}

/// [`timed`] for a store call, which must succeed.
async fn timed_async<T>(
    f: impl std::future::Future<Output = pilotage::state::StoreResult<T>>,
) -> (Duration, T, usize) {
    let base = IN_USE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let start = Instant::now();
    let got = f.await.expect("store call");
    let time = start.elapsed();
    (time, got, PEAK.load(Ordering::Relaxed).saturating_sub(base))
}
