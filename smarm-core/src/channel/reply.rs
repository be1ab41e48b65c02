//! Call replies without an allocation: the caller waits in
//! [`await_reply`] with a place for the value (in its actor slot's reply
//! cell when the value is small, else in its own frame), and the
//! [`ReplySender`] it hands out writes the value straight there.
//!
//! Each actor slot owns one reply cell, made on the slot's first call and
//! reused by every later call of every actor that holds the slot. A call
//! takes the next tag of the cell; a sender can only act on the call whose
//! tag it carries, so a reply that arrives after its caller gave up (or
//! after the slot changed hands) is handed back to the sender, never
//! delivered to a later call.
//!
//! # Protocol
//!
//! `state` holds `tag << 3 | phase`. The caller opens a call: `OPEN` with
//! a fresh tag. A sender claims it with a CAS `OPEN` → `WRITING` (a stale
//! tag or a cancelled call fails the CAS), moves the value into the
//! caller's place, wakes the caller's wait if it parked, and publishes
//! `FULL` (or `CLOSED` when it was dropped unsent). The caller cancels a
//! timed-out call with a CAS `OPEN` → `IDLE`; if a sender is `WRITING` it
//! yields until the phase settles. Parking is the handoff protocol
//! (`handoff.rs`), shared with the oneshot: the caller registers its wait
//! epoch in `waiter` and re-reads `state`; the sender reads `waiter` right
//! after its claim.
//!
//! # Invariants
//!
//! - (R1) Between a call's open and its close only the sender that won the
//!   claim touches the caller's place; it writes it before publishing
//!   `FULL` (Release) and the caller reads it after seeing `FULL`
//!   (Acquire).
//! - (R2) No lost wake (handoff (H1)): the claim is the completer's state
//!   change.
//! - (R3) The caller never leaves [`await_reply`] (by return or unwind)
//!   while its call is `WRITING`. So after a successful claim the caller's
//!   stack frame and its runtime are alive until the sender publishes:
//!   the sender wakes through the runtime before it publishes, and touches
//!   neither afterwards.
//! - (R4) Outside a call the phase is `IDLE`; tags only grow, so no sender
//!   of an old call can ever claim a new one.

use super::handoff::WaiterCell;
use crate::loom::{AtomicPtr, AtomicU64, Ordering};
use crate::park::NO_DEADLINE;
use crate::scheduler::Section;
use crate::scheduler::Shared;
use crate::scheduler::WaitingOn;
use crate::scheduler::{self, BoundedWaiter, Deadline, Registered, Wait};
use crate::slot::{Pid, WaitId};
use crossbeam_utils::CachePadded;
use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::mem::{ManuallyDrop, MaybeUninit};
use std::sync::Arc;
use std::time::Duration;

const IDLE: u64 = 0;
const OPEN: u64 = 1;
const WRITING: u64 = 2;
const FULL: u64 = 3;
const CLOSED: u64 = 4;
const PHASE: u64 = 0b111;

/// One actor slot's reply cell (see the module docs). What a sender
/// needs besides its tag lives here, so a sender is two words. Kept in a
/// [`CachePadded`], on lines of its own: callers on different schedulers
/// must not share one.
pub(crate) struct ReplyCell {
    /// `tag << 3 | phase`.
    state: AtomicU64,
    /// The caller's wait, if it parked in this call (handoff (H1)).
    waiter: WaiterCell,
    /// The open call's caller (pid bits) and its place for the value
    /// (type-erased; the tag pins the type). Written at open, before the
    /// Release that publishes `OPEN`; read after a claim (Acquire).
    owner: AtomicU64,
    place: AtomicPtr<()>,
    /// The slot's runtime (dereferenced only under a claim, R3).
    runtime: *const Shared,
    /// The place for values that fit: on the line the sender writes
    /// anyway, so a reply does not pull the caller's stack across.
    inline: UnsafeCell<Inline>,
}

/// Storage for a reply value of at most `INLINE_SIZE` bytes.
#[repr(align(16))]
struct Inline {
    _bytes: [MaybeUninit<u8>; INLINE_SIZE],
}

const INLINE_SIZE: usize = 48;

/// Whether a `T` goes in the cell's inline place.
const fn fits_inline<T>() -> bool {
    size_of::<T>() <= INLINE_SIZE && align_of::<T>() <= align_of::<Inline>()
}

// SAFETY: `runtime` is only an address until a claim makes it valid to
// dereference (R3); `inline` is touched only by a call's claimed sender
// and then its caller (R1); everything else is atomic.
unsafe impl Send for ReplyCell {}
// SAFETY: as above.
unsafe impl Sync for ReplyCell {}

impl ReplyCell {
    pub(crate) fn new(runtime: *const Shared) -> Self {
        ReplyCell {
            state: AtomicU64::new(IDLE),
            waiter: WaiterCell::new(),
            owner: AtomicU64::new(0),
            place: AtomicPtr::new(std::ptr::null_mut()),
            runtime,
            inline: UnsafeCell::new(Inline {
                _bytes: [MaybeUninit::uninit(); INLINE_SIZE],
            }),
        }
    }

    /// Open the next call for `owner`, its value to land in `place`;
    /// returns its tag. Only the slot's running actor opens calls, one at
    /// a time (R4).
    fn open(&self, owner: Pid, place: *mut ()) -> u64 {
        let state = self.state.load(Ordering::Relaxed);
        debug_assert_eq!(state & PHASE, IDLE, "a call opened inside a call");
        let tag = (state >> 3) + 1;
        self.waiter.clear();
        self.owner.store(owner.to_bits(), Ordering::Relaxed);
        self.place.store(place, Ordering::Relaxed);
        self.state.store(tag << 3 | OPEN, Ordering::Release);
        tag
    }

    /// Claim call `tag` for writing (or closing).
    fn claim(&self, tag: u64) -> bool {
        if self
            .state
            .compare_exchange(
                tag << 3 | OPEN,
                tag << 3 | WRITING,
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .is_err()
        {
            return false;
        }
        true
    }

    /// Publish the claimed call's outcome (`FULL` or `CLOSED`).
    fn publish(&self, tag: u64, phase: u64) {
        self.state.store(tag << 3 | phase, Ordering::Release);
    }

    /// Register wait `epoch` for the open call and re-read the phase (R2).
    fn register(&self, epoch: u32) -> u64 {
        self.waiter.register(epoch);
        self.state.load(Ordering::Acquire) & PHASE
    }

    /// Cancel the open call `tag`; `false` if a sender claimed it first.
    fn cancel(&self, tag: u64) -> bool {
        self.state
            .compare_exchange(
                tag << 3 | OPEN,
                tag << 3 | IDLE,
                Ordering::Relaxed,
                Ordering::Relaxed,
            )
            .is_ok()
    }

    fn phase(&self) -> u64 {
        self.state.load(Ordering::Acquire) & PHASE
    }

    /// Close the settled call `tag` (the caller, after taking the outcome).
    fn close(&self, tag: u64) {
        self.state.store(tag << 3 | IDLE, Ordering::Relaxed);
    }
}

/// The sending half of one call's reply, handed out by [`await_reply`]:
/// [`send`](ReplySender::send) the answer once; dropping it unsent wakes
/// the caller with [`ReplyError::Closed`]. It can be kept and sent later,
/// from any thread (a deferred reply).
pub struct ReplySender<T> {
    /// `None` once sent.
    cell: Option<Arc<CachePadded<ReplyCell>>>,
    tag: u64,
    _value: PhantomData<fn(T)>,
}

// SAFETY: the sender moves a `T` to the caller's thread (hence `T: Send`);
// the cell's pointers are dereferenced only under a claim, while the
// caller keeps both alive (R1, R3).
unsafe impl<T: Send> Send for ReplySender<T> {}
// SAFETY: `&ReplySender` only reads the cell's state.
unsafe impl<T: Send> Sync for ReplySender<T> {}

impl<T> ReplySender<T> {
    /// Answer the call. Gives the value back if the caller no longer waits
    /// for it (it timed out, or went down).
    pub fn send(mut self, value: T) -> Result<(), T> {
        let Some(cell) = self.cell.take() else {
            return Err(value);
        };
        // From the claim to the publish: not to be cut in two (R1).
        let _section = Section::enter();
        if !cell.claim(self.tag) {
            return Err(value);
        }
        let place = cell.place.load(Ordering::Relaxed).cast::<MaybeUninit<T>>();
        // SAFETY: the claim gives this sender the caller's place until it
        // publishes (R1); the caller is parked or yielding inside
        // `await_reply`, so the frame holding it is alive (R3); the tag
        // names the call, whose place holds a `T`.
        unsafe { (*place).write(value) };
        settle(&cell, self.tag, FULL);
        Ok(())
    }

    /// Which call this answers: its caller and the call's tag (unique per
    /// caller), while the caller still waits for it. What a library that
    /// follows whom a caller waits on keys its records by (see
    /// [`await_reply_watched_as`]).
    pub fn call_id(&self) -> Option<(Pid, u64)> {
        let cell = self.cell.as_ref()?;
        if cell.state.load(Ordering::Acquire) != self.tag << 3 | OPEN {
            return None;
        }
        Some((Pid::from_bits(cell.owner.load(Ordering::Relaxed)), self.tag))
    }

    /// Whether the caller still waits for this reply.
    pub fn is_waited_on(&self) -> bool {
        self.cell
            .as_ref()
            .is_some_and(|c| c.state.load(Ordering::Relaxed) == self.tag << 3 | OPEN)
    }
}

impl<T> Drop for ReplySender<T> {
    fn drop(&mut self) {
        if let Some(cell) = self.cell.take() {
            let _section = Section::enter();
            if cell.claim(self.tag) {
                settle(&cell, self.tag, CLOSED);
            }
        }
    }
}

impl<T> std::fmt::Debug for ReplySender<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplySender")
            .field("waited_on", &self.is_waited_on())
            .finish()
    }
}

/// Wake the caller (if it parked) and publish `phase` for the claimed call.
#[inline]
fn settle(cell: &ReplyCell, tag: u64, phase: u64) {
    if let Some(epoch) = cell.waiter.to_wake() {
        let owner = Pid::from_bits(cell.owner.load(Ordering::Relaxed));
        // SAFETY: the call is claimed and unpublished, so the caller is
        // still inside `await_reply` and its runtime is running (R3).
        unsafe { (*cell.runtime).wake(WaitId { pid: owner, epoch }) };
    }
    cell.publish(tag, phase);
}

/// Why [`await_reply`] returned no value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    /// The deadline passed first; a later reply is handed back to its
    /// sender.
    #[error("smarm: no reply within the timeout")]
    Timeout,
    /// The [`ReplySender`] was dropped without sending.
    #[error("smarm: the reply sender was dropped without sending")]
    Closed,
}

/// Make a reply slot for one call, hand its sender to `deliver` (which
/// sends the request carrying it), and wait up to `timeout` for the
/// answer. The value is moved straight into this frame: no allocation per
/// call.
///
/// ```
/// use smarm::channel::{await_reply, ReplyError, ReplySender};
/// use std::time::Duration;
///
/// smarm::run(|| {
///     let (tx, rx) = smarm::channel::<(u32, ReplySender<u32>)>();
///     let server = smarm::spawn(move || {
///         while let Ok((n, reply)) = rx.recv() {
///             let _ = reply.send(n * 2);
///         }
///     });
///     let doubled = await_reply(|reply| drop(tx.send((21, reply))), Duration::from_secs(5));
///     assert_eq!(doubled, Ok(42));
///     // A sender dropped unsent fails the wait at once.
///     let dropped = await_reply::<u32>(drop, Duration::from_secs(5));
///     assert_eq!(dropped, Err(ReplyError::Closed));
///     drop(tx);
///     server.join().unwrap();
/// });
/// ```
///
/// # Panics
///
/// Outside an actor.
pub fn await_reply<T>(
    deliver: impl FnOnce(ReplySender<T>),
    timeout: Duration,
) -> Result<T, ReplyError> {
    await_reply_as("await_reply", deliver, timeout)
}

/// [`await_reply`], naming `what` (the public call a library built it
/// into, such as `GenServerRef::call`) in the outside-an-actor panic.
#[doc(hidden)]
pub fn await_reply_as<T>(
    what: &'static str,
    deliver: impl FnOnce(ReplySender<T>),
    timeout: Duration,
) -> Result<T, ReplyError> {
    await_reply_in(what, deliver, timeout, None)
}

/// How long a watched call waits before its watch first looks, and the
/// first gap between looks (doubled after the second).
pub const FIRST_WATCH: Duration = Duration::from_millis(2);
const FIRST_WATCH_NANOS: u64 = 2_000_000;

/// [`await_reply_as`] with a watch on a call that is slow to answer: if no
/// answer came after [`FIRST_WATCH`], `watch(tag, began)` runs in the
/// caller (`tag` being the call's, as [`ReplySender::call_id`] gives it;
/// `began` when it began, in nanoseconds on the runtime's clock, to order
/// calls by), again after another `FIRST_WATCH`, and then after gaps that
/// double, until the answer or the timeout. When it
/// returns `true` the call is given up as if its timeout had passed,
/// [`ReplyError::Timeout`] (a reply claimed meanwhile is still taken; the
/// watch knows which it was). A fast call never runs it and
/// pays one comparison for it: how a library looks for calls that wait on
/// each other without slowing the calls that don't.
#[doc(hidden)]
pub fn await_reply_watched_as<T>(
    what: &'static str,
    deliver: impl FnOnce(ReplySender<T>),
    timeout: Duration,
    mut watch: impl FnMut(u64, u64) -> bool,
) -> Result<T, ReplyError> {
    await_reply_in(what, deliver, timeout, Some(&mut watch))
}

/// The one call wait: [`await_reply_as`] without a watch, or
/// [`await_reply_watched_as`] with one.
#[inline(always)]
fn await_reply_in<T>(
    what: &'static str,
    deliver: impl FnOnce(ReplySender<T>),
    timeout: Duration,
    watch: Option<&mut dyn FnMut(u64, u64) -> bool>,
) -> Result<T, ReplyError> {
    // The slot's cell stays open until the call is finished or dropped: an
    // actor ended in between would leave it open for the slot's next
    // tenant, so the whole call is a section.
    let ((owner, for_sender, now), _section) =
        scheduler::with_current_actor_in_section(what, |me, shared| {
            let cell = shared.slots.get(me.index()).map(|slot| {
                let erased = slot
                    .reply
                    .get_or_init(|| Box::new(Arc::new(CachePadded::new(ReplyCell::new(shared)))));
                let ptr = Arc::as_ptr(erased).cast::<CachePadded<ReplyCell>>();
                // SAFETY: only the line above fills `slot.reply`, always
                // with an `Arc<CachePadded<ReplyCell>>` (erased so the slot layer need
                // not name the type), so `ptr` is that Arc's data pointer.
                // The count taken here is the sender's, released when it
                // drops (a clone without the type check's virtual call).
                unsafe {
                    Arc::increment_strong_count(ptr);
                    Arc::from_raw(ptr)
                }
            });
            (me, cell, shared.coord.now_nanos())
        });
    let deadline = u64::try_from(timeout.as_nanos())
        .ok()
        .and_then(|t| now.checked_add(t))
        .filter(|at| *at < NO_DEADLINE - 1);
    let Some(for_sender) = for_sender else {
        scheduler::outside_actor(what)
    };
    // SAFETY: the cell is the calling actor's slot's, set once and never
    // replaced; slots live until the runtime's slot table is dropped, after
    // every actor has finished, and this actor is running. So the caller
    // borrows it without a reference count of its own (the sender holds
    // the one count it needs).
    let cell: &ReplyCell = unsafe { &*Arc::as_ptr(&for_sender) };
    let on_stack = UnsafeCell::new(MaybeUninit::<T>::uninit());
    let place: *mut MaybeUninit<T> = if fits_inline::<T>() {
        cell.inline.get().cast()
    } else {
        on_stack.get()
    };
    let call = OpenCall {
        cell,
        tag: cell.open(owner, place.cast()),
        place,
    };
    deliver(ReplySender {
        cell: Some(for_sender),
        tag: call.tag,
        _value: PhantomData,
    });
    call.wait(timeout.is_zero(), deadline, now, watch)
}

/// The caller's side of an open call; dropping it (on an unwind) cancels
/// the call, waiting out a sender that is writing (R3).
struct OpenCall<'a, T> {
    cell: &'a ReplyCell,
    tag: u64,
    /// The cell's inline place or one in `await_reply`'s frame.
    place: *mut MaybeUninit<T>,
}

impl<T> OpenCall<'_, T> {
    /// Wait for the outcome until `deadline` (coordinator nanos; `None`:
    /// no deadline), running `watch` (if any) [`FIRST_WATCH`] after
    /// `began`, again a `FIRST_WATCH` later, then after doubling gaps.
    #[inline(always)]
    fn wait(
        self,
        no_wait: bool,
        deadline: Option<u64>,
        began: u64,
        mut watch: Option<&mut dyn FnMut(u64, u64) -> bool>,
    ) -> Result<T, ReplyError> {
        // SAFETY: the cell's runtime is the one this actor runs in.
        let coord = unsafe { &(*self.cell.runtime).coord };
        let end = deadline.unwrap_or(NO_DEADLINE);
        let mut gap = FIRST_WATCH_NANOS;
        // NO_DEADLINE: no (more) looks.
        let mut look = match watch {
            Some(_) => began.saturating_add(gap),
            None => NO_DEADLINE,
        };
        let mut looked = false;
        loop {
            let at_look = look < end;
            let until = if at_look { Some(look) } else { deadline };
            let mut waiter = CallWait {
                cell: self.cell,
                tag: self.tag,
                at_look,
            };
            let until = until.map(|at| Deadline::Nanos { at, coord });
            match scheduler::bounded_wait("await_reply", &mut waiter, until, no_wait) {
                Settled::Outcome => return self.finish(),
                Settled::TimedOut => {
                    std::mem::forget(self); // cancelled: nothing left open
                    return Err(ReplyError::Timeout);
                }
                Settled::Look => {
                    if watch.as_mut().is_some_and(|watch| watch(self.tag, began)) {
                        if self.cell.cancel(self.tag) {
                            std::mem::forget(self); // cancelled
                            return Err(ReplyError::Timeout);
                        }
                        // A sender claimed it meanwhile: take its outcome.
                        look = NO_DEADLINE;
                        continue;
                    }
                    // The second look as soon as the first (a wait noted
                    // at the same tick may have missed this one's), then
                    // doubling gaps.
                    if looked {
                        gap = gap.saturating_mul(2);
                    }
                    looked = true;
                    look = coord.now_nanos().saturating_add(gap);
                }
            }
        }
    }

    /// Take the settled outcome and close the call.
    fn finish(self) -> Result<T, ReplyError> {
        let phase = self.cell.phase();
        let this = ManuallyDrop::new(self);
        this.cell.close(this.tag);
        match phase {
            // SAFETY: FULL was published after the value was written (R1),
            // and we saw it with Acquire; the call is closed, so nothing
            // else reads the place.
            FULL => Ok(unsafe { (*this.place).assume_init_read() }),
            _ => Err(ReplyError::Closed),
        }
    }
}

/// How a call's wait ended.
enum Settled {
    /// The reply (or the sender's drop) landed: finish the call.
    Outcome,
    /// The deadline passed and the call was cancelled.
    TimedOut,
    /// The watch's time came; the call is still open.
    Look,
}

/// A call's side of the bounded-wait loop.
struct CallWait<'a> {
    cell: &'a ReplyCell,
    tag: u64,
    /// The deadline is the watch's look, not the call's end: passing it
    /// leaves the call open.
    at_look: bool,
}

impl BoundedWaiter for CallWait<'_> {
    const WAITS_ON: WaitingOn = WaitingOn::Reply;
    type Output = Settled;

    fn ready(&mut self) -> Option<Settled> {
        loop {
            match self.cell.phase() {
                FULL | CLOSED => return Some(Settled::Outcome),
                // Claimed: the value lands within a few instructions.
                WRITING => scheduler::yield_now(),
                _ => return None,
            }
        }
    }

    fn timed_out(&mut self) -> Option<Settled> {
        if self.at_look {
            return Some(Settled::Look);
        }
        self.cell.cancel(self.tag).then_some(Settled::TimedOut)
    }

    fn register(&mut self, wait: &Wait) -> Registered<Settled> {
        // A fault site of the simulator's (sim faults (F2)): the call times
        // out as it would park, its request delivered.
        if crate::fault_site("a call times out at once") && self.cell.cancel(self.tag) {
            return Registered::Done(Settled::TimedOut);
        }
        if self.cell.register(wait.id().epoch) == OPEN {
            Registered::Yes
        } else {
            Registered::Ready
        }
    }
}

impl<T> Drop for OpenCall<'_, T> {
    fn drop(&mut self) {
        // Unwinding out of the wait (a stop): leave nothing open (R3, R4).
        loop {
            if self.cell.cancel(self.tag) {
                return;
            }
            match self.cell.phase() {
                FULL => {
                    self.cell.close(self.tag);
                    // SAFETY: as in `finish`: written, published, ours now.
                    unsafe { (*self.place).assume_init_drop() };
                    return;
                }
                CLOSED => {
                    self.cell.close(self.tag);
                    return;
                }
                _ => std::thread::yield_now(), // WRITING: the sender is finishing
            }
        }
    }
}

#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    /// The parking race: either the caller sees the outcome before it
    /// parks, or the sender sees the wait and wakes it (R2).
    #[test]
    fn no_lost_wake_and_the_value_arrives() {
        loom::model(|| {
            let cell = Arc::new(ReplyCell::new(std::ptr::null()));
            let tag = cell.open(Pid::from_parts(1, 1), std::ptr::null_mut());
            let value = Arc::new(loom::sync::atomic::AtomicU64::new(0));
            let sender = {
                let (cell, value) = (cell.clone(), value.clone());
                thread::spawn(move || {
                    assert!(cell.claim(tag));
                    value.store(42, Ordering::Relaxed);
                    let woken = cell.waiter.to_wake();
                    cell.publish(tag, FULL);
                    woken
                })
            };
            let phase = cell.register(4);
            let woken = sender.join().unwrap();
            if phase == OPEN {
                assert_eq!(woken, Some(4), "parked and nobody wakes it");
            }
            assert_eq!(cell.phase(), FULL);
            assert_eq!(value.load(Ordering::Relaxed), 42);
        });
    }

    /// A watched call registers again after each look (the call stays
    /// open): the sender wakes the latest registration, or the caller sees
    /// the claim before it parks again (R2 across looks).
    #[test]
    fn a_wait_registered_again_after_a_look_is_still_woken() {
        loom::model(|| {
            let cell = Arc::new(ReplyCell::new(std::ptr::null()));
            let tag = cell.open(Pid::from_parts(1, 1), std::ptr::null_mut());
            let sender = {
                let cell = cell.clone();
                thread::spawn(move || {
                    assert!(cell.claim(tag));
                    let woken = cell.waiter.to_wake();
                    cell.publish(tag, FULL);
                    woken
                })
            };
            let _first = cell.register(4);
            let again = cell.register(5); // after the look
            let woken = sender.join().unwrap();
            if again == OPEN {
                assert_eq!(woken, Some(5), "parked again and nobody wakes it");
            }
            assert_eq!(cell.phase(), FULL);
        });
    }

    /// A timeout racing a reply: exactly one side wins the call; a sender
    /// that lost never writes, and a cancel that lost sees the outcome.
    #[test]
    fn cancel_and_claim_exclude_each_other() {
        loom::model(|| {
            let cell = Arc::new(ReplyCell::new(std::ptr::null()));
            let tag = cell.open(Pid::from_parts(1, 1), std::ptr::null_mut());
            let sender = {
                let cell = cell.clone();
                thread::spawn(move || {
                    let claimed = cell.claim(tag);
                    if claimed {
                        cell.publish(tag, FULL);
                    }
                    claimed
                })
            };
            let cancelled = cell.cancel(tag);
            let claimed = sender.join().unwrap();
            assert!(cancelled != claimed, "both or neither side won the call");
            if cancelled {
                assert_eq!(cell.phase(), IDLE);
            } else {
                assert_eq!(cell.phase(), FULL);
            }
        });
    }

    /// A sender of an earlier call can never claim a later one (R4).
    #[test]
    fn a_stale_sender_cannot_claim_the_next_call() {
        loom::model(|| {
            let cell = Arc::new(ReplyCell::new(std::ptr::null()));
            let old = cell.open(Pid::from_parts(1, 1), std::ptr::null_mut());
            assert!(cell.cancel(old));
            let stale = {
                let cell = cell.clone();
                thread::spawn(move || cell.claim(old))
            };
            let new = cell.open(Pid::from_parts(1, 1), std::ptr::null_mut());
            assert!(!stale.join().unwrap(), "a stale tag claimed a call");
            assert!(cell.claim(new));
        });
    }
}
