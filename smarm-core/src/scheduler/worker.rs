//! The scheduler loop: due-check, pop, resume, handle the intent; idle
//! through the coordination layer.

use super::current::CURRENT;
use super::life::{actor_entry, finalize, forget_stack};
use super::{Counters, Shared, Verdict};
use super::{Intent, Worker};
use crate::loom::Ordering;
use crate::park::ParkResult;
use crate::slot::Pid;
use crate::slot::Slot;
use std::sync::Arc;

/// Most consecutive pops from the next slot.
pub(crate) const LIFO_STREAK: u32 = 16;
/// Every this many pops, take the pinned queue's front first, and the local
/// queue's back instead of its front if `BACK_TURN_SLICES` timeslices have
/// passed since the back was last taken (`back_turn`).
pub(crate) const FAIRNESS_TICK: u32 = 31;

/// Timeslices between two turns of the local queue's back.
const BACK_TURN_SLICES: u64 = 10;
/// Every this many pops, look at the injector before the local queue.
pub(crate) const INJECTOR_TICK: u32 = 61;

/// An idle scheduler's spin, in pause instructions (about 25 ns each
/// here): between two looks at the queues (the gap doubles from the first
/// to the last value: look soon, then rarely), before it parks if it has
/// seen nothing (about 13 us), and how long a short sibling backlog must
/// persist before it is stolen (about 50 us; see `idle`).
const LOOK_GAP_FIRST: u32 = 16;
const LOOK_GAP_LAST: u32 = 64;
const SPIN_BEFORE_PARK: u32 = 512;
const SHORT_BACKLOG_WAIT: u32 = 2048;

/// A sibling backlog this long is stolen at once.
const STEAL_AT_ONCE: usize = 4;

/// Actors taken from the queues during one short-backlog wait that mean
/// the backlog is being served, not stuck (see `idle`).
const SERVED_BRISKLY: usize = 16;

/// How often a parked spare scheduler looks whether it may leave.
const SPARE_LOOK: std::time::Duration = std::time::Duration::from_millis(5);

/// Every this many pops, a busy scheduler checks for due timers.
const DUE_CHECK_TICK: u32 = 8;

/// Every this many pops, a scheduler with deferred drops pending tries to
/// reclaim them (and always before it parks).
const RECLAIM_TICK: u32 = 64;

/// Run scheduler `id` of `shared` on this thread until the verdict says
/// the runtime is done.
pub(crate) fn run_worker(shared: &Arc<Shared>, id: usize) {
    // Inside the context the layers above installed (the tokio context):
    // every actor this thread runs finds it.
    let context = shared.locals().get_or_default::<super::ThreadContext>();
    context.run(&mut || run_loop::<false>(shared, id));
}

/// Run scheduler `id` of a simulated runtime on this context of the
/// simulation's thread (simulated (S1)): no thread context (the tokio
/// bridge is refused in a simulation) and no dispatch of its own (the
/// thread's default already is the one the run started under).
#[cfg(feature = "sim")]
pub(crate) fn run_worker_simulated(shared: &Arc<Shared>, id: usize) {
    run_loop::<true>(shared, id);
}

/// The scheduler loop; `SIM`: of a simulated runtime (a constant, so the
/// threaded loop carries no branch of the simulation's).
fn run_loop<const SIM: bool>(shared: &Arc<Shared>, id: usize) {
    let _altstack = crate::stack::ensure_altstack();
    // Actors' spans go to the subscriber that was the default where the
    // runtime was started. (Not in a simulation: its loops interleave on
    // one thread, and the guards must drop in order.)
    #[cfg(feature = "tracing")]
    let _dispatch = shared
        .dispatch()
        .filter(|_| !SIM)
        .map(|d| tracing::dispatcher::set_default(&d));
    let worker = Worker::new(id, shared);
    CURRENT.with(|c| c.set(&worker));
    shared.reclaim.online(id);
    let mut steal_buf = Vec::new();
    let mut may_steal = false;
    loop {
        #[cfg(feature = "sim")]
        if SIM {
            super::simulated::between(shared, &worker);
        }
        // Between two actors: nothing read before is still held.
        shared.reclaim.quiescent(id);
        if shared.reclaim.has_pending() && worker.pick.tick.get().is_multiple_of(RECLAIM_TICK) {
            shared.reclaim.reclaim();
        }
        // The clock is read at most every DUE_CHECK_TICK pops (a few us of
        // timer lateness under load; an idle scheduler checks at once).
        if worker.pick.tick.get().is_multiple_of(DUE_CHECK_TICK) && shared.coord.deadline_due() {
            shared.fire_due_timers(true);
        }
        // While every scheduler is busy nobody parks in the IO poll: look
        // now and then (netpoll).
        if worker
            .pick
            .tick
            .get()
            .is_multiple_of(super::netpoll::POLL_TICK)
            && !SIM
        {
            shared.netpoll.poll_now(shared, super::netpoll::POLL_GAP);
        }
        let Some(pid) = pop::<SIM>(
            shared,
            &worker,
            &mut steal_buf,
            std::mem::take(&mut may_steal),
        ) else {
            let idle_since = crate::clock::now();
            let idled = idle::<SIM>(shared, &worker);
            let stats = &shared.sched.queues[id].stats;
            stats.idle_ticks.store(
                stats.idle_ticks.load(Ordering::Relaxed)
                    + crate::clock::now().wrapping_sub(idle_since),
                Ordering::Relaxed,
            );
            match idled {
                Idle::Continue => continue,
                Idle::Steal => {
                    may_steal = true;
                    continue;
                }
                Idle::Done => break,
            }
        };
        // Chain rule: we took one; if stealable work remains and a sibling
        // is parked, wake one so the surplus runs in parallel.
        if shared.sched.queues[id].local.len() > 0 || shared.sched.injector.len() > 0 {
            shared.coord.wake_one_if_idle();
        }
        run_actor(shared, &worker, pid);
    }
    shared.reclaim.offline(id);
    CURRENT.with(|c| c.set(std::ptr::null()));
    shared.release_stack_cache(&worker);
    if shared.is_spare(id) {
        shared.spare_left(id);
    }
}

fn pop<const SIM: bool>(
    shared: &Shared,
    w: &Worker,
    steal_buf: &mut Vec<Pid>,
    may_steal: bool,
) -> Option<Pid> {
    #[cfg(feature = "sim")]
    if SIM {
        // No park is handed over directly in a simulation (the thread
        // passes between actors only through the loop, simulated (S1)):
        // a spent streak tells `direct_target`, at no cost to the threaded
        // loop's parks.
        w.pick.lifo_streak.set(LIFO_STREAK);
        return super::simulated::pop(shared, w);
    }
    let tick = w.pick.tick.get().wrapping_add(1);
    w.pick.tick.set(tick);
    let queues = w.own();
    // Pinned actors (preempted, or unwinding) wait their turn behind other
    // work, but are taken first now and then so they cannot starve.
    if tick.is_multiple_of(FAIRNESS_TICK)
        && let Some(pid) = queues.pinned.pop_front()
    {
        return Some(pid);
    }
    let next = queues.next.take();
    if w.pick.lifo_streak.get() < LIFO_STREAK {
        if let Some(pid) = next {
            w.pick.lifo_streak.set(w.pick.lifo_streak.get() + 1);
            return Some(pid);
        }
    } else if let Some(pid) = next {
        // Streak spent: the next-slot actor yields its turn to the queue.
        queues.local.push_back(pid);
    }
    w.pick.lifo_streak.set(0);
    if tick.is_multiple_of(INJECTOR_TICK)
        && let Some(pid) = shared.sched.injector.pop_front()
    {
        return Some(pid);
    }
    let local = if tick.is_multiple_of(FAIRNESS_TICK) && back_turn(shared, w) {
        queues.local.pop_back()
    } else {
        queues.local.pop_front()
    };
    if let Some(pid) = local {
        return Some(pid);
    }
    if let Some(pid) = shared.sched.injector.pop_front() {
        return Some(pid);
    }
    if let Some(pid) = queues.pinned.pop_front() {
        return Some(pid);
    }
    if may_steal {
        steal(shared, w, steal_buf)
    } else {
        None
    }
}

/// Whether this fairness tick takes the local queue's back: once
/// `BACK_TURN_SLICES` timeslices (10 ms by default) have passed since it
/// last did, or since the scheduler started. The back holds yielded
/// actors, and also the oldest new work: in a spawning tree, its shallow
/// nodes, whose subtrees depth-first order means to start late. Taking the
/// back every fairness tick started one every 31 pops, and skynet ran in
/// ~430 ms or ~1,000 ms (a live set three times larger), one run in three;
/// once a timeslice, 350 or 950 ms; once in ten, from the start, 299-314
/// ms in ten runs out of ten. A yielded actor under a stream of new work
/// still gets its turn, within ten timeslices per actor ahead of it.
#[inline]
fn back_turn(shared: &Shared, w: &Worker) -> bool {
    let now = crate::clock::now();
    let gap = BACK_TURN_SLICES * shared.sched.slice_ticks;
    if now.wrapping_sub(w.pick.back_taken_at.get()) < gap {
        return false;
    }
    w.pick.back_taken_at.set(now);
    true
}

fn steal(shared: &Shared, w: &Worker, buf: &mut Vec<Pid>) -> Option<Pid> {
    let n = shared.sched.queues.len();
    let present = shared.sched.present.load(Ordering::Acquire);
    for k in 1..n {
        let victim = (w.id + k) % n;
        if present & (1u64 << victim) == 0 {
            continue; // an absent spare's queue is empty (sysmon (M3))
        }
        shared.sched.queues[victim].local.steal_into(buf);
        if let Some(first) = buf.pop() {
            Counters::bump(&shared.sched.queues[w.id].stats.steals);
            trace_event!(shared, Steal, victim as u64, buf.len() as u64 + 1);
            let own = &shared.sched.queues[w.id].local;
            // Keep the stolen order: the victim's oldest runs last.
            for pid in buf.drain(..).rev() {
                own.push_front(pid);
            }
            return Some(first);
        }
    }
    None
}

enum Idle {
    Continue,
    /// A sibling's backlog is worth taking now (long, or persistent).
    Steal,
    Done,
}

fn idle<const SIM: bool>(shared: &Arc<Shared>, w: &Worker) -> Idle {
    match shared.verdict(w.id) {
        Verdict::AllDone => {
            shared.clear_timers();
            shared.reclaim.drain();
            // Terminal wake: siblings parked on a now-stale picture re-run
            // the verdict and reach AllDone themselves.
            shared.coord.wake_all();
            return Idle::Done;
        }
        Verdict::Sweep => {
            shared.root_exit_sweep();
            return Idle::Continue;
        }
        Verdict::Idle => {}
    }
    #[cfg(feature = "sim")]
    if SIM {
        super::simulated::idle(shared, w);
        return Idle::Continue;
    }
    if let Some(found) = spin_for_work(shared, w) {
        return found;
    }
    park_idle(shared, w)
}

/// Spin a little before parking, looking at the queues ever more rarely:
/// `Some` when there is work to take (or a sibling's backlog to steal),
/// `None` once it is time to park.
fn spin_for_work(shared: &Shared, w: &Worker) -> Option<Idle> {
    // Spin a little before parking: under request/response traffic the
    // next message usually lands within microseconds, and a futex sleep and
    // wake costs more than that. Our own queues or the injector end the
    // spin; the park below re-checks everything anyway.
    //
    // A sibling's backlog is stolen at once only when it is long. A short
    // one is usually request/response traffic that its scheduler reaches
    // within microseconds; stealing it moves the actors (their stacks, and
    // then their partners) between cores for every message, which costs
    // more than the wait: so it is stolen only once it has persisted for
    // SHORT_BACKLOG_WAIT (about fifty microseconds) while fewer than
    // SERVED_BRISKLY actors were taken from the queues.
    let (mut gap, mut empty_for, mut backlog_for) = (LOOK_GAP_FIRST, 0, 0);
    let served = || {
        shared
            .sched
            .queues
            .iter()
            .map(|q| q.local.taken())
            .fold(0, usize::wrapping_add)
    };
    let mut served_at_start = served();
    loop {
        if shared.sched.injector.len() > 0
            || shared.sched.queues[w.id].pinned.len() > 0
            || shared.sched.queues[w.id].local.len() > 0
        {
            return Some(Idle::Continue);
        }
        let backlog = shared.present_queues().map(|q| q.local.len()).max();
        match backlog.unwrap_or(0) {
            0 if empty_for >= SPIN_BEFORE_PARK => break,
            0 => (empty_for, backlog_for) = (empty_for + gap, 0),
            n if n >= STEAL_AT_ONCE => return Some(Idle::Steal),
            _ if backlog_for >= SHORT_BACKLOG_WAIT => {
                let now_served = served();
                if now_served.wrapping_sub(served_at_start) < SERVED_BRISKLY {
                    return Some(Idle::Steal);
                }
                // Served briskly all along: traffic its scheduler keeps up
                // with. Watch another window.
                (backlog_for, served_at_start) = (0, now_served);
            }
            _ => backlog_for += gap,
        }
        // Look rarely: every look pulls the busy schedulers' queue lines
        // away from them.
        for _ in 0..gap {
            std::hint::spin_loop();
        }
        gap = (gap * 2).min(LOOK_GAP_LAST);
    }
    None
}

/// Park an idle scheduler (as the timekeeper, in the IO poll or on its
/// futex) until work, a wake or a deadline; fire what is due on waking.
/// A spare that is not needed leaves instead.
fn park_idle(shared: &Arc<Shared>, w: &Worker) -> Idle {
    // A spare leaves once it is not needed (sysmon (M3)). The wake that
    // brought it here may have been an insert's call for a timekeeper
    // (park (I5)), which it will never become: pass that call on.
    let spare = shared.is_spare(w.id);
    if spare && shared.spare_may_leave(w.id) {
        if shared.coord.timer_unkept() {
            shared.coord.wake_one_if_idle();
        }
        return Idle::Done;
    }
    // Timekeeper: at most one idle scheduler parks toward the earliest
    // deadline of every timer shard (park (I4)).
    let tk_deadline = shared.coord.keep_time(w.id);
    if shared.reclaim.has_pending() {
        shared.reclaim.reclaim();
    }
    shared.reclaim.offline(w.id);
    // A spare that must stay looks again soon whether it may leave.
    let deadline = if spare {
        let look = crate::clock::instant() + SPARE_LOOK;
        Some(tk_deadline.map_or(look, |d| d.min(look)))
    } else {
        tk_deadline
    };
    // With actors waiting on fds, one idle scheduler parks in the IO poll
    // (netpoll (P1)); the others on their futexes.
    let result = match shared.netpoll.park(shared, w.id, deadline) {
        Some(result) => result,
        None => shared
            .coord
            .park(w.id, deadline, || shared.work_visible(w.id)),
    };
    shared.reclaim.online(w.id);
    let stats = &shared.sched.queues[w.id].stats;
    match result {
        ParkResult::WorkFound => {}
        ParkResult::Woken => {
            Counters::bump(&stats.parks);
            Counters::bump(&stats.wakes);
        }
        ParkResult::TimedOut => Counters::bump(&stats.parks),
    }
    if tk_deadline.is_some() {
        // Hand the role back before firing, so an insert made by what we
        // fire sees no stale holder.
        shared.coord.disarm_timer(w.id);
        shared.fire_due_timers(false);
        // This scheduler is about to run work, which may block its thread:
        // timers still pending go to an idle sibling's keeping (park (I5)).
        if shared.coord.timer_unkept() {
            shared.coord.wake_one_if_idle();
        }
    } else if result == ParkResult::TimedOut {
        shared.fire_due_timers(false);
    }
    Idle::Continue
}

/// Resume `pid` until it switches back, then act on its intent.
fn run_actor(shared: &Shared, w: &Worker, pid: Pid) {
    let Some(slot) = shared.slots.get(pid.index()) else {
        return;
    };
    #[cfg(feature = "smarm-causal")]
    super::causal::before_resume(shared, w, slot);
    begin_run(shared, w, pid, slot);
    resume(shared, w, pid, slot);
    // Back on the scheduler stack, which holds no section (the actor's
    // count went with it). The actor that switched back may not be `pid`:
    // parks hand over directly to the next-slot actor (see
    // `direct_target`), so act on whoever runs now.
    w.actor.sections.set(0);
    if shared.accounts.is_some() {
        crate::heap::leave(); // heap (A4)
    }
    let held_locks = w.actor.held_locks.replace(std::ptr::null());
    let Some(pid) = w.actor.current.take() else {
        return;
    };
    let Some(slot) = shared.slots.get(pid.index()) else {
        return;
    };
    #[cfg(feature = "tracing")]
    super::spans::exit(slot);
    #[cfg(feature = "smarm-causal")]
    super::causal::after_run(shared, w, slot);
    crate::stack::set_running_pid(0);
    w.own().stats.running.store(0, Ordering::Relaxed);
    match w.actor.intent.get() {
        Intent::Yield | Intent::Preempt => {
            slot.word.requeue();
            shared.enqueue_yielded(w, pid, slot);
        }
        Intent::Park => {
            if slot.word.commit_park() == crate::slot::word::ParkCommit::Requeue {
                shared.enqueue_yielded(w, pid, slot);
            }
        }
        Intent::Exit => {
            let result = w
                .actor
                .exit_result
                .take()
                .unwrap_or_else(|| Ok(Box::new(())));
            finalize(shared, w.id, pid, slot, result);
        }
        intent @ (Intent::Overflow | Intent::HeapLimit) => {
            w.actor.intent.set(Intent::Exit);
            let why: Box<dyn std::any::Any + Send> = if intent == Intent::Overflow {
                Box::new(super::life::Overflowed)
            } else {
                Box::new(super::life::HeapLimitKilled)
            };
            super::life::finalize_abandoned(shared, w.id, pid, slot, held_locks, why);
        }
        Intent::Hibernate => {
            release_hibernated_stack(shared, pid, slot);
            if slot.word.commit_park() == crate::slot::word::ParkCommit::Requeue {
                shared.enqueue_yielded(w, pid, slot);
            }
        }
    }
}

/// Switch to `pid` (its first resume starts its entry frame on a stack of
/// its own) and return once some actor switches back to this scheduler.
#[inline(always)]
fn resume(shared: &Shared, w: &Worker, pid: Pid, slot: &Slot) {
    // SAFETY: we popped `pid`, so we own its runner cells (slot (I2)). A
    // null `sp` is a first resume: the entry frame goes at the top of the
    // actor's own fresh stack. Otherwise `sp` was saved by its last switch
    // out, on a stack it still owns. `sched_sp` is our own save cell.
    unsafe {
        let runner = slot.runner();
        if runner.sp.is_null() {
            if runner.stack.is_none() {
                // A hibernated actor's wake (life (H1)): a fresh stack.
                runner.stack = shared.take_stack_for_wake();
            }
            if let Some(stack) = &runner.stack {
                if let Some(account) = shared.accounts.as_ref().and_then(|a| a.cell(pid.index())) {
                    account.set_stack(stack.top(), stack.size());
                }
                runner.sp = crate::context::init_stack(
                    stack.top(),
                    actor_entry,
                    (slot as *const Slot).cast_mut().cast(),
                );
            }
        }
        let sp = runner.sp;
        if let Some(stack) = &runner.stack {
            // Unwinding from the actor leads back here (context's link).
            crate::context::set_link(stack.top(), w.sched_sp.as_ptr());
        }
        #[cfg(feature = "budget-accounting")]
        let start = crate::clock::now();
        if sp.is_null() {
            // No stack to be had for a waking hibernated actor: it ends,
            // reported like a panic, rather than wait for memory forever.
            let why: crate::slot::table::Value = Box::new(
                "smarm: a hibernated actor woke and no stack could be had for it (out of memory \
                 or vm.max_map_count)",
            );
            w.actor.exit_result.set(Some(Err(why)));
            w.actor.intent.set(Intent::Exit);
        } else {
            crate::context::switch(w.sched_sp.as_ptr(), sp);
        }
        #[cfg(feature = "budget-accounting")]
        {
            slot.budget.store(
                slot.budget.load(Ordering::Relaxed) + crate::clock::now().wrapping_sub(start),
                Ordering::Relaxed,
            );
            // The stack in use at the switch out (Erlang's stack_size). No
            // direct handoff with the feature: the actor back is `pid`, and
            // until its park is committed below we still own its runner.
            let runner = slot.runner();
            if let Some(stack) = &runner.stack {
                let depth = (stack.top() as usize).saturating_sub(runner.sp as usize);
                slot.stack_depth
                    .store(u32::try_from(depth).unwrap_or(u32::MAX), Ordering::Relaxed);
            }
        }
    }
}

/// A hibernated actor has left its stack for good: give the stack back
/// (one of another size is kept, without its pages: its size would be
/// lost with it).
fn release_hibernated_stack(shared: &Shared, pid: Pid, slot: &Slot) {
    // SAFETY: the actor has left its stack for good (life (H1)) and we
    // own its runner until the park is committed.
    let runner = unsafe { slot.runner() };
    runner.sp = std::ptr::null_mut();
    if let Some(stack) = runner.stack.take() {
        forget_stack(shared, pid);
        if stack.size() == shared.stack_size() {
            shared.release_stack(stack);
        } else {
            stack.discard_pages();
            runner.stack = Some(stack);
        }
    }
}

/// Mark `pid` running on this scheduler, just before switching to it.
#[inline]
fn begin_run(shared: &Shared, w: &Worker, pid: Pid, slot: &Slot) {
    trace_event!(shared, Resume, pid.to_bits(), 0);
    debug_assert_eq!(
        slot.word.load().generation(),
        pid.generation(),
        "queued a stale pid"
    );
    slot.word.start_running();
    w.actor.current.set(Some(pid));
    w.own()
        .stats
        .running
        .store(pid.to_bits(), Ordering::Relaxed);
    w.actor.wait_open.set(false);
    w.slice.resumes.set(w.slice.resumes.get().wrapping_add(1));
    Counters::bump(&w.own().stats.actors_run);
    crate::stack::set_running_pid(pid.to_bits());
    if let Some(accounts) = &shared.accounts {
        enter_account(accounts, pid);
    }
    #[cfg(feature = "tracing")]
    super::spans::enter(slot);
}

/// Charge this thread's allocations to `pid` until it switches back
/// (heap (A4)).
fn enter_account(accounts: &crate::heap::Accounts, pid: Pid) {
    match accounts.cell(pid.index()) {
        Some(account) => crate::heap::enter(account),
        None => crate::heap::leave(),
    }
}

/// The direct handoff of a park: when the loop would next run the
/// next-slot actor with nothing else to do first, the parking actor
/// switches straight to it, skipping the round trip through the scheduler
/// stack. Returns the stack pointer to switch to, having done the loop's
/// part (tick, quiescent state, chain wake, `begin_run`); the park itself
/// is committed by `settle_handoff` once the parked stack is left.
///
/// Only for a plain park (not pinned), a next-slot actor that has run
/// before (it resumes inside `switch_out`, where the settle runs), and a
/// tick on which the loop has no periodic work (timers, reclamation,
/// fairness, injector): everything else takes the loop. Not with
/// `budget-accounting`, whose timing brackets the loop's own switch.
pub(super) fn direct_target(w: &Worker, shared: &Shared) -> Option<*mut u8> {
    // (A simulated scheduler's streak is always spent: `pop`.)
    if cfg!(feature = "budget-accounting") || w.pick.lifo_streak.get() >= LIFO_STREAK {
        return None;
    }
    // A profiling session pays debts and counts region time on the loop's
    // way between two actors (scheduler causal).
    #[cfg(feature = "smarm-causal")]
    if shared.coord.causal.active() {
        return None;
    }
    let tick = w.pick.tick.get().wrapping_add(1);
    if tick.is_multiple_of(DUE_CHECK_TICK)
        || tick.is_multiple_of(FAIRNESS_TICK)
        || tick.is_multiple_of(INJECTOR_TICK)
        || (tick.is_multiple_of(RECLAIM_TICK) && shared.reclaim.has_pending())
    {
        return None;
    }
    let (pid, (slot, sp)) = w.own().next.take_if(|pid| {
        let slot = shared.slots.get(pid.index())?;
        // SAFETY: `pid` is in this scheduler's next slot and we are inside
        // its owner operation (next slot (N1)), so this scheduler owns its
        // runner cells (slot (I2)); nothing else reads them now.
        let runner = unsafe { slot.runner() };
        // A first run starts from the loop.
        if runner.sp.is_null() {
            return None;
        }
        if let Some(stack) = &runner.stack {
            // SAFETY: as above, the stack is this scheduler's to touch.
            // Unwinding from it leads to this scheduler's context, parked
            // in `run_actor` (context's link).
            unsafe { crate::context::set_link(stack.top(), w.sched_sp.as_ptr()) };
        }
        Some((slot, runner.sp))
    })?;
    w.pick.tick.set(tick);
    w.pick.lifo_streak.set(w.pick.lifo_streak.get() + 1);
    // The parking actor leaves its spans here, on its thread (spans (S1)).
    #[cfg(feature = "tracing")]
    if let Some(parking) = w
        .actor
        .current
        .get()
        .and_then(|p| shared.slots.get(p.index()))
    {
        super::spans::exit(parking);
    }
    // Between two actors, as at the top of the loop.
    shared.reclaim.quiescent(w.id);
    if shared.sched.queues[w.id].local.len() > 0 || shared.sched.injector.len() > 0 {
        shared.coord.wake_one_if_idle();
    }
    begin_run(shared, w, pid, slot);
    Some(sp)
}

/// Run by an actor right after it is switched back in: commit the park of
/// the actor that handed over to it directly, now that its stack is left
/// (a waker may resume it anywhere from here on).
#[inline]
pub(super) fn settle_handoff(w: &Worker, shared: &Shared) {
    let Some(parked) = w.actor.handed_off.take() else {
        return;
    };
    if let Some(slot) = shared.slots.get(parked.index())
        && slot.word.commit_park() == crate::slot::word::ParkCommit::Requeue
    {
        shared.enqueue_yielded(w, parked, slot);
    }
}
