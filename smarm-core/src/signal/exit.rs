//! Exit signals: Erlang's `exit(Pid, Reason)`, sent to any actor, linked
//! or not.

use super::record::ExitSink;
use super::{DownReason, Exit, with_live_signals};
use crate::scheduler::{self, Shared};
use crate::slot::{ExitReason, Pid};

/// An exit signal ([`exit`]): what the target is told, and how it ends if
/// it does not trap exits. Erlang's rules:
///
/// | signal | target traps exits | target does not |
/// |---|---|---|
/// | `Normal` | gets [`Exit`] with [`DownReason::Exit`] | ignores it (unless it sent it to itself: then it ends normally) |
/// | `Shutdown` | gets [`Exit`] with [`DownReason::Shutdown`] | ends with [`DownReason::Shutdown`] |
/// | `Reason(r)` | gets [`Exit`] with [`DownReason::Custom`]`(r)` | ends with [`DownReason::Custom`]`(r)` |
/// | `Kill` | ends with [`DownReason::Killed`] | ends with [`DownReason::Killed`] |
///
/// An actor that ends by a signal ends as a stop does: it unwinds from its
/// next blocking call or safepoint, running its destructors (and a
/// behaviour's `terminate`), and its monitors and links see the reason.
/// `Kill` is the one signal a trapping actor cannot turn into a message;
/// its monitors and links see `Killed`, not `Kill`, so a linked actor is
/// stopped by it (or told of it) like by any other abnormal exit, never
/// killed untrappably in turn, as in Erlang.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ExitSignal {
    /// Erlang's `normal`: only a trapping actor hears of it.
    Normal,
    /// Erlang's `shutdown`: how a supervisor asks a child to stop.
    Shutdown,
    /// Erlang's `kill`: ends the target even if it traps exits.
    Kill,
    /// Any other reason, as a [`DownReason::Custom`].
    Reason(ExitReason),
}

impl ExitSignal {
    /// The reason a trapping target's [`Exit`] carries, and a
    /// non-trapping target ends with.
    fn reason(&self) -> DownReason {
        match self {
            ExitSignal::Normal => DownReason::Exit,
            ExitSignal::Shutdown => DownReason::Shutdown,
            ExitSignal::Kill => DownReason::Killed,
            ExitSignal::Reason(reason) => DownReason::Custom(reason.clone()),
        }
    }
}

impl From<&str> for ExitSignal {
    /// A reason of the program's own: [`ExitSignal::Reason`].
    fn from(text: &str) -> Self {
        ExitSignal::Reason(ExitReason::new(text))
    }
}

impl From<String> for ExitSignal {
    /// A reason of the program's own: [`ExitSignal::Reason`].
    fn from(text: String) -> Self {
        ExitSignal::Reason(ExitReason::new(text))
    }
}

impl From<ExitReason> for ExitSignal {
    /// A reason of the program's own: [`ExitSignal::Reason`].
    fn from(reason: ExitReason) -> Self {
        ExitSignal::Reason(reason)
    }
}

/// Send the exit signal `signal` to `pid` from the calling actor, as
/// Erlang's `exit(Pid, Reason)`: by [`ExitSignal`]'s rules, a trapping
/// target gets an [`Exit`] message (from the caller) and a non-trapping
/// one ends with the signal's reason, `normal` is ignored by a
/// non-trapping target, and `kill` ends the target in any case. The
/// signal needs no link. Sending to an actor that has ended does nothing.
///
/// ```
/// use smarm::{DownReason, ExitSignal};
///
/// smarm::run(|| {
///     // A non-trapping actor ends with the signal's reason.
///     let (worker, m) = smarm::Builder::new()
///         .spawn_monitor(|| smarm::sleep(std::time::Duration::from_secs(60)))
///         .unwrap();
///     smarm::exit(worker.pid(), ExitSignal::from("lease lost"));
///     assert_eq!(m.rx.recv().unwrap().reason, DownReason::Custom("lease lost".into()));
///
///     // A trapping one is told, and goes on.
///     let (told_tx, told) = smarm::channel();
///     let trapper = smarm::spawn(move || {
///         let exits = smarm::trap_exit(true).unwrap();
///         told_tx.send(exits.recv().unwrap().reason).unwrap();
///     });
///     smarm::sleep(std::time::Duration::from_millis(10)); // let it trap
///     smarm::exit(trapper.pid(), ExitSignal::Shutdown);
///     assert_eq!(told.recv().unwrap(), DownReason::Shutdown);
///     trapper.join().unwrap();
/// });
/// ```
///
/// # Panics
///
/// Outside an actor: use [`RuntimeHandle::exit`](crate::runtime::RuntimeHandle::exit)
/// from a plain thread.
pub fn exit<A>(pid: Pid<A>, signal: ExitSignal) {
    let to = pid.erase();
    scheduler::with_current_actor("smarm::exit", |me, shared| {
        send_exit_signal(shared, Some(me), to, signal)
    });
    // "At once" for a signal to oneself: a non-trapping caller unwinds here.
    if to == crate::self_pid() {
        scheduler::check_stop();
    }
}

/// Deliver the exit signal `signal` to `to` from a process of another node,
/// for its distribution (Erlang's EXIT2): as [`exit`] from no actor of this
/// runtime, except that a trapping target is not told through its own
/// sink. `true`: the target traps exits, and the caller delivers the
/// `{'EXIT', From, Reason}` message its own way.
///
/// # Panics
///
/// Outside an actor.
#[doc(hidden)]
pub fn exit_from_node<A>(pid: Pid<A>, signal: ExitSignal) -> bool {
    let to = pid.erase();
    scheduler::with_current_actor("smarm::signal::exit_from_node", |_, shared| {
        apply_exit_signal(shared, None, to, &signal).is_some()
    })
}

/// Deliver the exit signal `signal` from `from` (`None`: from no actor) to
/// `to` by [`ExitSignal`]'s rules. Unlike a link's exit, it leaves links as
/// they are. A trapping target's [`Exit`] names `from`, or the target
/// itself when the signal comes from no actor.
pub(crate) fn send_exit_signal(shared: &Shared, from: Option<Pid>, to: Pid, signal: ExitSignal) {
    if let Some(deliver) = apply_exit_signal(shared, from, to, &signal) {
        let exit = Exit {
            from: from.unwrap_or(to),
            reason: signal.reason(),
        };
        super::record::contain(|| deliver(exit));
    }
}

/// Act on `signal` for `to`: stop it, or (`Some`) hand back the sink of a
/// trapping target to tell, outside the cold lock (I3).
fn apply_exit_signal(
    shared: &Shared,
    from: Option<Pid>,
    to: Pid,
    signal: &ExitSignal,
) -> Option<ExitSink> {
    enum Action {
        Tell(ExitSink),
        Stop,
        Nothing,
    }
    let reason = signal.reason();
    let action = with_live_signals(shared, to, |sig, _| match (signal, &sig.trap) {
        (ExitSignal::Kill, _) => {
            // Untrappable, and it overrides a reason set by an earlier
            // signal still being acted on (a shutdown the target ignores).
            sig.kill_reason = Some(DownReason::Killed);
            Action::Stop
        }
        (_, Some(sink)) => Action::Tell(sink.clone()),
        (ExitSignal::Normal, None) if from != Some(to) => Action::Nothing,
        (_, None) => {
            if sig.kill_reason.is_none() {
                sig.kill_reason = Some(reason.clone());
            }
            Action::Stop
        }
    });
    match action {
        Some(Action::Tell(deliver)) => Some(deliver),
        Some(Action::Stop) => {
            shared.request_stop(to);
            None
        }
        Some(Action::Nothing) | None => None,
    }
}
