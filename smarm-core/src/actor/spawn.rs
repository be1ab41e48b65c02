//! Starting actors (`spawn`, `try_spawn`, `spawn_under`, `spawn_in`),
//! and what an actor asks about itself and others: `self_pid`,
//! `yield_now`, `is_alive`, `request_stop`.

use super::{JoinHandle, SpawnError};
use crate::loom::Ordering;
use crate::scheduler::Shared;
use crate::scheduler::{self, with_current_actor};
use crate::slot::DownReason;
use crate::slot::table::Entry;
use crate::slot::table::entry;
use crate::slot::{Pid, Slot};

/// Start a new actor running `f` and return its [`JoinHandle`].
///
/// The child runs concurrently with its parent; it starts as soon as the
/// parent blocks or yields (or on another scheduler thread sooner). Drop
/// the handle to let the actor run detached.
///
/// ```
/// smarm::run(|| {
///     let handles: Vec<_> = (0..10).map(|i| smarm::spawn(move || assert!(i < 10))).collect();
///     for h in handles {
///         h.join().unwrap();
///     }
/// });
/// ```
///
/// # Panics
///
/// Outside an actor, or if the actor cannot be created (see
/// [`try_spawn`], which returns the [`SpawnError`] instead).
pub fn spawn<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> JoinHandle<T> {
    match spawn_as("spawn", entry(f)) {
        Ok(h) => h.retype(),
        Err(e) => panic!("{e}"),
    }
}

/// Like [`spawn`], but a full actor table or exhausted stack memory is an
/// error instead of a panic.
///
/// # Panics
///
/// Outside an actor.
pub fn try_spawn<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<JoinHandle<T>, SpawnError> {
    spawn_as("try_spawn", entry(f)).map(JoinHandle::retype)
}

/// Spawn a child of the caller; `what` names the public call for the
/// outside-an-actor panic.
fn spawn_as(what: &'static str, f: crate::slot::table::Entry) -> Result<JoinHandle, SpawnError> {
    let handle = with_current_actor(what, |me, shared| {
        spawn_in(shared, f, SpawnOpts::child_of(Some(me)))
    })?;
    spawn_backpressure();
    Ok(handle)
}

/// Whether the caller is an actor: code inside [`run`](crate::run) or an
/// actor it spawned, as opposed to a plain thread (where the actor-only
/// calls, such as [`spawn`], panic) or a timer callback.
///
/// ```
/// assert!(!smarm::in_actor());
/// smarm::run(|| assert!(smarm::in_actor()));
/// ```
pub fn in_actor() -> bool {
    scheduler::in_actor()
}

/// Panic unless the caller is an actor, naming `what` (the function the
/// user called) and saying how to fix the call: for libraries built on
/// smarm, so their misuse reports their own function, not an inner one.
///
/// ```should_panic
/// smarm::require_actor("mylib::connect"); // panics: "`mylib::connect` must be called ..."
/// ```
#[inline]
pub fn require_actor(what: &str) {
    if !scheduler::in_actor() {
        scheduler::outside_actor(what)
    }
}

/// A spawner that has queued [`SPAWN_BACKLOG`] children on its scheduler
/// without blocking yields to them, so they run (and free their stacks)
/// before it spawns more: the live set stays bounded by scheduling, not by
/// memory. Not a stop safepoint: `spawn` never unwinds.
pub(crate) fn spawn_backpressure() {
    let backlog = scheduler::with_worker(|w, shared| shared.local_backlog(w.id));
    // Not where the actor cannot switch (a `NoPreempt` guard, a future's
    // poll): it spawns on, and the children run once it blocks.
    if backlog.is_some_and(|n| n >= SPAWN_BACKLOG) && scheduler::preempt::preemption_enabled() {
        scheduler::yield_without_stop();
    }
}

/// Local queue length at which a spawner yields to its children.
const SPAWN_BACKLOG: usize = 256;

/// Like [`spawn`], but record `parent` as the new actor's parent instead of
/// the caller (for supervisors that start children on behalf of others).
///
/// ```
/// smarm::run(|| {
///     let me = smarm::self_pid();
///     smarm::spawn_under(me, || {}).join().unwrap();
/// });
/// ```
pub fn spawn_under<A, T: Send + 'static>(
    parent: Pid<A>,
    f: impl FnOnce() -> T + Send + 'static,
) -> JoinHandle<T> {
    let parent = parent.erase();
    match with_current_actor("spawn_under", |_, shared| {
        spawn_in(shared, entry(f), SpawnOpts::child_of(Some(parent)))
    }) {
        Ok(h) => {
            spawn_backpressure();
            h.retype()
        }
        Err(e) => panic!("{e}"),
    }
}

/// The pid of the calling actor.
///
/// # Panics
///
/// Outside an actor.
pub fn self_pid() -> Pid {
    with_current_actor("self_pid", |me, _| me)
}

/// The pid of the calling actor, or `None` outside any actor (never
/// panics): for code that runs both in and outside actors, such as a
/// library checking whether a call would target its own caller.
///
/// ```
/// assert_eq!(smarm::try_self_pid(), None);
/// smarm::run(|| assert_eq!(smarm::try_self_pid(), Some(smarm::self_pid())));
/// ```
#[inline]
pub fn try_self_pid() -> Option<Pid> {
    scheduler::current_pid()
}

/// Whether the calling actor is unwinding (a panic, a stop or an exit
/// passing through its frames): `std::thread::panicking()` for the actor
/// rather than its thread. For a destructor that should act differently
/// when its actor is going down, as a gen_server's unanswered call does
/// (its caller learns of the failure only once the server is gone).
///
/// std counts panics per OS thread, so while another actor on this
/// scheduler is parked mid-unwind (a destructor that blocked) the thread
/// reports a panic for every actor on it; then this says `false`, as
/// which one unwinds cannot be told. Outside an actor, it is
/// `std::thread::panicking()`.
///
/// ```
/// struct Guard(std::sync::mpsc::Sender<bool>);
/// impl Drop for Guard {
///     fn drop(&mut self) {
///         let _ = self.0.send(smarm::panicking());
///     }
/// }
/// smarm::run(|| {
///     let (tx, rx) = std::sync::mpsc::channel();
///     drop(Guard(tx.clone()));
///     let _ = smarm::spawn(move || {
///         let _guard = Guard(tx);
///         panic!("down");
///     })
///     .join();
///     assert_eq!(rx.try_iter().collect::<Vec<_>>(), [false, true]);
/// });
/// ```
pub fn panicking() -> bool {
    scheduler::actor_unwinding()
}

/// Let every other runnable actor have a turn, then continue. A long
/// computation that never blocks should call this now and then.
///
/// ```
/// smarm::run(|| {
///     let mut sum = 0u64;
///     for i in 0..1_000_000u64 {
///         sum += i;
///         if i % 10_000 == 0 {
///             smarm::yield_now();
///         }
///     }
///     assert_eq!(sum, 499_999_500_000);
/// });
/// ```
pub fn yield_now() {
    scheduler::yield_now();
}

/// Whether `pid` is a live actor (spawned, not finished) of the runtime the
/// caller runs on. `false` outside any runtime.
///
/// ```
/// smarm::run(|| {
///     let child = smarm::spawn(|| smarm::sleep(std::time::Duration::from_millis(5)));
///     let pid = child.pid();
///     assert!(smarm::is_alive(pid));
///     child.join().unwrap();
///     assert!(!smarm::is_alive(pid));
/// });
/// ```
pub fn is_alive<A>(pid: Pid<A>) -> bool {
    let pid = pid.erase();
    scheduler::with_worker(|_, shared| alive_in(shared, pid)).unwrap_or(false)
}

/// [`is_alive`] on the runtime `shared`.
#[inline]
pub(crate) fn alive_in(shared: &Shared, pid: Pid) -> bool {
    shared.slots.get(pid.index()).is_some_and(|slot| {
        let s = slot.word.load();
        s.generation() == pid.generation()
            && !matches!(
                s.state(),
                crate::slot::word::State::Vacant | crate::slot::word::State::Done
            )
    })
}

/// Ask actor `pid` to stop. The actor unwinds from its next safepoint
/// (any blocking call, or `yield_now`), running its destructors; its
/// [`JoinHandle::join`] then returns `Ok(())`. A finished or unknown pid is
/// ignored. An actor that loops without ever reaching a safepoint cannot be
/// stopped.
///
/// ```
/// use std::time::Duration;
///
/// smarm::run(|| {
///     let sleeper = smarm::spawn(|| smarm::sleep(Duration::from_secs(3600)));
///     smarm::request_stop(sleeper.pid());
///     assert!(sleeper.join().is_ok());
/// });
/// ```
pub fn request_stop<A>(pid: Pid<A>) {
    let pid = pid.erase();
    with_current_actor("request_stop", |_, shared| shared.request_stop(pid));
}

/// Ask every live actor of the caller's runtime but the caller to stop
/// (as [`request_stop`] each): the last resort of a shutdown whose ordered
/// part ran out of time. Actors spawned afterwards are not affected.
///
/// ```
/// use std::time::Duration;
///
/// smarm::run(|| {
///     let sleepers: Vec<_> = (0..3)
///         .map(|_| smarm::spawn(|| smarm::sleep(Duration::from_secs(3600))))
///         .collect();
///     smarm::request_stop_all();
///     for s in sleepers {
///         assert!(s.join().is_ok());
///     }
/// });
/// ```
///
/// # Panics
///
/// Outside an actor.
pub fn request_stop_all() {
    with_current_actor("request_stop_all", |me, shared| {
        shared.request_stop_all(Some(me))
    });
}

/// The unwind payload of [`exit_with`].
pub(crate) struct ExitWith(pub(crate) DownReason);

/// End the calling actor with `reason`, as Erlang's `exit(Reason)` does:
/// it unwinds from here, running its destructors, and its monitors, links
/// and joiner see `reason`: text (a `&str`, a `String`, an
/// [`ExitReason`](crate::ExitReason)) is a [`DownReason::Custom`](crate::DownReason::Custom)
/// reason, and any `DownReason` is taken as it is
/// (`exit_with(DownReason::Shutdown)` is Erlang's `exit(shutdown)`). Every
/// reason but [`DownReason::Exit`](crate::DownReason::Exit) is abnormal:
/// linked actors that do not trap exits are stopped. Its joiner gets an
/// error naming the reason, whichever it is.
///
/// ```
/// use smarm::{DownReason, ExitReason};
///
/// smarm::run(|| {
///     let exits = smarm::trap_exit(true).unwrap();
///     let child = smarm::spawn_link(|| smarm::exit_with(format!("lost lease {}", 7)));
///     let exit = exits.recv().unwrap();
///     assert_eq!(exit.reason, DownReason::Custom(ExitReason::new("lost lease 7")));
///     let err = child.join().unwrap_err();
///     assert_eq!(err.to_string(), "the actor exited: lost lease 7");
/// });
/// ```
///
/// # Panics
///
/// Outside an actor. Like `panic!`, it must not be called by a destructor
/// while the actor is already unwinding (the process would abort).
pub fn exit_with(reason: impl Into<DownReason>) -> ! {
    with_current_actor("exit_with", |_, _| ());
    std::panic::resume_unwind(Box::new(ExitWith(reason.into())))
}

/// How a new actor starts, beyond its closure.
#[derive(Default)]
pub(crate) struct SpawnOpts {
    /// Who spawned it (`None` for a run's root).
    pub(crate) parent: Option<Pid>,
    /// Links and monitors in place before it can run.
    pub(crate) signals: Option<Box<crate::signal::Signals>>,
    /// A stack size of its own, instead of the runtime's.
    pub(crate) stack_size: Option<usize>,
    /// Its heap limit in bytes (0: none; heap module docs).
    pub(crate) max_heap_size: u64,
}

impl SpawnOpts {
    /// A plain child of `parent`.
    pub(crate) fn child_of(parent: Option<Pid>) -> Self {
        SpawnOpts {
            parent,
            ..SpawnOpts::default()
        }
    }
}

/// Create an actor in `shared`: stack, slot, entry frame, live count,
/// enqueue.
pub(crate) fn spawn_in(
    shared: &Shared,
    f: Entry,
    opts: SpawnOpts,
) -> Result<JoinHandle, SpawnError> {
    let SpawnOpts {
        parent,
        signals,
        stack_size,
        max_heap_size,
    } = opts;
    if max_heap_size != 0 && shared.accounts.is_none() {
        return Err(SpawnError::NoHeapAccount);
    }
    let stack = match stack_size {
        None => shared.take_stack()?,
        Some(size) => shared.take_stack_sized(size)?,
    };
    let (index, slot) = match claim_slot(shared, max_heap_size) {
        Ok(claimed) => claimed,
        Err(e) => {
            shared.release_stack(stack);
            return Err(e);
        }
    };
    prepare_slot(slot, f, stack, parent);
    #[cfg(feature = "smarm-causal")]
    prepare_causal(shared, slot, signals.as_deref());
    // Its span, a child of the spawner's current one (feature `tracing`).
    #[cfg(feature = "tracing")]
    let (span, label) = actor_span(signals.as_deref());
    if let Some(signals) = signals {
        // Linked, monitored and labelled before it can run.
        slot.cold.lock().signals = Some(crate::signal::erase_signals(signals));
    }
    shared.count_spawn();
    let generation = slot.word.spawn_queued();
    let pid = Pid::from_parts(index, generation);
    #[cfg(feature = "tracing")]
    record_span(slot, span, pid, label);
    trace_event!(shared, Spawn, pid.to_bits(), parent.map_or(0, Pid::to_bits));
    shared.enqueue_woken(pid, slot);
    Ok(JoinHandle::new(pid, shared))
}

/// Take a vacant slot for a new actor and start its heap account (heap
/// (A3)); on failure nothing is held.
#[inline(always)]
fn claim_slot(shared: &Shared, max_heap_size: u64) -> Result<(u32, &Slot), SpawnError> {
    let index = shared.slots.alloc()?;
    let Some(slot) = shared.slots.get(index) else {
        return Err(SpawnError::AtCapacity {
            max_actors: shared.slots.capacity(),
        });
    };
    // Its heap account starts afresh before it can run (heap (A3)).
    if let Some(accounts) = &shared.accounts
        && accounts.start(index, max_heap_size, &slot.stop).is_none()
        && max_heap_size != 0
    {
        shared.slots.release(index);
        return Err(SpawnError::NoHeapAccount);
    }
    Ok((index, slot))
}

/// Give a claimed slot its new tenant's stack and entry, and reset what
/// the previous tenant left in it.
#[inline(always)]
fn prepare_slot(slot: &Slot, f: Entry, stack: crate::stack::Stack, parent: Option<Pid>) {
    // SAFETY: the slot is Vacant and was just taken off the free list, so
    // the spawner owns its runner cells until the enqueue (slot (I2)). A
    // null `sp` tells the first resume to write the entry frame: the
    // stack's first page is then touched by the thread that runs the
    // actor, not by the spawner.
    unsafe {
        let runner = slot.runner();
        runner.sp = std::ptr::null_mut();
        runner.stack = Some(stack);
        runner.entry = Some(f);
    }
    // A stop requested of the previous tenant while it was finishing (after
    // its last safepoint, before it read as Done) must not reach this one.
    slot.stop.store(false, Ordering::Relaxed);
    slot.pinned.store(0, Ordering::Relaxed);
    slot.overruns.store(0, Ordering::Relaxed);
    slot.budget.store(0, Ordering::Relaxed);
    // Until its first switch-out it has used none of its stack.
    slot.stack_depth.store(0, Ordering::Relaxed);
    slot.bounded_epoch.store(0, Ordering::Relaxed);
    slot.parent
        .store(parent.map_or(0, Pid::to_bits), Ordering::Relaxed);
}

/// A new actor starts level with the delay inserted so far (it owes
/// nothing from before it existed), and an actor with a label is a region
/// of its own (`causal::delay`).
#[cfg(feature = "smarm-causal")]
fn prepare_causal(shared: &Shared, slot: &Slot, signals: Option<&crate::signal::Signals>) {
    let cell = &slot.causal;
    cell.level
        .store(shared.coord.causal.global(), Ordering::Relaxed);
    cell.region.store(0, Ordering::Relaxed);
    cell.runnable_at
        .store(shared.coord.now_nanos(), Ordering::Relaxed);
    let region = signals
        .and_then(|s| s.label.as_deref())
        .map_or(0, |label| crate::causal::region::actor_region(label) + 1);
    cell.actor_region.store(region, Ordering::Relaxed);
}

/// A new actor's span, a child of the spawner's current one, and the label
/// to record in it (none when the span is disabled).
#[cfg(feature = "tracing")]
fn actor_span(signals: Option<&crate::signal::Signals>) -> (tracing::Span, Option<String>) {
    let span = tracing::info_span!(
        target: "smarm",
        "actor",
        pid = tracing::field::Empty,
        label = tracing::field::Empty
    );
    let label = match span.is_disabled() {
        true => None,
        false => signals.and_then(|s| s.label.clone()),
    };
    (span, label)
}

/// Record the new actor's pid and label in its span and give the span to
/// its slot.
#[cfg(feature = "tracing")]
fn record_span(slot: &Slot, span: tracing::Span, pid: Pid, label: Option<String>) {
    if span.is_disabled() {
        return;
    }
    // Recorded in the order a reader wants them: pid, then label.
    span.record("pid", tracing::field::display(pid));
    if let Some(label) = label {
        span.record("label", label);
    }
    // SAFETY: the spawner owns the slot until the enqueue (slot (I1)).
    unsafe { slot.spans() }.push(span);
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::runtime::{Config, init};
    use crate::scheduler;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// A stop request that lands while an actor is finishing (after its
    /// last safepoint, before it reads as Done) is left in its slot; the
    /// slot's next tenant must not inherit it.
    #[test]
    fn a_stop_left_in_a_recycled_slot_does_not_reach_its_next_tenant() {
        init(Config::exact(1).max_actors(2)).run(|| {
            let first = super::spawn(|| {});
            let index = first.pid().index();
            assert!(first.join().is_ok());
            // What such a late request leaves behind.
            scheduler::with_current_actor("test", |_, shared| {
                if let Some(slot) = shared.slots.get(index) {
                    slot.stop.store(true, crate::loom::Ordering::Release);
                }
            });
            let finished = Arc::new(AtomicBool::new(false));
            let next = {
                let finished = finished.clone();
                super::spawn(move || {
                    crate::yield_now(); // a safepoint: a stop would unwind here
                    finished.store(true, Ordering::SeqCst);
                })
            };
            assert_eq!(next.pid().index(), index, "the slot is reused");
            assert!(next.join().is_ok());
            assert!(
                finished.load(Ordering::SeqCst),
                "the next tenant was stopped"
            );
        });
    }
}
