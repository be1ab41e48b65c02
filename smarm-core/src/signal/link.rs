//! Links: two actors that share a fate, and exit trapping.

use super::record::{ExitSink, Links};
use super::{DownReason, Signals, with_live_signals};
use crate::actor::{JoinHandle, SpawnError, SpawnOpts, spawn_in};
use crate::channel::{Receiver, channel};
use crate::scheduler;
use crate::scheduler::Shared;
use crate::slot::Pid;
use std::sync::Arc;
use thiserror::Error;

/// The message a trapping actor receives when a linked actor exits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exit {
    /// The linked actor that exited.
    pub from: Pid,
    /// Why.
    pub reason: DownReason,
}

/// The `JoinError` payload of an actor that neither returned nor panicked
/// nor was stopped: stopped by a linked actor's exit or an exit signal,
/// overflowed its stack, crossed its heap limit, or ended with a reason of
/// its own ([`exit_with`](crate::exit_with)).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("the actor {reason}")]
pub struct Ended {
    /// Why it ended ([`DownReason::Linked`], `NoProc` for a link to an
    /// actor that was already gone, `Killed`, `Shutdown`, `StackOverflow`,
    /// `HeapLimit`, or `Custom`).
    pub reason: DownReason,
}

/// Link the calling actor with `target`, Erlang style: when either exits
/// abnormally (a panic, a stop, a kill), the other is stopped too, unless
/// it traps exits (see [`trap_exit`]), in which case it receives an
/// [`Exit`] message. A normal exit reaches only a trapping actor. Linking
/// to an actor that is already gone delivers a `NoProc` exit at once: a
/// non-trapping caller unwinds from this call.
///
/// ```
/// smarm::run(|| {
///     let watcher = smarm::spawn(|| {
///         let exits = smarm::trap_exit(true).unwrap();
///         let partner = smarm::spawn(|| panic!("partner failed"));
///         smarm::link(partner.pid());
///         let exit = exits.recv().unwrap();
///         assert_eq!(exit.from, partner.pid());
///         assert_eq!(exit.reason, smarm::DownReason::Panic);
///     });
///     watcher.join().unwrap();
/// });
/// ```
///
/// # Panics
///
/// Outside an actor.
pub fn link<A>(target: Pid<A>) {
    let target = target.erase();
    let linked_or_gone = scheduler::with_current_actor("link", |me, shared| {
        if target == me {
            return None; // linking to yourself is a no-op, as in Erlang
        }
        let alive = with_live_signals(shared, target, |sig, _| sig.links.insert(me)).is_some();
        if alive {
            let _ = with_live_signals(shared, me, |sig, _| sig.links.insert(target));
            None
        } else {
            Some(me)
        }
    });
    if let Some(me) = linked_or_gone {
        scheduler::with_current_actor("link", |_, shared| {
            deliver_exit(shared, target, DownReason::NoProc, me)
        });
        scheduler::check_stop(); // "at once": a non-trapping caller unwinds here
    }
}

/// Remove the link between the calling actor and `target` (both sides).
/// Unlinking an actor you are not linked to does nothing.
///
/// # Panics
///
/// Outside an actor.
pub fn unlink<A>(target: Pid<A>) {
    let target = target.erase();
    scheduler::with_current_actor("unlink", |me, shared| {
        let _ = with_live_signals(shared, target, |sig, _| sig.links.remove(me));
        let _ = with_live_signals(shared, me, |sig, _| sig.links.remove(target));
    });
}

/// Spawn an actor already linked to the caller: there is no window in
/// which it could die unlinked.
///
/// ```
/// smarm::run(|| {
///     let parent = smarm::spawn(|| {
///         let _child = smarm::spawn_link(|| panic!("child failed"));
///         smarm::sleep(std::time::Duration::from_secs(60)); // stopped by the link
///     });
///     let err = parent.join().unwrap_err();
///     assert!(err.to_string().contains("stopped by the exit of linked actor"));
/// });
/// ```
///
/// # Panics
///
/// Outside an actor, or if the actor cannot be created (as
/// [`spawn`](crate::spawn)).
pub fn spawn_link<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> JoinHandle<T> {
    let spawned: Result<JoinHandle, SpawnError> =
        scheduler::with_current_actor("spawn_link", |me, shared| {
            let links = Signals {
                links: Links::one(me),
                ..Signals::default()
            };
            let opts = SpawnOpts {
                signals: Some(Box::new(links)),
                ..SpawnOpts::child_of(Some(me))
            };
            let handle = spawn_in(shared, crate::slot::table::entry(f), opts)?;
            let child = handle.pid();
            let _ = with_live_signals(shared, me, |sig, _| sig.links.insert(child));
            Ok(handle)
        });
    match spawned {
        Ok(h) => h.retype(),
        Err(e) => panic!("{e}"),
    }
}

/// Turn exit trapping on or off for the calling actor. While it is on,
/// exits of linked actors arrive as [`Exit`] messages instead of stopping
/// this actor. Turning it on returns the channel they arrive on (select
/// over it with your other channels); `None` if it was already on or is
/// being turned off.
///
/// ```
/// smarm::run(|| {
///     let exits = smarm::trap_exit(true).unwrap();
///     let child = smarm::spawn_link(|| {}); // exits normally
///     let exit = exits.recv().unwrap();
///     assert_eq!((exit.from, exit.reason), (child.pid(), smarm::DownReason::Exit));
///     smarm::trap_exit(false);
/// });
/// ```
///
/// # Panics
///
/// Outside an actor.
pub fn trap_exit(enabled: bool) -> Option<Receiver<Exit>> {
    if !enabled {
        set_trap("trap_exit", None);
        return None;
    }
    let (tx, rx) = channel::<Exit>();
    let sink: ExitSink = Arc::new(move |exit| {
        let _ = tx.send(exit);
    });
    set_trap("trap_exit", Some(sink)).then_some(rx)
}

/// Trap exits, delivering each [`Exit`] by calling `deliver` instead of
/// through a channel of its own: how a server has its trapped exits arrive
/// in its one mailbox, in order with its other messages. `false` (and
/// `deliver` is dropped) if the actor already traps exits. Turn trapping
/// off with `trap_exit(false)`.
///
/// `deliver` runs on a scheduler during the linked actor's finalisation
/// (or in the caller, for a link to an actor already gone), outside every
/// runtime lock: it must not block, and it may send. A panic in it is
/// reported by the panic hook and goes no further.
///
/// ```
/// smarm::run(|| {
///     let (tx, rx) = smarm::channel();
///     assert!(smarm::trap_exit_with(move |exit| drop(tx.send(exit))));
///     let child = smarm::spawn_link(|| panic!("child failed"));
///     let exit = rx.recv().unwrap();
///     assert_eq!((exit.from, exit.reason), (child.pid(), smarm::DownReason::Panic));
///     smarm::trap_exit(false);
/// });
/// ```
///
/// # Panics
///
/// Outside an actor.
pub fn trap_exit_with(deliver: impl Fn(Exit) + Send + Sync + 'static) -> bool {
    set_trap("trap_exit_with", Some(Arc::new(deliver)))
}

/// Install `sink` as the calling actor's exit sink (`None`: stop
/// trapping). Installing fails (`false`) if one is already installed.
fn set_trap(caller: &'static str, sink: Option<ExitSink>) -> bool {
    let (installed, dropped) = scheduler::with_current_actor(caller, |me, shared| {
        with_live_signals(shared, me, |sig, _| match sink {
            Some(sink) if sig.trap.is_none() => {
                sig.trap = Some(sink);
                (true, None)
            }
            Some(sink) => (false, Some(sink)),
            None => (false, sig.trap.take()),
        })
        .unwrap_or((false, None))
    });
    drop(dropped); // outside the cold lock (I3)
    installed
}

/// Deliver `from`'s exit with `reason` to the linked actor `to`: an
/// [`Exit`] message if it traps exits, else a stop if the exit was
/// abnormal. Removes the link on `to`'s side.
pub(crate) fn deliver_exit(shared: &Shared, from: Pid, reason: DownReason, to: Pid) {
    enum Action {
        Send(ExitSink),
        Stop,
        Nothing,
    }
    let action = with_live_signals(shared, to, |sig, _| {
        sig.links.remove(from);
        if let Some(sink) = &sig.trap {
            Action::Send(sink.clone())
        } else if reason.is_abnormal() {
            if sig.kill_reason.is_none() {
                sig.kill_reason = Some(if reason == DownReason::NoProc {
                    DownReason::NoProc
                } else {
                    DownReason::linked(from, reason.clone())
                });
            }
            Action::Stop
        } else {
            Action::Nothing
        }
    });
    match action {
        Some(Action::Send(deliver)) => super::record::contain(|| deliver(Exit { from, reason })),
        Some(Action::Stop) => shared.request_stop(to),
        Some(Action::Nothing) | None => {}
    }
}
