//! The faults a simulation injects into the runtime itself, beside the
//! program's own (`buggify!`, `sim::random`): actors killed between turns
//! as by `exit(pid, kill)`, and smarm's own fault sites (BUGGIFY inside
//! the runtime and the behaviours: a bounded mailbox that reports full, a
//! socket write that moves fewer bytes, a call that times out at once, a
//! behaviour switched out before its cleanup).
//! Off unless asked for; drawn from streams of their own (chooser (C2)),
//! so turning them on leaves every other choice of a seed where it was.
//! A liveness phase ends them: from a set simulated time on, no fault
//! fires, and a stated condition must come to hold within a deadline (as
//! TigerBeetle's VOPR ends its runs).
//!
//! # Invariants
//!
//! - (F1) A kill is an exit signal `kill` from no actor, sent between two
//!   turns: the victim ends at its next safepoint (a parked one at once),
//!   its links and monitors told `killed`, as Erlang's `exit(Pid, kill)`.
//!   The root is never a victim: its end is the run's.
//! - (F2) A fault site only makes an operation fail or fall short in a way
//!   its contract already allows (a `try_send` may find a bounded channel
//!   full; a `write` may write fewer bytes; a call may time out; any actor
//!   may be switched out between two steps), so code correct against the
//!   contract stays correct under it.
//! - (F3) From a liveness phase's start no fault of any kind fires: no
//!   kill, no site of smarm's, no `buggify!()` site of the program's.

use super::Sim;
use crate::introspect::ActorInfo;
use crate::scheduler::Shared;
use crate::slot::Pid;
use std::sync::Arc;

/// Which actors a simulation's kills may choose from.
#[derive(Clone)]
pub(super) struct Killable(Arc<dyn Fn(&ActorInfo) -> bool + Send + Sync>);

impl std::fmt::Debug for Killable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Killable(..)")
    }
}

/// A liveness phase: quiet from `quiet_at` (simulated nanoseconds), and
/// `holds` true within `within` after it.
#[derive(Clone)]
pub(super) struct Liveness {
    pub(super) name: &'static str,
    pub(super) quiet_at: u64,
    pub(super) within: u64,
    pub(super) holds: Arc<dyn Fn() -> bool + Send + Sync>,
}

impl std::fmt::Debug for Liveness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Liveness")
            .field("name", &self.name)
            .field("quiet_at", &self.quiet_at)
            .field("within", &self.within)
            .finish_non_exhaustive()
    }
}

impl Sim {
    /// A liveness phase: from `quiet_at` of simulated time on, no fault
    /// fires (F3): no kill, none of smarm's fault sites, none of the
    /// program's `buggify!()` sites. `holds` must then come true within
    /// `within`, checked after every scheduler turn and at the end of the
    /// run (between actors, as an [`invariant`](Sim::invariant)), or the
    /// run fails with [`SimError::Liveness`](super::SimError::Liveness):
    /// the system recovers once the faults stop.
    ///
    /// ```
    /// use smarm::sim::{Sim, SimError};
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::time::Duration;
    ///
    /// // A flag that a buggified actor may set only after the quiet phase starts.
    /// let recovered = |deadline| {
    ///     let up = Arc::new(AtomicBool::new(false));
    ///     let seen = up.clone();
    ///     Sim::new(0)
    ///         .liveness("back up", Duration::from_secs(1), deadline, move || seen.load(Ordering::Relaxed))
    ///         .run(move || {
    ///             smarm::sleep(Duration::from_secs(3)); // recovery takes 2 s past the quiet point
    ///             up.store(true, Ordering::Relaxed);
    ///         })
    /// };
    /// assert!(recovered(Duration::from_secs(5)).is_ok());
    /// assert!(matches!(recovered(Duration::from_secs(1)), Err(SimError::Liveness { .. })));
    /// ```
    pub fn liveness(
        mut self,
        name: &'static str,
        quiet_at: std::time::Duration,
        within: std::time::Duration,
        holds: impl Fn() -> bool + Send + Sync + 'static,
    ) -> Sim {
        let nanos = |d: std::time::Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.settings.liveness = Some(Liveness {
            name,
            quiet_at: nanos(quiet_at),
            within: nanos(within),
            holds: Arc::new(holds),
        });
        self
    }

    /// Turn smarm's own fault sites on (off by default): each run turns
    /// each site on with probability 1/4 when first reached, and an
    /// enabled site fires once in 20 times (FoundationDB's BUGGIFY). The
    /// sites: a [`try_send`](crate::channel::Sender::try_send) to a
    /// bounded channel (a bounded mailbox) reports it full; a write to a
    /// `smarm::net` stream writes half its buffer; a call (a gen_server's,
    /// a gen_statem's, any wait for a reply) times out where it would wait
    /// for its answer (its request delivered, the reply discarded); a
    /// behaviour is switched out between its loop's end and
    /// its `terminate`, as a preempted thread would be. Each is a failure
    /// (or a delay) the operation's contract allows, so
    /// code that handles its errors as documented stays correct; code that
    /// does not is found.
    ///
    /// ```
    /// use smarm::channel::{bounded, TrySendError};
    /// use smarm::sim::Sim;
    ///
    /// // Room for every message, yet some seeds see the mailbox full.
    /// let full = |seed| {
    ///     Sim::new(seed)
    ///         .runtime_faults(true)
    ///         .run(|| {
    ///             let (tx, _rx) = bounded::<u32>(1_000);
    ///             (0..100).filter(|&n| matches!(tx.try_send(n), Err(TrySendError::Full(_)))).count()
    ///         })
    ///         .unwrap()
    ///         .value
    /// };
    /// assert!((0..40).any(|seed| full(seed) > 0));
    /// assert_eq!(Sim::new(0).run(|| smarm::channel::bounded::<u32>(1).0.try_send(1).is_ok()).unwrap().value, true);
    /// ```
    pub fn runtime_faults(mut self, on: bool) -> Sim {
        self.settings.runtime_faults = on;
        self
    }

    /// Kill an actor once in `n` scheduler turns on average (0: never, the
    /// default), as `exit(pid, kill)` from no actor (F1): one of the live
    /// actors other than the root (and only those [`killable`](Sim::killable)
    /// accepts), chosen by the seed. What a supervision tree is for; the
    /// run's [`killed`](super::SimRun::killed) lists the victims.
    ///
    /// ```
    /// use smarm::sim::Sim;
    /// use std::time::Duration;
    ///
    /// let run = Sim::new(1)
    ///     .kill_one_in(5)
    ///     .run(|| {
    ///         let sleepers: Vec<_> = (0..4)
    ///             .map(|_| smarm::spawn(|| smarm::sleep(Duration::from_secs(1))))
    ///             .collect();
    ///         sleepers.into_iter().map(|s| s.join()).filter(Result::is_err).count()
    ///     })
    ///     .unwrap();
    /// assert!(!run.killed.is_empty());
    /// assert_eq!(run.value, run.killed.len()); // each victim ended `killed`
    /// ```
    pub fn kill_one_in(mut self, n: u32) -> Sim {
        self.settings.kill_one_in = n;
        self
    }

    /// Let [`kill_one_in`](Sim::kill_one_in) choose only the actors for
    /// which `accept` is true (by label or registered name, say; it runs
    /// between turns, outside any actor).
    pub fn killable(mut self, accept: impl Fn(&ActorInfo) -> bool + Send + Sync + 'static) -> Sim {
        self.settings.killable = Some(Killable(Arc::new(accept)));
        self
    }
}

/// The live actors a kill may choose from, in slot order: every one but
/// the root (whose supervisor is itself) that `killable` accepts (F1).
pub(super) fn candidates(shared: &Shared, killable: Option<&Killable>) -> Vec<Pid> {
    crate::introspect::live_actors(shared)
        .into_iter()
        .filter(|info| info.supervisor != info.pid)
        .filter(|info| killable.is_none_or(|k| (k.0)(info)))
        .map(|info| info.pid)
        .collect()
}

/// Kill `victim` (F1).
pub(super) fn kill(shared: &Shared, victim: Pid) {
    crate::signal::send_exit_signal(shared, None, victim, crate::signal::ExitSignal::Kill);
}
