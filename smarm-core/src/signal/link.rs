//! Links: two actors that share a fate, and exit trapping.

use super::{with_live_signals, DownReason, Signals};
use crate::actor::{spawn_in, JoinHandle, SpawnError};
use crate::channel::{channel, Receiver, Sender};
use crate::scheduler;
use crate::scheduler::Shared;
use crate::slot::Pid;
use thiserror::Error;

/// The message a trapping actor receives when a linked actor exits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit {
    /// The linked actor that exited.
    pub from: Pid,
    /// Why.
    pub reason: DownReason,
}

/// The `JoinError` payload of an actor stopped by a linked actor's exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("the actor {reason}")]
pub struct Killed {
    /// Why it was stopped ([`DownReason::Killed`], or `NoProc` for a link
    /// to an actor that was already gone).
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
        let alive = with_live_signals(shared, target, |sig, _| {
            if !sig.links.contains(&me) {
                sig.links.push(me);
            }
        })
        .is_some();
        if alive {
            let _ = with_live_signals(shared, me, |sig, _| {
                if !sig.links.contains(&target) {
                    sig.links.push(target);
                }
            });
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
        let _ = with_live_signals(shared, target, |sig, _| sig.links.retain(|p| *p != me));
        let _ = with_live_signals(shared, me, |sig, _| sig.links.retain(|p| *p != target));
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
///     assert!(err.to_string().contains("killed by the exit of linked actor"));
/// });
/// ```
///
/// # Panics
///
/// Outside an actor, or if the actor cannot be created (as
/// [`spawn`](crate::spawn)).
pub fn spawn_link(f: impl FnOnce() + Send + 'static) -> JoinHandle {
    let spawned: Result<JoinHandle, SpawnError> =
        scheduler::with_current_actor("spawn_link", |me, shared| {
            let links = Signals {
                links: vec![me],
                ..Signals::default()
            };
            let handle = spawn_in(shared, Some(me), Box::new(f), Some(Box::new(links)))?;
            let child = handle.pid();
            let _ = with_live_signals(shared, me, |sig, _| sig.links.push(child));
            Ok(handle)
        });
    match spawned {
        Ok(h) => h,
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
    let (rx, dropped) = scheduler::with_current_actor("trap_exit", |me, shared| {
        with_live_signals(shared, me, |sig, _| {
            if enabled {
                if sig.trap.is_some() {
                    return (None, None);
                }
                let (tx, rx) = channel::<Exit>();
                sig.trap = Some(tx);
                (Some(rx), None)
            } else {
                (None, sig.trap.take())
            }
        })
        .unwrap_or((None, None))
    });
    drop(dropped); // outside the cold lock (I3)
    rx
}

/// Deliver `from`'s exit with `reason` to the linked actor `to`: an
/// [`Exit`] message if it traps exits, else a stop if the exit was
/// abnormal. Removes the link on `to`'s side.
pub(crate) fn deliver_exit(shared: &Shared, from: Pid, reason: DownReason, to: Pid) {
    enum Action {
        Send(Sender<Exit>),
        Stop,
        Nothing,
    }
    let action = with_live_signals(shared, to, |sig, _| {
        sig.links.retain(|p| *p != from);
        if let Some(tx) = &sig.trap {
            Action::Send(tx.clone())
        } else if reason.is_abnormal() {
            if sig.kill_reason.is_none() {
                sig.kill_reason = Some(if reason == DownReason::NoProc {
                    reason
                } else {
                    DownReason::Killed { by: from }
                });
            }
            Action::Stop
        } else {
            Action::Nothing
        }
    });
    match action {
        Some(Action::Send(tx)) => {
            let _ = tx.send(Exit { from, reason });
        }
        Some(Action::Stop) => shared.request_stop(to),
        Some(Action::Nothing) | None => {}
    }
}
