//! The waker of a future that an actor awaits: a reference-counted
//! [`Record`] per awaiting actor, reused while no clone of its waker
//! outlives the await (F5), and the `RawWaker` vtable over it.

use super::cell::WakeCell;
use crate::loom::{AtomicPtr, AtomicU64, AtomicUsize, Ordering, fence};
use crate::scheduler::Shared;
use crate::slot::{Pid, WaitId};
use std::cell::Cell;
use std::ptr::NonNull;
use std::sync::Arc;
use std::task::{RawWaker, RawWakerVTable, Waker};

/// What a waker points at: the handshake cell of one await, and whom it
/// wakes.
pub(super) struct Record {
    /// Wakers and the awaiting `block_on` holding this record.
    refs: AtomicUsize,
    cell: WakeCell,
    /// The awaiting actor's pid bits and its runtime (a count of the
    /// `Arc`, from `Arc::into_raw`): written while the record is held by
    /// its `block_on` alone (F5), published to wakers by the cell's arm
    /// (Release); null while cached, so a cache keeps no runtime alive.
    pid: AtomicU64,
    runtime: AtomicPtr<Shared>,
}

/// Records kept per scheduler thread for the next await on it.
const CACHE: usize = 4;

/// A thread's free records; freed with the thread.
struct FreeList([Cell<Option<NonNull<Record>>>; CACHE]);

impl Drop for FreeList {
    fn drop(&mut self) {
        for c in &self.0 {
            if let Some(rec) = c.take() {
                free_record(rec);
            }
        }
    }
}

std::thread_local! {
    static FREE: FreeList = const { FreeList([const { Cell::new(None) }; CACHE]) };
}

/// The record of one await of the running actor: taken from this thread's
/// cache or made, held alone by the await until it hands out wakers.
pub(super) struct Held(NonNull<Record>);

impl Held {
    /// A record for `pid` of `runtime` (the running actor). Must not
    /// switch: it reads this thread's cache.
    pub(super) fn take(pid: Pid, runtime: &Shared) -> Held {
        let rec = match take_cached() {
            Some(rec) => rec,
            None => NonNull::from(Box::leak(Box::new(Record {
                refs: AtomicUsize::new(1),
                cell: WakeCell::new(),
                pid: AtomicU64::new(0),
                runtime: AtomicPtr::new(std::ptr::null_mut()),
            }))),
        };
        let held = Held(rec);
        let r = held.record();
        r.pid.store(pid.to_bits(), Ordering::Relaxed);
        let count = Arc::into_raw(runtime.to_arc()).cast_mut();
        r.runtime.store(count, Ordering::Relaxed);
        held
    }

    pub(super) fn cell(&self) -> &WakeCell {
        &self.record().cell
    }

    /// A waker borrowing this record (the `Context` of a poll); clones of
    /// it count themselves.
    pub(super) fn waker(&self) -> std::mem::ManuallyDrop<Waker> {
        // SAFETY: the vtable's functions keep the reference count of the
        // record the data pointer names (see each one); the borrowed waker
        // is never dropped (`ManuallyDrop`), so it takes no count of its
        // own, and the record outlives it (held by `self`).
        std::mem::ManuallyDrop::new(unsafe { Waker::from_raw(raw(self.0)) })
    }

    fn record(&self) -> &Record {
        // SAFETY: `self` holds one count of the record (F5).
        unsafe { self.0.as_ref() }
    }
}

impl Drop for Held {
    /// The await is over: no wake reaches anyone from now on (F4); the
    /// record goes back to this thread's cache if no waker is out, else
    /// the last waker frees it (F5).
    fn drop(&mut self) {
        let rec = self.record();
        rec.cell.disarm();
        if rec.refs.load(Ordering::Acquire) == 1 {
            // Held alone: no waker exists, and none can be made (F5).
            let rec = self.0;
            drop_runtime(rec);
            if !cache(rec) {
                free_record(rec);
            }
        } else {
            release(self.0);
        }
    }
}

/// A record from this thread's cache. Never inlined: the await that takes
/// it may end on another thread, and an address of the thread-local
/// computed here must not be reused there (scheduler (I2)).
#[inline(never)]
fn take_cached() -> Option<NonNull<Record>> {
    FREE.try_with(|free| free.0.iter().find_map(Cell::take))
        .ok()
        .flatten()
}

/// Keep a record held alone in this thread's cache; `false` if it is full
/// (or the thread is exiting). Never inlined, as `take_cached`.
#[inline(never)]
fn cache(rec: NonNull<Record>) -> bool {
    FREE.try_with(|free| match free.0.iter().find(|c| c.get().is_none()) {
        Some(c) => {
            c.set(Some(rec));
            true
        }
        None => false,
    }) == Ok(true)
}

/// Give up the runtime count of a record held alone.
fn drop_runtime(rec: NonNull<Record>) {
    // SAFETY: the caller holds the only count, so the record is live.
    let r = unsafe { rec.as_ref() };
    let count = r.runtime.swap(std::ptr::null_mut(), Ordering::Relaxed);
    if !count.is_null() {
        // SAFETY: a non-null `runtime` is a count from `Arc::into_raw`
        // (`Held::take`), given up once: the swap took it out.
        drop(unsafe { Arc::from_raw(count.cast_const()) });
    }
}

/// Free a record held alone.
fn free_record(rec: NonNull<Record>) {
    drop_runtime(rec);
    // SAFETY: the caller held the only count; the record was made by
    // `Box::leak` in `Held::take`.
    drop(unsafe { Box::from_raw(rec.as_ptr()) });
}

/// Give up one count; the last one frees the record.
fn release(rec: NonNull<Record>) {
    // SAFETY: the caller holds a count, so the record is live.
    let r = unsafe { rec.as_ref() };
    if r.refs.fetch_sub(1, Ordering::Release) == 1 {
        // Every other holder's use happens before this free (as `Arc`).
        fence(Ordering::Acquire);
        free_record(rec);
    }
}

/// Deliver a wake (F3).
fn wake_record(r: &Record) {
    if let Some(epoch) = r.cell.notify() {
        let pid = Pid::from_bits(r.pid.load(Ordering::Relaxed));
        let runtime = r.runtime.load(Ordering::Relaxed);
        // SAFETY: the cell was armed, so the record is held by an await
        // (F5), whose runtime count stays in `runtime` until it ends; the
        // waker's count keeps the record, and so that count, alive.
        if let Some(runtime) = unsafe { runtime.as_ref() } {
            runtime.wake(WaitId { pid, epoch });
        }
    }
}

fn raw(rec: NonNull<Record>) -> RawWaker {
    RawWaker::new(rec.as_ptr().cast_const().cast(), &VTABLE)
}

static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop_waker);

/// Rebuild the record pointer of a waker's data.
fn record_of(data: *const ()) -> NonNull<Record> {
    // SAFETY (of the callers' derefs): `data` is the non-null pointer
    // `raw` was given, to a record a count of which the waker holds or
    // borrows.
    match NonNull::new(data.cast_mut().cast::<Record>()) {
        Some(rec) => rec,
        None => unreachable!("a smarm waker's data is never null"),
    }
}

unsafe fn clone(data: *const ()) -> RawWaker {
    let rec = record_of(data);
    // SAFETY: the waker being cloned holds or borrows a count, so the
    // record is live; a new count for the clone (Relaxed, as `Arc`).
    unsafe { rec.as_ref() }.refs.fetch_add(1, Ordering::Relaxed);
    raw(rec)
}

unsafe fn wake(data: *const ()) {
    let rec = record_of(data);
    // SAFETY: this waker holds a count until the `release` below.
    wake_record(unsafe { rec.as_ref() });
    release(rec);
}

unsafe fn wake_by_ref(data: *const ()) {
    // SAFETY: the waker holds or borrows a count while borrowed.
    wake_record(unsafe { record_of(data).as_ref() });
}

unsafe fn drop_waker(data: *const ()) {
    release(record_of(data));
}
