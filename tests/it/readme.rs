//! The README's minimal engine is `examples/calc/main.rs`, verbatim: the example is built by
//! `cargo test`, so the README's code compiles.

#[test]
fn readme_shows_the_calc_example_verbatim() {
    let readme = include_str!("../../README.md");
    let example = include_str!("../../examples/calc/main.rs");
    let body = example.split_once('\n').map(|(_, rest)| rest).unwrap_or(example);
    assert!(readme.contains(body), "README.md's minimal engine differs from examples/calc/main.rs");
    let code = body.lines().filter(|l| !l.trim().is_empty()).count();
    assert!(code < 40, "the minimal engine should stay under 40 lines of code, has {code}");
}
