//! The driver: runs a simulated runtime's scheduler loops on contexts of
//! their own on the calling thread, one at a time, and makes every choice
//! their decision points hand it (`scheduler/simulated.rs`) from the run's
//! [`Chooser`].
//!
//! The driver's own context (the thread's stack: "home") picks which loop
//! goes on, switches to it, and gets the thread back when that loop is
//! between two actors or idle. When no loop can do anything, simulated
//! time jumps to the earliest timer; when there is no timer either, the
//! run is stuck: a deadlock, reported with what every actor waits on.
//!
//! # Invariants
//!
//! - (D1) One context runs at a time: home, or the one loop it switched
//!   to, which switches only back home (scheduler simulated (S1)).
//! - (D2) Every decision (the loop that goes on, the actor it picks, a
//!   jump of simulated time) is folded into the run's digest and kept in
//!   its decision log, in order, so two runs of one seed can be compared
//!   step by step.
//! - (D3) A loop's stack outlives its frames: a loop that never finished
//!   (an abandoned run) keeps its stack, leaked.

use super::chooser::{Chooser, Digest};
use super::{Decision, Invariant, Schedule, Settings, Stuck};
use crate::hash::BuildWordHasher;
use crate::scheduler::Shared;
use crate::scheduler::simulated::{self, Driver, Source};
use crate::slot::Pid;
use crate::stack::Stack;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

/// Where a loop is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    /// Not started.
    Fresh,
    /// Between two actors: runnable.
    Between,
    /// Found nothing to run.
    Idle,
    /// Returned (the run is over for it).
    Done,
}

/// One scheduler loop's context.
struct Loop {
    /// Its saved stack pointer while suspended.
    sp: Cell<*mut u8>,
    state: Cell<State>,
    /// Its stack (D3: leaked if the loop never finishes).
    stack: Cell<Option<Stack>>,
}

/// What a loop's entry needs: handed over by pointer, alive as long as
/// the driver.
struct Start {
    core: *const Core,
    shared: *const Arc<Shared>,
    id: usize,
}

/// The driver's state, shared by home and the loops (D1: never borrowed
/// across a switch).
pub(super) struct Core {
    loops: Vec<Loop>,
    home: Cell<*mut u8>,
    chooser: RefCell<Chooser>,
    preempt_one_in: u32,
    /// smarm's own fault sites are on (`faults.rs`).
    runtime_faults: bool,
    /// When a liveness phase stops every fault (faults (F3)), in simulated
    /// nanoseconds.
    quiet_at: u64,
    log: RefCell<Log>,
    /// A loop's panic (a runtime bug), raised on the simulation's thread.
    panic: RefCell<Option<Box<dyn std::any::Any + Send>>>,
}

/// The decisions so far (D2).
pub(super) struct Log {
    pub(super) digest: Digest,
    pub(super) decisions: Vec<Decision>,
    /// Scheduler steps taken.
    pub(super) steps: u64,
    /// Preemptions at safepoints.
    pub(super) preemptions: u64,
    /// Where the actors run came from.
    pub(super) schedule: Schedule,
    /// The actors the fault plan killed.
    pub(super) killed: Vec<Pid>,
    /// smarm's own fault sites fired.
    pub(super) faults_fired: u64,
    /// The scheduler each actor last ran on, by pid bits (looked up, never
    /// iterated: chooser (C1)).
    last_ran: HashMap<u64, usize, BuildWordHasher>,
    /// Keep every decision (a determinism check), or only the digest.
    keep: bool,
}

impl Log {
    /// An empty log; `keep`: every decision, not only the digest.
    fn new(keep: bool) -> Log {
        Log {
            digest: Digest::new(),
            decisions: Vec::new(),
            steps: 0,
            preemptions: 0,
            schedule: Schedule::default(),
            killed: Vec::new(),
            faults_fired: 0,
            last_ran: HashMap::default(),
            keep,
        }
    }

    fn add(&mut self, decision: Decision) {
        let words = decision.words();
        for w in words {
            self.digest.add(w);
        }
        if self.keep {
            self.decisions.push(decision);
        }
    }
}

/// The driver as the schedulers see it.
struct Handle(Rc<Core>);

impl Driver for Handle {
    fn between(&self, id: usize) {
        self.0.suspend(id, State::Between);
    }

    fn idle(&self, id: usize) {
        self.0.suspend(id, State::Idle);
    }

    fn pick(&self, id: usize, candidates: &[Pid], from: &[Source]) -> usize {
        let at = self.0.chooser.borrow_mut().pick(candidates);
        let now = super::elapsed_nanos();
        let mut log = self.0.log.borrow_mut();
        let before = log.last_ran.insert(candidates[at].to_bits(), id);
        log.schedule.note(from[at], before.is_some_and(|b| b != id));
        log.add(Decision::Pick {
            at: now,
            scheduler: id,
            pid: candidates[at],
            of: candidates.len(),
        });
        at
    }

    fn preempt(&self) -> bool {
        let preempt =
            self.0.preempt_one_in > 0 && self.0.chooser.borrow_mut().preempt(self.0.preempt_one_in);
        if preempt {
            self.0.log.borrow_mut().preemptions += 1;
        }
        preempt
    }

    fn below(&self, n: usize) -> usize {
        self.0.chooser.borrow_mut().order(n)
    }

    fn random(&self) -> u64 {
        self.0.chooser.borrow_mut().random()
    }

    fn buggify(&self, site: &'static str) -> bool {
        !self.0.quiet() && self.0.chooser.borrow_mut().buggify(site)
    }

    fn runtime_fault(&self, site: &'static str) -> bool {
        let fired = self.0.runtime_faults
            && !self.0.quiet()
            && self.0.chooser.borrow_mut().runtime_fault(site);
        if fired {
            self.0.log.borrow_mut().faults_fired += 1;
        }
        fired
    }
}

impl Core {
    /// Whether a liveness phase has stopped the faults (faults (F3)).
    fn quiet(&self) -> bool {
        super::elapsed_nanos() >= self.quiet_at
    }

    /// Save loop `id`'s context in `state` and switch home (D1).
    fn suspend(&self, id: usize, state: State) {
        let l = &self.loops[id];
        l.state.set(state);
        // SAFETY: `l.sp` is this loop's save cell; home's stack pointer was
        // saved by the switch that resumed this loop and home is suspended
        // there, on the thread's own stack (D1).
        unsafe { crate::context::switch(l.sp.as_ptr(), self.home.get()) };
    }
}

/// A loop's first frame: run the scheduler loop, then switch home for good.
///
/// # Safety
///
/// `arg` points at a `Start` that outlives the loop.
unsafe extern "C" fn entry(arg: *mut u8) -> ! {
    // SAFETY: the driver keeps every `Start`, its `Core` and the runtime's
    // `Arc<Shared>` alive until every loop is done or abandoned (D3).
    let start = unsafe { &*arg.cast::<Start>() };
    // SAFETY: as above.
    let (core, shared) = unsafe { (&*start.core, &*start.shared) };
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        crate::scheduler::run_worker_simulated(shared, start.id);
    }));
    if let Err(payload) = run {
        *core.panic.borrow_mut() = Some(payload);
    }
    let l = &core.loops[start.id];
    l.state.set(State::Done);
    loop {
        // SAFETY: as in `Core::suspend`; a done loop is never resumed.
        unsafe { crate::context::switch(l.sp.as_ptr(), core.home.get()) };
    }
}

/// How a drive ended.
pub(super) struct Driven {
    pub(super) log: Log,
    /// Why the run had to be stopped, if it did.
    pub(super) stuck: Option<Stuck>,
    /// Every loop returned: the runtime may be ended and dropped.
    pub(super) finished: bool,
    /// A scheduler loop's own panic.
    pub(super) panic: Option<Box<dyn std::any::Any + Send>>,
}

/// Simulated steps a run may take to wind down once stopped.
const DRAIN_STEPS: u64 = 1_000_000;

/// Real time to wait for the real sockets an otherwise idle run waits on.
const REAL_IO_WAIT: Duration = Duration::from_millis(50);

/// Run `shared`'s schedulers to the end of the run (or until it is stuck
/// and cannot be stopped), choosing from `chooser`.
pub(super) fn drive(
    shared: &Arc<Shared>,
    settings: &Settings,
    invariants: &[Invariant],
    chooser: Chooser,
) -> Driven {
    let n = shared.scheduler_count();
    let pool = crate::stack::pool_for(LOOP_STACK);
    let mut loops = Vec::with_capacity(n);
    for _ in 0..n {
        let stack = match pool.take() {
            Ok(stack) => stack,
            Err(e) => panic!("smarm::sim: could not map a scheduler loop's stack: {e:?}"),
        };
        loops.push(Loop {
            sp: Cell::new(std::ptr::null_mut()),
            state: Cell::new(State::Fresh),
            stack: Cell::new(Some(stack)),
        });
    }
    let core = Rc::new(Core {
        loops,
        home: Cell::new(std::ptr::null_mut()),
        chooser: RefCell::new(chooser),
        preempt_one_in: settings.preempt_one_in,
        runtime_faults: settings.runtime_faults,
        quiet_at: settings.liveness.as_ref().map_or(u64::MAX, |l| l.quiet_at),
        log: RefCell::new(Log::new(settings.keep_decisions)),
        panic: RefCell::new(None),
    });
    let starts: Vec<Start> = (0..n)
        .map(|id| Start {
            core: Rc::as_ptr(&core),
            shared,
            id,
        })
        .collect();
    for (l, start) in core.loops.iter().zip(&starts) {
        let stack = l.stack.take();
        if let Some(stack) = &stack {
            // SAFETY: the stack is fresh and ours; its top is 16-byte
            // aligned; `start` lives until the drive ends (D3).
            let sp = unsafe {
                crate::context::init_stack(
                    stack.top(),
                    entry,
                    std::ptr::from_ref(start).cast_mut().cast(),
                )
            };
            // An unwinder (a panic's backtrace) walks from a loop's frames
            // into home's, which is suspended in `core.home` whenever a
            // loop runs (context (I3)).
            // SAFETY: the stack was prepared just above and is ours.
            unsafe { crate::context::set_link(stack.top(), core.home.as_ptr()) };
            l.sp.set(sp);
        }
        l.stack.set(stack);
    }
    simulated::install(Rc::new(Handle(core.clone())));
    let _altstack = crate::stack::ensure_altstack();
    let stuck = run_loops(shared, settings, invariants, &core);
    simulated::uninstall();
    simulated::leave();
    let finished = core.loops.iter().all(|l| l.state.get() == State::Done);
    for l in &core.loops {
        // Not given back, a stack stays mapped (D3: `Stack` unmaps nothing
        // on drop).
        if let Some(stack) = l.stack.take()
            && finished
        {
            pool.give_back(stack);
        }
    }
    let panic = core.panic.borrow_mut().take();
    let log = std::mem::replace(&mut *core.log.borrow_mut(), Log::new(false));
    if !finished {
        // The loops' frames hold `starts` and `core` (D3).
        std::mem::forget(starts);
        std::mem::forget(core);
    }
    Driven {
        log,
        stuck,
        finished,
        panic,
    }
}

/// A scheduler loop's stack: its frames are the runtime's own, shallow.
const LOOP_STACK: usize = 256 << 10;

/// Home's loop: resume loops until all are done; `Some` if the run was
/// stuck and stopped.
fn run_loops(
    shared: &Arc<Shared>,
    settings: &Settings,
    invariants: &[Invariant],
    core: &Core,
) -> Option<Stuck> {
    let mut stuck = None;
    let mut drain_left = DRAIN_STEPS;
    let mut runnable = Vec::with_capacity(core.loops.len());
    let mut alive = LivenessWatch::new(settings);
    loop {
        if core.panic.borrow().is_some() {
            return stuck;
        }
        if stuck.is_none()
            && let Some(broken) = invariants.iter().find(|i| !(i.holds)())
        {
            stuck = Some(Stuck::Invariant {
                name: broken.name,
                step: core.log.borrow().steps,
                at: super::elapsed(),
            });
            shared.request_stop_all(None);
        }
        if stuck.is_none()
            && let Some(late) = alive.check(false)
        {
            stuck = Some(late);
            shared.request_stop_all(None);
        }
        runnable.clear();
        let mut all_done = true;
        for (id, l) in core.loops.iter().enumerate() {
            let go = match l.state.get() {
                State::Fresh | State::Between => true,
                State::Idle => simulated::idle_has_work(shared, id),
                State::Done => false,
            };
            all_done &= l.state.get() == State::Done;
            if go {
                runnable.push(id);
            }
        }
        if all_done {
            // Unmet at the end: reported unless the root failed first.
            return stuck.or_else(|| alive.check(true));
        }
        if runnable.is_empty() {
            // Real sockets first (loopback delivers within the write that
            // sent: their readiness is there to see), then time.
            if shared.netpoll.poll_simulated(shared, Duration::ZERO) {
                continue;
            }
            if let Some(deadline) = shared.coord.earliest_deadline_nanos() {
                // Timers are never early, and late by a seeded amount, as
                // on a loaded machine.
                let late = core
                    .chooser
                    .borrow_mut()
                    .step_time(settings.timer_lateness_nanos);
                let ahead = deadline.saturating_sub(shared.coord.now_nanos());
                super::advance(Duration::from_nanos(ahead.saturating_add(late)));
                core.log.borrow_mut().add(Decision::Time {
                    at: super::elapsed_nanos(),
                });
                continue;
            }
            if shared.netpoll.poll_simulated(shared, REAL_IO_WAIT) {
                continue;
            }
            if stuck.is_some() {
                return stuck; // stopped, and still stuck: abandoned (D3)
            }
            stuck = Some(Stuck::Deadlock(super::report::deadlock(shared)));
            shared.request_stop_all(None);
            continue;
        }
        let steps = {
            let mut log = core.log.borrow_mut();
            log.steps += 1;
            log.steps
        };
        if stuck.is_none() && steps > settings.max_steps {
            stuck = Some(Stuck::Livelock {
                steps: settings.max_steps,
            });
            shared.request_stop_all(None);
        }
        if stuck.is_some() {
            if drain_left == 0 {
                return stuck;
            }
            drain_left -= 1;
        }
        if stuck.is_none() && settings.kill_one_in > 0 && !core.quiet() {
            kill_maybe(shared, settings, core);
        }
        let id = {
            let mut chooser = core.chooser.borrow_mut();
            let id = runnable[chooser.scheduler(runnable.len())];
            let jitter = chooser.step_time(settings.step_time_nanos);
            if jitter > 0 {
                super::advance(Duration::from_nanos(jitter));
            }
            id
        };
        core.log.borrow_mut().add(Decision::Resume {
            at: super::elapsed_nanos(),
            scheduler: id,
        });
        let l = &core.loops[id];
        // SAFETY: the loop is suspended (fresh, between actors or idle) on
        // its own stack, alive (D3); home saves itself in `core.home` (D1).
        unsafe { crate::context::switch(core.home.as_ptr(), l.sp.get()) };
    }
}

/// The fault plan's turn: once in `kill_one_in` turns, kill one of the
/// actors it may (faults (F1)), and log it (D2).
fn kill_maybe(shared: &Shared, settings: &Settings, core: &Core) {
    if !core.chooser.borrow_mut().kill(settings.kill_one_in) {
        return;
    }
    let candidates = super::faults::candidates(shared, settings.killable.as_ref());
    if candidates.is_empty() {
        return;
    }
    let victim = candidates[core.chooser.borrow_mut().victim(candidates.len())];
    super::faults::kill(shared, victim);
    let mut log = core.log.borrow_mut();
    log.killed.push(victim);
    log.add(Decision::Kill {
        at: super::elapsed_nanos(),
        pid: victim,
    });
}

/// A run's liveness phase, if it has one (faults (F3)): whether its
/// condition has held since the faults stopped.
struct LivenessWatch<'a> {
    phase: Option<&'a super::faults::Liveness>,
    met: bool,
}

impl<'a> LivenessWatch<'a> {
    fn new(settings: &'a Settings) -> LivenessWatch<'a> {
        LivenessWatch {
            phase: settings.liveness.as_ref(),
            met: false,
        }
    }

    /// Look at the condition (once the faults have stopped, or at the
    /// run's `end`): why the run fails, if its deadline has passed (or the
    /// run ended) without it holding.
    fn check(&mut self, end: bool) -> Option<Stuck> {
        let phase = self.phase?;
        let now = super::elapsed_nanos();
        if !self.met && (end || now >= phase.quiet_at) {
            self.met = (phase.holds)();
        }
        let late = end || now > phase.quiet_at.saturating_add(phase.within);
        (!self.met && late).then_some(Stuck::Liveness {
            name: phase.name,
            quiet_at: phase.quiet_at,
            within: phase.within,
            at_end: end,
        })
    }
}
