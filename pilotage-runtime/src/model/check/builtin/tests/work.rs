//! The work bound is honest: what a keyword reads of the instance counts, a doubling chain of
//! `$ref`s ends within the bound whatever keyword it ends in, and `uniqueItems` reads whole
//! values.

use std::time::Instant;

use serde_json::{json, Value};

use super::super::budget::MAX_WORK;
use super::super::eval;
use super::compiled;

/// The most one charge can pass the bound by in these cases (the last value read).
const SLACK: u64 = 10_000;

/// The faults and the work of checking `instance` against `schema`, every fault asked for.
fn checked(schema: &Value, instance: &Value) -> (Vec<super::Fault>, u64) {
    let check = compiled(schema);
    eval::faults(&check.nodes, instance, usize::MAX)
}

fn work(schema: &Value, instance: &Value) -> u64 {
    checked(schema, instance).1
}

/// A schema of about 1.3 KB: a chain of `$defs`, each level applying the next twice (2^levels
/// evaluations of the last), the last holding `leaf`.
fn doubling(levels: usize, leaf: Value) -> Value {
    let mut defs = serde_json::Map::new();
    for level in 0..levels {
        let next = json!({"$ref": format!("#/$defs/d{}", level + 1)});
        defs.insert(format!("d{level}"), json!({"allOf": [next.clone(), next]}));
    }
    defs.insert(format!("d{levels}"), leaf);
    json!({"$defs": defs, "$ref": "#/$defs/d0"})
}

#[test]
fn what_a_keyword_reads_counts_as_work() {
    let text = |n: usize| json!("a".repeat(n));
    let items = |n: usize| Value::Array((0..n).map(|i| json!({"k": [i, {"v": i}]})).collect());
    let long = (0..1000).map(|i| json!(i)).collect::<Vec<_>>();
    let cases = [
        (json!({"minLength": 1}), text(10), text(64_000)),
        (json!({"maxLength": 1_000_000}), text(10), text(64_000)),
        (json!({"uniqueItems": true}), items(20), items(2_000)),
        (json!({"uniqueItems": true}), items(3), items(15)),
        (json!({"const": long.clone()}), json!([1]), Value::Array(long.clone())),
        (json!({"enum": [1, 2, long.clone()]}), json!(1), Value::Array(long)),
        (
            json!({"const": "b".repeat(64_000)}),
            json!("b"),
            text(64_000).as_str().map(|t| json!(t.replace('a', "b"))).unwrap(),
        ),
        (
            json!({"properties": {"x": {"type": "string"}}, "additionalProperties": {}}),
            json!({}),
            json!({"a": 1, "b": 2, "c": 3}),
        ),
    ];
    for (schema, small, large) in cases {
        let (little, much) = (work(&schema, &small), work(&schema, &large));
        // A large instance costs at least one unit per 64 bytes, per value or per member it reads.
        let read = match &large {
            Value::String(s) => s.len() as u64 / 64,
            Value::Array(items) => items.len() as u64,
            Value::Object(members) => members.len() as u64,
            _ => 0,
        };
        assert!(
            much >= read && much > little,
            "{schema}: {little} units for the small, {much} for the large"
        );
    }
}

#[test]
fn doubling_chains_end_within_the_bound_whatever_their_last_keyword() {
    let distinct: Vec<Value> = (0..500).map(|i| json!(i)).collect();
    let listed: Vec<Value> = (0..60).map(|i| json!(i)).collect();
    let options: Vec<Value> = (0..16).map(|i| json!(format!("option {i:02}"))).collect();
    let last = options.last().cloned().unwrap_or_default();
    let cases = [
        (json!({"uniqueItems": true}), Value::Array(distinct)),
        (json!({"const": listed.clone()}), Value::Array(listed)),
        (json!({"enum": options}), last),
        (json!({"minLength": 1}), json!("x".repeat(8_000))),
    ];
    for (leaf, instance) in cases {
        let schema = doubling(24, leaf.clone());
        let size = schema.to_string().len();
        assert!(size < 2_000, "{size} bytes");
        let started = Instant::now();
        let (faults, work) = checked(&schema, &instance);
        let elapsed = started.elapsed();
        let name = leaf.as_object().and_then(|m| m.keys().next()).cloned().unwrap_or_default();
        eprintln!("{name}: {size}-byte schema, {work} units, {elapsed:?}");
        assert!(work <= MAX_WORK + SLACK, "{leaf}: {work} units");
        // The instance conforms: the bound refuses it (the chain is 2^24 evaluations deep).
        assert_eq!(faults.len(), 1, "{leaf}: {faults:?}");
        assert!(faults[0].message.contains("work bound"), "{faults:?}");
        // The same chain short enough to finish answers, and the answer is right.
        let (faults, work) = checked(&doubling(4, leaf.clone()), &instance);
        assert_eq!((faults, work <= MAX_WORK), (vec![], true), "{leaf}");
    }
}

#[test]
fn faults_run_on_one_budget_and_stop_once() {
    // A chain whose every fault is described past the bound: deciding spends part of it, the
    // description the rest, and the check stops once, with one fault.
    let schema = doubling(24, json!({"type": "string"}));
    let (faults, spent) = checked(&schema, &json!(1));
    assert!(spent <= MAX_WORK + SLACK, "{spent} units");
    assert_eq!(faults.len(), 1, "{faults:?}");
    assert!(faults[0].message.contains("work bound"), "{faults:?}");
    // A failing instance is evaluated once, as a conforming one is: the same work, and its
    // faults besides.
    let schema = doubling(3, json!({"minimum": 0}));
    let (ok, fail) = (work(&schema, &json!(1)), checked(&schema, &json!(-1)));
    assert_eq!(fail.0.len(), 8, "{:?}", fail.0);
    assert_eq!(fail.1, ok + 8, "{ok} units to pass, {} to fail", fail.1);
}

#[test]
fn unique_items_reads_whole_values() {
    let check = compiled(&json!({"uniqueItems": true}));
    let deep = |i: usize| json!({"a": {"b": {"c": {"d": {"e": i}}}}});
    let mut items: Vec<Value> = (0..100_000).map(deep).collect();
    let (faults, work) = eval::faults(&check.nodes, &Value::Array(items.clone()), 10);
    assert_eq!(faults, vec![], "{work} units");
    assert!(check.is_valid(&Value::Array(items.clone())));
    // Two items equal below the third level, and only there.
    items.push(deep(99_999));
    let fault = check.first_fault(&Value::Array(items)).expect("a duplicate");
    assert!(fault.message.ends_with("has non-unique elements"), "{fault:?}");
    // Member order does not matter, item order does, and 1 is 1.0.
    assert!(!check.is_valid(&json!([{"x": 1, "y": [1, 2]}, {"y": [1.0, 2], "x": 1.0}, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16])));
    assert!(check.is_valid(&json!([{"x": 1, "y": [1, 2]}, {"y": [2, 1], "x": 1}, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16])));
}

/// The time of a check at its bound, for `docs/schema-check.md` (not a test: it asserts
/// nothing about time). In a release build:
/// `cargo test --release -p pilotage-runtime --lib timing_at_the_bound -- --ignored --nocapture`.
#[test]
#[ignore = "prints timings; run in a release build"]
fn timing_at_the_bound() {
    let ints: Vec<Value> = (0..500).map(|i| json!(i)).collect();
    let deep: Vec<Value> = (0..500).map(|i| json!({"a": {"b": {"c": {"d": i}}}})).collect();
    let listed: Vec<Value> = (0..60).map(|i| json!(i)).collect();
    let options: Vec<Value> = (0..16).map(|i| json!(format!("option {i:02}"))).collect();
    let last = options.last().cloned().unwrap_or_default();
    let cases = [
        ("uniqueItems, 500 integers", json!({"uniqueItems": true}), Value::Array(ints)),
        ("uniqueItems, 500 objects 4 deep", json!({"uniqueItems": true}), Value::Array(deep)),
        ("const, 60 integers", json!({"const": listed.clone()}), Value::Array(listed)),
        ("enum, 16 strings", json!({"enum": options}), last),
        ("minLength, 8,000 characters", json!({"minLength": 1}), json!("x".repeat(8_000))),
    ];
    for (name, leaf, instance) in cases {
        let schema = doubling(24, leaf);
        let check = compiled(&schema);
        let mut best = std::time::Duration::MAX;
        for _ in 0..5 {
            let started = Instant::now();
            let faults = check.faults(&instance, 1_000);
            best = best.min(started.elapsed());
            assert_eq!(faults.len(), 1);
        }
        let size = schema.to_string().len();
        println!("{name}: {size}-byte schema, {} bytes of input: {best:?}", instance.to_string().len());
    }
    let items: Vec<Value> = (0..100_000).map(|i| json!({"a": {"b": {"c": {"d": {"e": i}}}}})).collect();
    let check = compiled(&json!({"uniqueItems": true}));
    let started = Instant::now();
    assert!(check.is_valid(&Value::Array(items)));
    println!("uniqueItems, 100,000 distinct objects 5 deep: {:?}", started.elapsed());
}
