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
//! the snapshot build time are reported too. Reported, never asserted:
//! `cargo bench --bench catalog`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use pilotage::engine::search::contains_text;
use pilotage::engine::CatalogSnapshot;
use pilotage::model::catalog::CatalogEntry;
use pilotage::state::catalog_history::changed_since;

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
        let base = IN_USE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        let start = Instant::now();
        let got = f();
        times.push(start.elapsed());
        peak = peak.max(PEAK.load(Ordering::Relaxed) - base);
        assert_eq!(got, expect, "the bench's own sanity check");
    }
    times.sort();
    (times[ROUNDS / 2], times[0], times[ROUNDS - 1], peak)
}

fn row(what: &str, n: usize, (median, min, max, peak): (Duration, Duration, Duration, usize)) {
    println!(
        "{what:<44} {n:>9} entries: median {median:>12.3?} (range {min:.3?} - {max:.3?}), peak {:.1} KiB allocated",
        peak as f64 / 1024.0
    );
}

fn main() {
    for n in [1_000, 100_000, 1_000_000] {
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
}
