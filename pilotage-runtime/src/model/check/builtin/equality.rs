//! JSON equality and `uniqueItems`, each value read charged to the work bound: a comparison
//! or a hash costs what it reads, however large the values.

use std::cmp::Ordering;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

use serde_json::Value;

use super::budget::{text_cost, Budget};
use super::values::compare_numbers;

/// Up to this many items, `uniqueItems` compares every pair; past it, it hashes.
const PAIRWISE: usize = 15;

/// JSON equality (numbers by value, objects regardless of member order), without recursion,
/// each pair of values compared charged to `budget`: false once the bound is passed.
pub(super) fn json_eq(budget: &mut Budget, a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(_), Value::Array(_)) | (Value::Object(_), Value::Object(_)) => {
            containers_eq(budget, a, b)
        }
        _ => scalars_eq(budget, a, b),
    }
}

fn containers_eq(budget: &mut Budget, a: &Value, b: &Value) -> bool {
    let mut stack = vec![(a, b)];
    while let Some(pair) = stack.pop() {
        let same = match pair {
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
                stack.extend(x.iter().zip(y));
                budget.spend()
            }
            (Value::Object(x), Value::Object(y)) if x.len() == y.len() => {
                for (name, member) in x {
                    let Some(other) = y.get(name) else { return false };
                    if !budget.charge(text_cost(name)) {
                        return false;
                    }
                    stack.push((member, other));
                }
                budget.spend()
            }
            (x, y) => scalars_eq(budget, x, y),
        };
        if !same {
            return false;
        }
    }
    true
}

fn scalars_eq(budget: &mut Budget, a: &Value, b: &Value) -> bool {
    let same = match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        // Texts of different lengths differ without being read.
        (Value::String(x), Value::String(y)) if x.len() == y.len() => {
            return budget.charge(1 + text_cost(x)) && x == y;
        }
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y) == Some(Ordering::Equal),
        _ => false,
    };
    budget.spend() && same
}

/// `uniqueItems`: pairwise for a few items; past that, every item is hashed whole (its every
/// node and text charged), the hashes sorted (a unit per item), and only items whose hashes
/// agree compared, each comparison charged as [`json_eq`] is.
pub(super) fn unique(budget: &mut Budget, items: &[Value]) -> bool {
    if items.len() <= PAIRWISE {
        return distinct(budget, items.iter());
    }
    let keys = Keys::new();
    let mut hashes = Vec::with_capacity(items.len());
    let mut stack = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Some(hash) = hash_value(budget, &keys, &mut stack, item) else { return false };
        hashes.push((hash, i));
    }
    if !budget.charge(items.len() as u64) {
        return false;
    }
    hashes.sort_unstable();
    hashes
        .chunk_by(|a, b| a.0 == b.0)
        .all(|same| same.len() == 1 || distinct(budget, same.iter().filter_map(|(_, i)| items.get(*i))))
}

/// Whether no two of `items` are equal, comparing every pair: false once the bound is passed.
fn distinct<'v>(budget: &mut Budget, items: impl Iterator<Item = &'v Value> + Clone) -> bool {
    let mut rest = items;
    while let Some(x) = rest.next() {
        for y in rest.clone() {
            if json_eq(budget, x, y) || budget.stop.is_some() {
                return false;
            }
        }
    }
    true
}

/// The key of one check's hashes, drawn per check: an instance cannot be built to make its
/// items collide (a collision only costs a charged comparison, never a wrong answer).
struct Keys {
    seed: u64,
}

impl Keys {
    fn new() -> Keys {
        Keys { seed: RandomState::new().hash_one(0x5eed_u64) }
    }

    /// A node (`kind`, `content`) at location `at`, mixed with the seed.
    fn node(&self, at: u64, kind: u64, content: u64) -> u64 {
        mix(mix(self.seed ^ at ^ kind) ^ content)
    }

    /// A text, eight bytes at a time.
    fn text(&self, text: &str) -> u64 {
        let mut hash = mix(self.seed ^ text.len() as u64);
        for chunk in text.as_bytes().chunks(8) {
            let mut word = [0u8; 8];
            word.iter_mut().zip(chunk).for_each(|(w, c)| *w = *c);
            hash = mix(hash ^ u64::from_le_bytes(word));
        }
        hash
    }
}

/// The finaliser of splitmix64: a bijection of `u64` spreading every input bit.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A hash of the whole of `value` agreeing with [`json_eq`] (equal values hash alike), without
/// recursion: the sum of one hash per node, each of the node and its location (member names
/// and item indices from the root), so that member order does not matter and item order does.
/// Each node costs a unit, and member names and strings their text. `None` once the work
/// bound is passed.
fn hash_value<'v>(
    budget: &mut Budget,
    keys: &Keys,
    stack: &mut Vec<(&'v Value, u64)>,
    value: &'v Value,
) -> Option<u64> {
    let mut sum = 0u64;
    stack.clear();
    stack.push((value, 0));
    while let Some((value, at)) = stack.pop() {
        let mut cost = 1;
        let hash = match value {
            Value::Null => keys.node(at, 0, 0),
            Value::Bool(b) => keys.node(at, 1, u64::from(*b)),
            Value::Number(n) => {
                // Equal numbers convert to the same float (1 and 1.0 alike; 0 and -0.0 alike).
                let f = n.as_f64().unwrap_or(0.0);
                keys.node(at, 2, if f == 0.0 { 0 } else { f.to_bits() })
            }
            Value::String(s) => {
                cost += text_cost(s);
                keys.node(at, 3, keys.text(s))
            }
            Value::Array(items) => {
                let located = items.iter().enumerate().map(|(i, item)| (item, keys.node(at, 6, i as u64)));
                stack.extend(located);
                keys.node(at, 4, items.len() as u64)
            }
            Value::Object(members) => {
                for (name, member) in members {
                    cost += text_cost(name);
                    stack.push((member, keys.node(at, 7, keys.text(name))));
                }
                keys.node(at, 5, members.len() as u64)
            }
        };
        if !budget.charge(cost) {
            return None;
        }
        sum = sum.wrapping_add(hash);
    }
    Some(sum)
}
