//! Where a debugger finds every actor without running code in the stopped
//! process: each live [`SlotTable`](super::SlotTable) publishes a
//! `#[repr(C)]` [`DebugTable`] (where its segments are, how a slot is laid
//! out) in a fixed array at the unmangled symbol `smarm_debug_slot_tables`.
//! `smarm-core/debugger/smarm-gdb.py` reads them with plain memory reads,
//! so it needs no Rust debug info and works on a release build.
//!
//! # Invariants
//!
//! - (D1) A descriptor is published only once complete, and unpublished
//!   (its entry nulled) before it or its table is freed. A debugger stops
//!   every thread before it reads, so it never sees one half-freed.
//! - (D2) The layout only grows: a field is never moved or removed
//!   without bumping [`VERSION`], which the script checks.
//! - At most [`MAX_TABLES`] tables are published at once; a runtime
//!   started while that many are live is simply not listed.

use super::table::Slot;
use std::sync::atomic::{AtomicPtr, Ordering};

/// "smarmdbg", little-endian: the script checks it before trusting a table.
const MAGIC: u64 = u64::from_le_bytes(*b"smarmdbg");
/// The descriptor layout's version (D2).
const VERSION: u32 = 1;
/// Slot tables (runtimes) listed at once.
pub(crate) const MAX_TABLES: usize = 64;

/// One slot table as a debugger reads it. Offsets are bytes from a slot's
/// start; the state word is `generation:32 | epoch:28 | state:4`
/// (`word.rs`), the saved stack pointer the `switch` frame of
/// `context/x86_64.rs`.
#[repr(C)]
pub(crate) struct DebugTable {
    magic: u64,
    version: u32,
    slot_size: u32,
    segments: *const AtomicPtr<Slot>,
    segment_count: usize,
    segment_len: usize,
    word_offset: u32,
    sp_offset: u32,
    waiting_on_offset: u32,
    parent_offset: u32,
}

impl DebugTable {
    /// The descriptor of a table whose segment array is `segments`.
    pub(crate) fn new(segments: &[AtomicPtr<Slot>], segment_len: usize) -> DebugTable {
        DebugTable {
            magic: MAGIC,
            version: VERSION,
            slot_size: size_of::<Slot>() as u32,
            segments: segments.as_ptr(),
            segment_count: segments.len(),
            segment_len,
            word_offset: Slot::WORD_OFFSET as u32,
            sp_offset: Slot::SP_OFFSET as u32,
            waiting_on_offset: Slot::WAITING_ON_OFFSET as u32,
            parent_offset: Slot::PARENT_OFFSET as u32,
        }
    }
}

/// The published descriptors, read by `smarm-gdb.py` (module docs).
#[unsafe(no_mangle)]
#[used]
static smarm_debug_slot_tables: [AtomicPtr<DebugTable>; MAX_TABLES] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_TABLES];

/// A descriptor published for as long as this lives (D1).
pub(crate) struct Published(Box<DebugTable>);

impl Published {
    /// Publish `table` in the first free entry, if there is one.
    pub(crate) fn new(table: DebugTable) -> Published {
        let mut table = Box::new(table);
        let ptr: *mut DebugTable = &mut *table;
        for entry in &smarm_debug_slot_tables {
            if entry
                .compare_exchange(
                    std::ptr::null_mut(),
                    ptr,
                    Ordering::Release,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                break;
            }
        }
        Published(table)
    }
}

impl Drop for Published {
    fn drop(&mut self) {
        let ptr: *mut DebugTable = &mut *self.0;
        for entry in &smarm_debug_slot_tables {
            if entry
                .compare_exchange(
                    ptr,
                    std::ptr::null_mut(),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                return;
            }
        }
    }
}

// SAFETY: the descriptor holds only addresses and sizes; nothing reads
// through `segments` in this process (the debugger reads it from outside).
unsafe impl Send for Published {}
// SAFETY: as above; `Published` has no `&self` methods.
unsafe impl Sync for Published {}

#[cfg(test)]
mod tests {
    use super::*;

    fn published(ptr: *const DebugTable) -> bool {
        smarm_debug_slot_tables
            .iter()
            .any(|e| std::ptr::eq(e.load(Ordering::Acquire), ptr))
    }

    #[test]
    fn a_table_is_listed_while_it_lives_and_not_after() {
        let segments: Vec<AtomicPtr<Slot>> = (0..3).map(|_| AtomicPtr::default()).collect();
        let p = Published::new(DebugTable::new(&segments, 4096));
        let ptr: *const DebugTable = &*p.0;
        assert!(published(ptr));
        assert_eq!(p.0.magic.to_le_bytes(), *b"smarmdbg");
        assert_eq!(p.0.segment_count, 3);
        assert_eq!(
            p.0.slot_size as usize % 64,
            0,
            "slots are cache-line aligned"
        );
        drop(p);
        assert!(!published(ptr));
    }
}
