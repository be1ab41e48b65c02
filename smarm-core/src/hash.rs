//! The hash smarm uses for its own keys: timer sequence numbers, registry
//! names. A multiply-rotate step over 8-byte words (FxHash's), computable
//! in a `const fn`, so a name constant can carry its hash. These keys are
//! a program's own counters and constants, never attacker-chosen, so
//! SipHash's resistance to collision attacks buys nothing here and costs a
//! few dozen instructions per lookup.
//!
//! ```
//! use smarm_core::hash::{hash_bytes, BuildWordHasher};
//! use std::collections::HashMap;
//!
//! const COUNTER: u64 = hash_bytes(b"counter"); // at compile time
//! assert_eq!(COUNTER, hash_bytes("counter".as_bytes()));
//!
//! let mut by_name: HashMap<&str, u32, BuildWordHasher> = HashMap::default();
//! by_name.insert("counter", 1);
//! assert_eq!(by_name["counter"], 1);
//! ```

use std::hash::{BuildHasherDefault, Hasher};

const K: u64 = 0x517c_c1b7_2722_0a95;

#[inline]
const fn step(h: u64, word: u64) -> u64 {
    (h.rotate_left(5) ^ word).wrapping_mul(K)
}

/// Hash `bytes`, in a `const` context too.
pub const fn hash_bytes(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0;
    let mut i = 0;
    while i < bytes.len() {
        let mut word: u64 = 0;
        let mut j = 0;
        while j < 8 && i + j < bytes.len() {
            word |= (bytes[i + j] as u64) << (8 * j);
            j += 1;
        }
        h = step(h, word);
        i += 8;
    }
    step(h, bytes.len() as u64)
}

/// [`hash_bytes`]'s step as a [`Hasher`], for `HashMap`s keyed by names
/// or counters: one multiply per `u64`, one per 8 bytes of text.
#[derive(Debug, Default, Clone, Copy)]
pub struct WordHasher(u64);

impl Hasher for WordHasher {
    /// The state rotated: a multiply mixes each input bit only into the
    /// bits above it, and a hash table picks buckets from the low bits, so
    /// keys that differ only high up (a pid's slot index sits in its upper
    /// half) would share one bucket. The rotation brings the well-mixed
    /// high bits down (as rustc-hash 2's `FxHasher` does).
    #[inline]
    fn finish(&self) -> u64 {
        self.0.rotate_left(26)
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        self.0 = step(self.0, hash_bytes(bytes));
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = step(self.0, n);
    }
}

/// Builds [`WordHasher`]s: `HashMap<K, V, BuildWordHasher>`.
pub type BuildWordHasher = BuildHasherDefault<WordHasher>;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Keys that differ only in their upper half (pids: the slot index is
    /// there) still spread over a table's low-bit buckets.
    #[test]
    fn keys_differing_only_high_up_spread_over_low_bits() {
        let buckets: HashSet<u64> = (0..1024u64)
            .map(|index| {
                let mut h = WordHasher::default();
                h.write_u64((index << 32) | 1);
                h.finish() & 1023
            })
            .collect();
        // A uniform hash fills about 63% of 1024 buckets with 1024 keys;
        // without the rotation every key lands in one.
        assert!(buckets.len() > 500, "{} buckets used", buckets.len());
    }
}
