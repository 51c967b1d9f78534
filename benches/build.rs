//! What a minimal engine crate costs to build, against a minimal rmcp server.
//!
//! Two crates under `benches/build/`, each copied into `target/build-bench/` and built there with
//! a target directory of its own (debug profile, cargo's default jobs):
//! - `engine`: the README's calc engine over stdio (`examples/calc/main.rs` with its guides, copied
//!   in), `pilotage` with `default-features = false`;
//! - `rmcp`: one `#[tool_router]` tool over stdio, rmcp with `server`, `macros`, `transport-io`.
//!
//! Each round builds both sides from clean (`cargo clean`, then `cargo build`), then rebuilds
//! each after touching its `src/main.rs` (incremental), alternating which side goes first. Each
//! row reports the medians of wall time and of CPU time (user + system of the builds), their
//! ranges, and the ratio engine / rmcp. Both copies start from the workspace's `Cargo.lock`, so
//! the crates they share resolve to the same versions. `BUILD_ROUNDS` (default 3) sets the
//! rounds. `cargo bench --bench build`; it needs crates.io once (for `rmcp-macros`, which the
//! workspace does not use), then the local registry.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The time one build took.
#[derive(Clone, Copy)]
struct Took {
    wall: Duration,
    cpu: Duration,
}

/// The CPU time all waited-for children used so far (user + system).
fn children_cpu() -> Duration {
    // SAFETY: getrusage writes into the zeroed struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) } != 0 {
        return Duration::ZERO;
    }
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// One side: its folder under `target/build-bench/`.
struct Side {
    name: &'static str,
    dir: PathBuf,
}

impl Side {
    /// Copies `benches/build/<name>` to `bench/<name>`, pointing its `pilotage` at the checkout.
    fn prepare(root: &Path, bench: &Path, name: &'static str) -> Side {
        let from = root.join("benches/build").join(name);
        let dir = bench.join(name);
        let _ = std::fs::remove_dir_all(dir.join("src"));
        copy_tree(&from, &dir);
        let manifest = std::fs::read_to_string(from.join("Cargo.toml.in")).expect("Cargo.toml.in");
        let manifest = manifest.replace("@PILOTAGE@", &root.display().to_string());
        std::fs::write(dir.join("Cargo.toml"), manifest).expect("write Cargo.toml");
        let _ = std::fs::remove_file(dir.join("Cargo.toml.in"));
        std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).expect("copy Cargo.lock");
        if name == "engine" {
            let calc = std::fs::read_to_string(root.join("examples/calc/main.rs")).expect("the calc example");
            let main = calc.replace("guides = \"examples/calc/guides\"", "guides = \"guides\"");
            assert_ne!(main, calc, "the calc example names its guide folder");
            std::fs::create_dir_all(dir.join("src")).expect("create src");
            std::fs::write(dir.join("src/main.rs"), main).expect("write main.rs");
            copy_tree(&root.join("examples/calc/guides"), &dir.join("guides"));
        }
        Side { name, dir }
    }

    fn cargo(&self, args: &[&str]) -> Took {
        let (start, cpu) = (Instant::now(), children_cpu());
        let status = Command::new(env!("CARGO"))
            .args(args)
            .arg("--quiet")
            .current_dir(&self.dir)
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("RUSTFLAGS")
            .env("CARGO_TARGET_DIR", self.dir.join("target"))
            .status()
            .expect("run cargo");
        assert!(status.success(), "cargo {args:?} failed in {}", self.dir.display());
        Took { wall: start.elapsed(), cpu: children_cpu().saturating_sub(cpu) }
    }

    fn clean_build(&self) -> Took {
        self.cargo(&["clean"]);
        self.cargo(&["build"])
    }

    fn incremental_build(&self) -> Took {
        let main = self.dir.join("src/main.rs");
        let text = std::fs::read_to_string(&main).expect("read main.rs");
        std::fs::write(&main, format!("{text}\n")).expect("touch main.rs");
        self.cargo(&["build"])
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create dir");
    for entry in std::fs::read_dir(from).expect("read dir").flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

/// Median, least and most of `values`.
fn spread(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    (values[values.len() / 2], values[0], values[values.len() - 1])
}

fn row(what: &str, engine: &[Took], rmcp: &[Took]) {
    let secs = |v: &[Took], f: fn(&Took) -> Duration| spread(v.iter().map(|t| f(t).as_secs_f64()).collect());
    for (measure, f) in [("wall", (|t: &Took| t.wall) as fn(&Took) -> Duration), ("CPU", |t: &Took| t.cpu)] {
        let (e, e_lo, e_hi) = secs(engine, f);
        let (r, r_lo, r_hi) = secs(rmcp, f);
        let ratios: Vec<f64> =
            engine.iter().zip(rmcp).map(|(a, b)| f(a).as_secs_f64() / f(b).as_secs_f64()).collect();
        let (ratio, lo, hi) = spread(ratios);
        println!(
            "| {what}, {measure} | {e:.2} s ({e_lo:.2}-{e_hi:.2}) | {r:.2} s ({r_lo:.2}-{r_hi:.2}) | {ratio:.2} ({lo:.2}-{hi:.2}) |"
        );
    }
}

fn main() {
    let rounds: usize = std::env::var("BUILD_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(3).max(1);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let bench = root.join("target/build-bench");
    let sides = [Side::prepare(&root, &bench, "engine"), Side::prepare(&root, &bench, "rmcp")];
    for side in &sides {
        side.cargo(&["fetch"]);
    }
    let (mut clean, mut incremental) = ([vec![], vec![]], [vec![], vec![]]);
    for round in 0..rounds {
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            clean[i].push(sides[i].clean_build());
            incremental[i].push(sides[i].incremental_build());
            let (c, n) = (clean[i][round], incremental[i][round]);
            eprintln!(
                "round {round} {}: clean {:.2} s ({:.2} s CPU), incremental {:.2} s ({:.2} s CPU)",
                sides[i].name,
                c.wall.as_secs_f64(),
                c.cpu.as_secs_f64(),
                n.wall.as_secs_f64(),
                n.cpu.as_secs_f64()
            );
        }
    }
    println!("| debug build | minimal engine | minimal rmcp server | engine / rmcp |");
    println!("| --- | --- | --- | --- |");
    row("clean", &clean[0], &clean[1]);
    row("incremental", &incremental[0], &incremental[1]);
}
