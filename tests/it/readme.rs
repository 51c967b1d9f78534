//! The README's code compiles: its minimal engine is `examples/calc/main.rs`, verbatim (the
//! example is built by `cargo test`), and its "Use it in your crate" section, followed to the
//! letter, makes a crate that builds offline and passes its tests.

#[test]
fn readme_shows_the_calc_example_verbatim() {
    let readme = include_str!("../../README.md");
    let example = include_str!("../../examples/calc/main.rs");
    let body = example.split_once('\n').map(|(_, rest)| rest).unwrap_or(example);
    assert!(readme.contains(body), "README.md's minimal engine differs from examples/calc/main.rs");
    let code = body.lines().filter(|l| !l.trim().is_empty()).count();
    assert!(code < 40, "the minimal engine should stay under 40 lines of code, has {code}");
}

/// The fenced blocks of `lang` in the README section titled `title`.
fn section_blocks(readme: &str, title: &str, lang: &str) -> Vec<String> {
    let start =
        readme.find(&format!("\n## {title}\n")).unwrap_or_else(|| panic!("README has no section {title}"));
    let rest = &readme[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |e| e + 3);
    pilotage::testkit::fenced_blocks(&rest[..end], lang)
}

/// "Use it in your crate", followed to the letter: a fresh crate under `target/` with the
/// section's `[dependencies]` (pilotage by path, as the section says to do before a release),
/// the calc guides copied to `guides/`, and a `src/main.rs` made of the minimal engine with
/// `guides = "guides"`, the section's `main` and its tests. It must build offline and its tests
/// pass.
///
/// Ignored in the main run: compiling a crate takes minutes of both cores, which would starve
/// the suite's timing-bound tests running beside it. `.ci/run` runs it after the suite
/// (`cargo test --all-features --test it -- --ignored readme::`).
#[test]
#[ignore = "builds a fresh crate for minutes: .ci/run runs it after the suite (--ignored readme::)"]
fn a_fresh_crate_following_use_it_in_your_crate_builds_and_its_tests_pass() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = include_str!("../../README.md");
    let toml = section_blocks(readme, "Use it in your crate", "toml");
    let rust = section_blocks(readme, "Use it in your crate", "rust");
    assert_eq!((toml.len(), rust.len()), (1, 2), "the section shows Cargo.toml, main and the tests");
    let path = format!("pilotage = {{ path = {:?}", root.display().to_string());
    let dependencies = toml[0].replace("pilotage = { version = \"0.1\"", &path);
    assert!(dependencies.contains("path ="), "the section's pilotage dependency: {}", toml[0]);
    let engine = section_blocks(readme, "A minimal engine", "rust").remove(0);
    let engine = engine.split("#[tokio::main]").next().expect("the engine before its main");
    assert!(engine.contains("guides = \"examples/calc/guides\""), "{engine}");
    let engine = engine.replace("guides = \"examples/calc/guides\"", "guides = \"guides\"");

    let dir = root.join("target").join("readme-crate");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::create_dir_all(dir.join("guides")).unwrap();
    for guide in ["core.md", "closed-sets.md"] {
        std::fs::copy(root.join("examples/calc/guides").join(guide), dir.join("guides").join(guide)).unwrap();
    }
    let manifest = format!(
        "[package]\nname = \"my-engine\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n\n{dependencies}"
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    std::fs::write(dir.join("src/main.rs"), format!("{engine}{}\n{}", rust[0], rust[1])).unwrap();

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = std::process::Command::new(cargo)
        .args(["test", "--offline", "--quiet"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", root.join("target"))
        .output()
        .expect("cargo runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the crate of 'Use it in your crate' fails:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("test result: ok. 2 passed"), "{stdout}");
}
