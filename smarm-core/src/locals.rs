//! `RuntimeLocals`: one value of each type per runtime, for the layers
//! that keep per-runtime state of their own (the IO driver, the OTP
//! registry), so that the runtime's assembly does not name them.
//!
//! # Design
//!
//! An append-only list of chunks of `CHUNK` entries, each a `OnceLock`
//! holding a type id and a boxed value. A lookup walks the filled entries
//! without a lock; a miss takes the fill lock, looks again, and fills the
//! next free entry (growing the list by a chunk when the last one is full),
//! so the number of types is not bounded.
//!
//! # Invariants
//!
//! - (L1) An entry is filled once, with a value of the type its id names,
//!   and never emptied or moved while the runtime lives: a reference to a
//!   value lives as long as the `RuntimeLocals`.
//! - (L2) Entries fill in order, so a lookup may stop at the first empty
//!   one: every later entry is empty too, or was filled after the lookup
//!   began (and the fill lock's re-check finds it).

use std::any::{Any, TypeId};
use std::sync::{Mutex, OnceLock};

/// Entries per chunk.
const CHUNK: usize = 8;

type Entry = OnceLock<(TypeId, Box<dyn Any + Send + Sync>)>;

struct Chunk {
    entries: [Entry; CHUNK],
    next: OnceLock<Box<Chunk>>,
}

impl Chunk {
    fn new() -> Self {
        Chunk {
            entries: Default::default(),
            next: OnceLock::new(),
        }
    }
}

/// One value per type, per runtime (see the module docs).
pub(crate) struct RuntimeLocals {
    head: Chunk,
    /// Serialises filling an entry.
    fill: Mutex<()>,
}

impl RuntimeLocals {
    pub(crate) fn new() -> Self {
        RuntimeLocals {
            head: Chunk::new(),
            fill: Mutex::new(()),
        }
    }

    /// This runtime's `T`, created with `T::default()` on first use.
    #[inline]
    pub(crate) fn get_or_default<T: Any + Send + Sync + Default>(&self) -> &T {
        match self.find::<T>() {
            Some(t) => t,
            None => self.fill::<T>(),
        }
    }

    #[inline]
    fn find<T: Any>(&self) -> Option<&T> {
        let mut chunk = &self.head;
        loop {
            for entry in &chunk.entries {
                let (id, value) = entry.get()?; // (L2)
                if *id == TypeId::of::<T>() {
                    let value: *const (dyn Any + Send + Sync) = &**value;
                    // SAFETY: an entry is filled with a `T` beside
                    // `TypeId::of::<T>()` only (L1), so the value found by
                    // that id is a `T` (the cast skips `downcast_ref`'s
                    // virtual call on this hot path).
                    return Some(unsafe { &*value.cast::<T>() });
                }
            }
            chunk = chunk.next.get()?;
        }
    }

    /// Make and publish this runtime's `T`. `T::default()` runs before the
    /// fill lock is taken: it may use other locals, and a racing fill of the
    /// same type just drops the loser's value.
    #[cold]
    fn fill<T: Any + Send + Sync + Default>(&self) -> &T {
        let mut made = Some(Box::new(T::default()) as Box<dyn Any + Send + Sync>);
        let _fill = crate::lock::lock_std(&self.fill);
        if let Some(t) = self.find::<T>() {
            return t;
        }
        let mut chunk = &self.head;
        loop {
            if let Some(entry) = chunk.entries.iter().find(|e| e.get().is_none()) {
                let (_, value) = entry.get_or_init(|| {
                    let value = match made.take() {
                        Some(value) => value,
                        None => Box::new(T::default()),
                    };
                    (TypeId::of::<T>(), value)
                });
                match value.downcast_ref::<T>() {
                    Some(t) => return t,
                    None => unreachable!("the entry was empty under the fill lock"),
                }
            }
            chunk = chunk.next.get_or_init(|| Box::new(Chunk::new()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Default)]
    struct Counter(AtomicUsize);

    /// Distinct types by a const parameter, to fill several chunks.
    #[derive(Default)]
    struct Tagged<const N: usize>(AtomicUsize);

    #[test]
    fn one_value_per_type_however_many_types() {
        let locals = RuntimeLocals::new();
        locals
            .get_or_default::<Counter>()
            .0
            .fetch_add(1, Ordering::Relaxed);
        assert_eq!(
            locals.get_or_default::<Counter>().0.load(Ordering::Relaxed),
            1
        );
        macro_rules! touch {
            ($($n:literal)*) => {$(
                locals.get_or_default::<Tagged<$n>>().0.store($n, Ordering::Relaxed);
            )*};
        }
        touch!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19);
        macro_rules! check {
            ($($n:literal)*) => {$(
                assert_eq!(locals.get_or_default::<Tagged<$n>>().0.load(Ordering::Relaxed), $n);
            )*};
        }
        check!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19);
        assert_eq!(
            locals.get_or_default::<Counter>().0.load(Ordering::Relaxed),
            1
        );
    }
}
