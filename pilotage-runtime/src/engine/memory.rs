//! What a JSON value really costs the server's memory, as opposed to the length of its text.
//!
//! A run's [`Budget`](super::Budget) bounds the bytes it makes the server hold. Counted as
//! JSON text, a copy of `[0,0,0,…]` costs two bytes an item, while each item is a whole
//! `serde_json::Value` in memory (80 bytes here, with `preserve_order`): a program copying such
//! a list by reference was charged 16 MiB while it held over 500 MB. So the runtime charges
//! trace entries by [`value_memory`], and an engine that builds values charges them the same
//! way ([`Budget::charge_value`](super::Budget::charge_value), or [`node_memory`] node by node
//! before it builds them), which keeps what a run is charged within a factor of two of what it
//! allocates (the unit tests count the allocations).

use std::mem::size_of;

use serde_json::Value;

/// Bytes one `Value` takes where it is held inline: an item of an array, a member of an
/// object, a variable.
pub const VALUE_SLOT: usize = size_of::<Value>();

/// One object member as `serde_json::Map` keeps it (`preserve_order`: an `IndexMap` entry of
/// hash, key and value).
const MEMBER_SLOT: usize = size_of::<usize>() + size_of::<String>() + VALUE_SLOT;

/// Bytes a heap block of `n` bytes takes: `n` with the allocator's header and the rounding to
/// 16 (0 for no block).
pub(crate) fn block(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        n.saturating_add(8 + 15) & !15
    }
}

/// The blocks of an object's hash index of `len` members: one word and one control byte a
/// bucket, buckets a power of two at most 7/8 full.
fn index_block(len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    let buckets = if len < 4 {
        4
    } else {
        (len.saturating_mul(8) / 7).checked_next_power_of_two().unwrap_or(usize::MAX)
    };
    block(buckets.saturating_mul(size_of::<usize>() + 1).saturating_add(16))
}

/// Bytes `v` holds in memory, its own slot and every nested value included: what a copy of it
/// costs the server.
pub fn value_memory(v: &Value) -> usize {
    VALUE_SLOT.saturating_add(tree(v))
}

/// Bytes one trace step holds in memory: its entry, its strings, its input and output and its
/// decisions. What a Run is charged for each step it records: at least the length of the
/// step's text, which is what a kept record holds of it (`MemoryRunStore`, in the state room),
/// so that a run within its budget has a record within it too.
pub(crate) fn step_memory(step: &crate::model::trace::TraceStep) -> usize {
    let text = |s: &str| block(s.len());
    let value = |v: Option<&Value>| v.map_or(0, value_memory);
    let decisions = step.decisions.as_ref().map_or(0, |d| {
        d.iter().fold(block(d.len() * size_of::<crate::model::trace::Decision>()), |sum, d| {
            sum + text(&d.at) + text(&d.took) + text(&d.because)
        })
    });
    size_of::<crate::model::trace::TraceStep>()
        + text(&step.id)
        + step.calls.as_deref().map_or(0, text)
        + value(step.input.as_ref())
        + value(step.output.as_ref())
        + step.outcome.error().map_or(0, text)
        + decisions
}

/// The heap blocks of `v` and of everything nested in it (not `v`'s own slot).
fn tree(v: &Value) -> usize {
    let own = node_memory(v);
    match v {
        Value::Array(items) => items.iter().fold(own, |sum, item| sum.saturating_add(tree(item))),
        Value::Object(members) => members.values().fold(own, |sum, m| sum.saturating_add(tree(m))),
        _ => own,
    }
}

/// The heap blocks `v` itself owns, without the values nested in it: a string's bytes; an
/// array's item slots; an object's members, their keys and its index. An engine that builds a
/// value from a template of the same shape charges this for each node before building it.
pub fn node_memory(v: &Value) -> usize {
    match v {
        Value::String(s) => block(s.capacity()),
        Value::Array(items) => block(items.capacity().saturating_mul(VALUE_SLOT)),
        Value::Object(members) => {
            let keys = members.keys().fold(0usize, |sum, k| sum.saturating_add(block(k.capacity())));
            block(members.len().saturating_mul(MEMBER_SLOT))
                .saturating_add(index_block(members.len()))
                .saturating_add(keys)
        }
        _ => 0,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    use serde_json::{json, Value};

    use super::value_memory;

    /// Counts, per thread, the bytes allocated and freed, each block with the allocator's own
    /// overhead as glibc lays it out (header, rounding to 16, at least 32).
    struct Counting;

    thread_local! {
        static HELD: Cell<isize> = const { Cell::new(0) };
    }

    fn chunk(layout: &Layout) -> isize {
        isize::try_from((layout.size() + 8 + 15) & !15).unwrap_or(isize::MAX).max(32)
    }

    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let _ = HELD.try_with(|h| h.set(h.get() + chunk(&layout)));
            System.alloc(layout)
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            let _ = HELD.try_with(|h| h.set(h.get() - chunk(&layout)));
            System.dealloc(ptr, layout)
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            let new = Layout::from_size_align_unchecked(new_size, layout.align());
            let _ = HELD.try_with(|h| h.set(h.get() - chunk(&layout) + chunk(&new)));
            System.realloc(ptr, layout, new_size)
        }
    }

    #[global_allocator]
    static ALLOCATOR: Counting = Counting;

    /// Bytes this thread holds more after `make` than before, with the value it made (the
    /// blocks counted as glibc lays them out).
    pub(crate) fn held_by<T>(make: impl FnOnce() -> T) -> (usize, T) {
        let before = HELD.with(Cell::get);
        let v = make();
        let after = HELD.with(Cell::get);
        (usize::try_from(after - before).unwrap_or(0), v)
    }

    #[test]
    fn value_memory_is_within_twice_what_a_copy_allocates_either_way() {
        let zeros = Value::Array(vec![json!(0); 5_000]);
        let strings: Value = (0..2_000).map(|i| json!(format!("s{i}"))).collect();
        let objects: Value = (0..1_000).map(|i| json!({"id": i, "name": "n", "tags": [1, 2]})).collect();
        let wide: Value = Value::Object((0..3_000).map(|i| (format!("k{i}"), json!(i))).collect());
        let nested = json!({"a": [[[[]]], {"b": {"c": [null, true, 1.5, "x"]}}], "d": "y".repeat(10_000)});
        let samples = [
            zeros.clone(),
            Value::Array(vec![zeros.clone(); 20]),
            Value::Array(vec![json!([]); 5_000]),
            strings,
            objects,
            wide,
            nested,
            json!("x".repeat(100_000)),
            json!(7),
            json!({}),
        ];
        for sample in samples {
            // A copy, as an engine makes one by cloning or resolving a reference; its slot is
            // on the stack here, so it is added by hand.
            let (held, copy) = held_by(|| sample.clone());
            let real = held + super::VALUE_SLOT;
            let charged = value_memory(&copy);
            let text = copy.to_string().len();
            assert!(
                charged <= 2 * real && real <= 2 * charged,
                "charged {charged}, real {real}, text {text}"
            );
        }
    }

    #[test]
    fn a_list_of_small_values_costs_far_more_than_its_text() {
        let zeros = Value::Array(vec![json!(0); 1_000]);
        assert_eq!(zeros.to_string().len(), 2_001);
        assert!(value_memory(&zeros) >= 1_000 * super::VALUE_SLOT, "{}", value_memory(&zeros));
    }
}
