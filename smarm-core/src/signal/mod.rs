//! Failure signals: monitors (one-way, one `Down` message) and links
//! (two-way: an abnormal exit stops the other side, or reaches it as an
//! [`Exit`] message when it traps exits), with Erlang's semantics.
//!
//! # Design
//!
//! Each slot's cold data holds, on first use, a `Signals` record: the
//! monitors watching the actor (each a one-shot `Sender<Down>`), its
//! links, its exit-trapping channel, and the reason a link gave for
//! stopping it. Registration takes the target's cold lock and checks the
//! target is still that incarnation and not finished; finalisation marks
//! the actor Done *before* taking the same lock to take the record. So a
//! registration either lands in the record finalisation takes, or sees Done
//! and delivers `NoProc` at once: no Down is lost or doubled.
//!
//! An exit is delivered to each linked actor: one that traps exits gets an
//! [`Exit`] message on its trapping channel; one that does not is stopped
//! (a cooperative unwind, like `request_stop`) if the exit was abnormal,
//! and its own exit then carries [`DownReason::Killed`]. A normal exit
//! reaches only trapping actors. Linking to a pid that is already gone
//! delivers a `NoProc` exit at once.
//!
//! # Invariants
//!
//! - (I1) Each `monitor` call yields exactly one `Down`, then its channel
//!   closes; `demonitor` before the exit yields none.
//! - (I2) Registrations and removals check the generation under the
//!   target's cold lock, so they never touch a later tenant of the slot.
//! - (I3) Messages are sent, and `Sender`s dropped, outside every cold lock.

mod link;
mod monitor;
mod on_exit;

pub use crate::slot::DownReason;
pub use link::{link, spawn_link, trap_exit, unlink, Exit, Killed};
pub use monitor::{demonitor, monitor, Down, Monitor, MonitorId};
pub use on_exit::on_exit;

pub(crate) use link::deliver_exit;

use crate::channel::Sender;
use crate::scheduler::Shared;
use crate::slot::word::State;
use crate::slot::Cold;
use crate::slot::Pid;

/// What a slot records about who watches and links to its actor.
#[derive(Default)]
pub(crate) struct Signals {
    pub(crate) monitors: Vec<(MonitorId, Sender<Down>)>,
    pub(crate) links: Vec<Pid>,
    pub(crate) trap: Option<Sender<Exit>>,
    /// Why a link stopped this actor (its exit reason then).
    pub(crate) kill_reason: Option<DownReason>,
    /// Callbacks registered through [`on_exit`].
    pub(crate) exit_hooks: Vec<ExitHook>,
}

/// A callback run on a scheduler when an actor exits (see [`on_exit`]).
pub(crate) type ExitHook = Box<dyn FnOnce(Pid, DownReason) + Send>;

/// Run `f` on `pid`'s cold data and signal record if `pid` is still that
/// incarnation and has not finished; `None` otherwise (I2).
pub(crate) fn with_live_signals<R>(
    shared: &Shared,
    pid: Pid,
    f: impl FnOnce(&mut Signals, &mut Cold) -> R,
) -> Option<R> {
    let slot = shared.slots.get(pid.index())?;
    let mut cold = slot.cold.lock();
    let s = slot.word.load();
    if s.generation() != pid.generation() || matches!(s.state(), State::Vacant | State::Done) {
        return None;
    }
    let mut signals = take_signals(&mut cold).unwrap_or_default();
    let r = f(&mut signals, &mut cold);
    cold.signals = Some(Box::new(signals));
    Some(r)
}

/// The slot's signal record, if it has one (the slot holds it
/// type-erased; it is always a `Signals`).
pub(crate) fn signals_of(cold: &Cold) -> Option<&Signals> {
    cold.signals.as_deref()?.downcast_ref()
}

/// Box a signal record the way the slot holds it.
pub(crate) fn erase_signals(signals: Box<Signals>) -> Box<Box<dyn std::any::Any + Send>> {
    Box::new(signals)
}

/// Take the slot's signal record (at finalisation, or to update it).
pub(crate) fn take_signals(cold: &mut Cold) -> Option<Box<Signals>> {
    (*cold.signals.take()?).downcast().ok()
}

/// Tell `pid`'s monitors and links that it exited with `reason` (called by
/// finalisation, outside the cold lock).
pub(crate) fn notify_exit(shared: &Shared, pid: Pid, reason: DownReason, signals: Signals) {
    for (_, tx) in signals.monitors {
        let _ = tx.send(Down { pid, reason });
    }
    for linked in signals.links {
        deliver_exit(shared, pid, reason, linked);
    }
    for hook in signals.exit_hooks {
        hook(pid, reason);
    }
}
