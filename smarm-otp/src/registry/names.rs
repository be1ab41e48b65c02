//! The registry's lock-free name table: `'static` names to their current
//! binding, read by name-addressed sends without a lock.
//!
//! Open addressing over slots that each hold a key (the name's text) and
//! an atomic pointer to an immutable [`NameValue`]. Writers hold the tables
//! lock: a key, once written to a slot, stays until the table grows (growth
//! copies only bound names into a table twice as large and swaps it in);
//! a binding changes by swapping the value pointer. Every replaced value
//! and table is retired through core's `defer_drop` (read side (F1)). A change costs O(1) and one
//! small allocation, whatever the number of names.
//!
//! # Invariants
//!
//! - (N1) A slot's key is written (length, then the text pointer with
//!   Release) before any reader can reach the slot, and never changes
//!   while the slot array is published; readers load the pointer with
//!   Acquire. Probing stops at the first empty key, and keys are never
//!   removed from a published array, so a lookup never misses a present
//!   name.
//! - (N2) A value points at its holder's inbox: whoever replaces or clears
//!   that inbox replaces the value in the same hold of the lock (read side
//!   (F5)), so an inbox is retired no earlier than the values that point
//!   to it.
//! - (N3) Each value is owned by exactly one published slot, or by the
//!   reclaimer once replaced. A retired slot array (after growth) owns no
//!   values: they moved to its successor.

use super::read_side::Inbox;
use crate::loom::{AtomicPtr, AtomicUsize, Ordering};
use crossbeam_utils::CachePadded;
use smarm_core::Sender;
use smarm_core::hash::hash_bytes as name_hash;
use std::any::{Any, TypeId};
use std::ptr::{null, null_mut};

/// Something a writer unpublished, for the caller to drop once no reader
/// can still hold it (the registry hands it to core's `defer_drop`).
pub(super) type Retired = Box<dyn Any + Send>;

/// A name's binding, as readers see it: the holder's inbox when bound,
/// and in it the sender of the type the name was registered for.
pub(super) struct NameValue {
    inbox: *const Inbox,
    /// The `CachePadded<Sender<M>>` for `msg` in `inbox`, or null.
    sender: *const (),
    msg: TypeId,
}

// SAFETY: the raw pointers are shared, read-only references into inbox
// snapshots, dereferenced only under (N2) and read side (F2); nothing is
// written through them.
unsafe impl Send for NameValue {}
// SAFETY: as above; a value is immutable once built.
unsafe impl Sync for NameValue {}

impl NameValue {
    /// A binding for messages of type `msg` to the holder whose inbox
    /// (if it has published one) is `inbox`. The holder itself is implied:
    /// its exit removes the binding (registry (I4)).
    pub(super) fn new(msg: TypeId, inbox: Option<&Inbox>) -> Self {
        NameValue {
            inbox: inbox.map_or(null(), |i| i as *const Inbox),
            sender: inbox.and_then(|i| i.sender_ptr(msg)).unwrap_or(null()),
            msg,
        }
    }

    /// The holder's inbox when the binding was made or last refreshed.
    #[inline]
    pub(super) fn inbox(&self) -> Option<&Inbox> {
        // SAFETY: the inbox outlives this value (N2), read under read side (F2).
        unsafe { self.inbox.as_ref() }
    }

    /// The sender the name was registered with, if it carries `M`.
    #[inline]
    pub(super) fn sender<M: Send + 'static>(&self) -> Option<&Sender<M>> {
        if self.msg != TypeId::of::<M>() || self.sender.is_null() {
            return None;
        }
        // SAFETY: `sender` is the `CachePadded<Sender<M>>` published for `msg`
        // (== `M`) in the inbox, which outlives this value (N2).
        Some(unsafe { &**self.sender.cast::<CachePadded<Sender<M>>>() })
    }
}

struct Slot {
    key: AtomicPtr<u8>,
    len: AtomicUsize,
    value: AtomicPtr<CachePadded<NameValue>>,
}

impl Slot {
    fn empty() -> Self {
        Slot {
            key: AtomicPtr::new(null_mut()),
            len: AtomicUsize::new(0),
            value: AtomicPtr::new(null_mut()),
        }
    }

    /// Whether this slot's key is `name` (its key loaded with Acquire).
    #[inline]
    fn holds(&self, key: *mut u8, name: &str) -> bool {
        let len = self.len.load(Ordering::Relaxed);
        // A `Name` constant's text is one static string: the pointer
        // usually decides without comparing bytes.
        len == name.len()
            && (std::ptr::eq(key, name.as_ptr())
                // SAFETY: keys are the text of `&'static str` names (N1).
                || unsafe { std::slice::from_raw_parts(key, len) } == name.as_bytes())
    }
}

/// Slots of a new table (it grows past half full).
const INITIAL_SLOTS: usize = 8;

/// Slots per padded group (one 128-byte line pair).
const GROUP: usize = 4;

/// A published array of slots: `groups.len() * GROUP` of them, a power of
/// two, at most half of them keyed.
struct Slots {
    groups: Box<[CachePadded<[Slot; GROUP]>]>,
}

impl Slots {
    fn with_capacity(slots: usize) -> Self {
        let groups = slots.max(GROUP).next_power_of_two() / GROUP;
        Slots {
            groups: (0..groups)
                .map(|_| CachePadded::new(std::array::from_fn(|_| Slot::empty())))
                .collect(),
        }
    }

    fn capacity(&self) -> usize {
        self.groups.len() * GROUP
    }

    #[inline]
    fn slot(&self, i: usize) -> &Slot {
        &self.groups[i / GROUP][i % GROUP]
    }

    /// The slot keyed `name`, or the empty slot where it would go.
    #[inline]
    fn probe(&self, name: &str, hash: u64) -> (&Slot, Option<*mut u8>) {
        let mask = self.capacity() - 1;
        let mut i = hash as usize & mask;
        loop {
            let slot = self.slot(i);
            let key = slot.key.load(Ordering::Acquire);
            if key.is_null() {
                return (slot, None);
            }
            if slot.holds(key, name) {
                return (slot, Some(key));
            }
            i = (i + 1) & mask;
        }
    }
}

/// The name table of one runtime's registry.
pub(super) struct NameTable {
    slots: AtomicPtr<Slots>,
    /// Keyed slots of the current array (writers only).
    used: AtomicUsize,
}

impl Default for NameTable {
    fn default() -> Self {
        NameTable {
            slots: AtomicPtr::new(Box::into_raw(Box::new(Slots::with_capacity(INITIAL_SLOTS)))),
            used: AtomicUsize::new(0),
        }
    }
}

impl NameTable {
    fn current(&self) -> &Slots {
        // SAFETY: always a live array: replaced ones are retired, not
        // dropped (read side (F1)), and read under read side (F2).
        unsafe { &*self.slots.load(Ordering::Acquire) }
    }

    /// The binding of `name` (whose [`name_hash`] is `hash`), alive or not.
    #[inline]
    pub(super) fn get(&self, name: &'static str, hash: u64) -> Option<&NameValue> {
        let (slot, key) = self.current().probe(name, hash);
        key?;
        let value = slot.value.load(Ordering::Acquire);
        // SAFETY: a published value lives until retired after a
        // replacement, read under read side (F2).
        (!value.is_null()).then(|| unsafe { &**value })
    }

    // ----- writers: the tables lock is held (read side (F1)) -----

    /// Bind `name` to `value`, or unbind it with `None`; what it
    /// unpublishes goes to `retire`.
    pub(super) fn set(
        &self,
        name: &'static str,
        value: Option<NameValue>,
        retire: &mut dyn FnMut(Retired),
    ) {
        let hash = name_hash(name.as_bytes());
        let (mut slot, mut key) = self.current().probe(name, hash);
        if key.is_none() {
            if value.is_none() {
                return; // unbinding a name never bound
            }
            if (self.used.load(Ordering::Relaxed) + 1) * 2 > self.current().capacity() {
                self.grow(retire);
                (slot, key) = self.current().probe(name, hash);
            }
            if key.is_none() {
                slot.len.store(name.len(), Ordering::Relaxed);
                slot.key.store(name.as_ptr().cast_mut(), Ordering::Release); // (N1)
                self.used.fetch_add(1, Ordering::Relaxed);
            }
        }
        let new = value.map_or(null_mut(), |v| Box::into_raw(Box::new(CachePadded::new(v))));
        let old = slot.value.swap(new, Ordering::AcqRel);
        if !old.is_null() {
            // SAFETY: from `Box::into_raw`, and no longer reachable (N3).
            retire(unsafe { Box::from_raw(old) });
        }
    }

    /// Move every bound name into an array with room for twice as many,
    /// and publish it (N3).
    fn grow(&self, retire: &mut dyn FnMut(Retired)) {
        let old = self.current();
        let bound: Vec<(&Slot, *mut u8)> = old
            .groups
            .iter()
            .flat_map(|g| g.iter())
            .filter_map(|s| {
                let key = s.key.load(Ordering::Relaxed);
                (!key.is_null() && !s.value.load(Ordering::Relaxed).is_null()).then_some((s, key))
            })
            .collect();
        let next = Slots::with_capacity(bound.len().max(4) * 4);
        for (s, key) in &bound {
            let len = s.len.load(Ordering::Relaxed);
            // SAFETY: keys are the text of `&'static str` names (N1).
            let text = unsafe { std::slice::from_raw_parts(*key, len) };
            let mask = next.capacity() - 1;
            let mut i = name_hash(text) as usize & mask;
            while !next.slot(i).key.load(Ordering::Relaxed).is_null() {
                i = (i + 1) & mask;
            }
            let to = next.slot(i);
            to.len.store(len, Ordering::Relaxed);
            to.key.store(*key, Ordering::Relaxed);
            to.value
                .store(s.value.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        self.used.store(bound.len(), Ordering::Relaxed);
        // The Release half publishes the array's contents (N1).
        let old = self
            .slots
            .swap(Box::into_raw(Box::new(next)), Ordering::AcqRel);
        // SAFETY: from `Box::into_raw`, no longer reachable; its values
        // moved to the new array, and `Slots` does not drop them (N3).
        retire(unsafe { Box::from_raw(old) });
    }
}

impl Drop for NameTable {
    /// The runtime is gone: no reader remains; the current array owns its
    /// values (N3).
    fn drop(&mut self) {
        // SAFETY: from `Box::into_raw`; nothing reads it any more.
        let slots = unsafe { Box::from_raw(self.slots.load(Ordering::Relaxed)) };
        for slot in slots.groups.iter().flat_map(|g| g.iter()) {
            let value = slot.value.load(Ordering::Relaxed);
            if !value.is_null() {
                // SAFETY: owned by this slot (N3).
                drop(unsafe { Box::from_raw(value) });
            }
        }
    }
}

#[cfg(all(test, loom))]
mod loom_models {
    //! `RUSTFLAGS="--cfg loom" cargo test -p smarm-otp --release --lib loom_models`

    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    fn bind(table: &NameTable, name: &'static str, msg: TypeId, retired: &mut Vec<Retired>) {
        table.set(name, Some(NameValue::new(msg, None)), &mut |r| {
            retired.push(r)
        });
    }

    fn lookup(table: &NameTable, name: &'static str) -> Option<TypeId> {
        table.get(name, name_hash(name.as_bytes())).map(|v| v.msg)
    }

    /// A reader looks names up while the writer binds a fifth name (which
    /// grows the table and republishes every binding), rebinds one and
    /// unbinds another. The reader never misses a bound name (N1), sees
    /// each binding whole, old or new, and what the writer unpublished is
    /// dropped only after the reader is done, as core's deferred drop
    /// guarantees (N3).
    #[test]
    fn readers_see_every_bound_name_through_growth_rebinding_and_unbinding() {
        loom::model(|| {
            let table = Arc::new(NameTable::default());
            let mut retired = Vec::new();
            for name in ["a", "b", "c", "d"] {
                bind(&table, name, TypeId::of::<u8>(), &mut retired);
            }
            assert_eq!(table.current().capacity(), INITIAL_SLOTS);
            let reader = {
                let table = table.clone();
                thread::spawn(move || {
                    let a = lookup(&table, "a");
                    assert!(
                        a == Some(TypeId::of::<u8>()) || a == Some(TypeId::of::<u16>()),
                        "a bound name was missed or torn during growth"
                    );
                    let b = lookup(&table, "b");
                    assert!(b.is_none() || b == Some(TypeId::of::<u8>()));
                    let e = lookup(&table, "e");
                    assert!(e.is_none() || e == Some(TypeId::of::<u32>()));
                    assert_eq!(lookup(&table, "c"), Some(TypeId::of::<u8>()));
                })
            };
            bind(&table, "e", TypeId::of::<u32>(), &mut retired); // grows
            bind(&table, "a", TypeId::of::<u16>(), &mut retired); // rebinds
            table.set("b", None, &mut |r| retired.push(r)); // unbinds
            reader.join().unwrap();
            assert!(table.current().capacity() > INITIAL_SLOTS, "the table grew");
            assert_eq!(lookup(&table, "a"), Some(TypeId::of::<u16>()));
            assert_eq!(lookup(&table, "b"), None);
            assert_eq!(lookup(&table, "e"), Some(TypeId::of::<u32>()));
            drop(retired); // the reader is done: reclamation may run
        });
    }
}
