//! The digest behind every engine's `world_fingerprint` tool.
//!
//! Each engine includes it with `#[path = "../../common/digest.rs"] mod digest;`.

// A server or test that hosts several engines includes this file once per engine.
#![allow(clippy::duplicate_mod)]

/// A 128-bit FNV-1a digest of `bytes` as 32 hex digits (two 64-bit lanes with different
/// offsets): stable across runs and platforms, enough to tell two world states apart.
pub fn fingerprint(bytes: &[u8]) -> String {
    let lane = |mut h: u64| {
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h
    };
    format!("{:016x}{:016x}", lane(0xcbf2_9ce4_8422_2325), lane(0x6c62_272e_07bb_0142))
}
