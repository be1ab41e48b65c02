//! Monitors: learn when another actor goes down, and why.
//!
//! ```
//! use smarm::{monitor, run, spawn, DownReason};
//!
//! run(|| {
//!     let worker = spawn(|| {
//!         // does some work, then returns
//!     });
//!     let pid = worker.pid();
//!
//!     let m = monitor(pid);
//!     let _ = worker.join();
//!
//!     let down = m.rx.recv().expect("monitor channel closed before Down");
//!     assert_eq!(down.pid, pid);
//!     assert_eq!(down.reason, DownReason::Exit);
//! });
//! ```

use super::record::DownSink;
use super::with_live_signals;
use crate::channel::{Receiver, channel};
use crate::scheduler;
use crate::scheduler::Shared;
use crate::slot::{DownReason, Pid};

/// The message a monitor delivers: `pid` went down for `reason`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Down {
    /// The monitored actor.
    pub pid: Pid,
    /// Why it went down.
    pub reason: DownReason,
}

/// Identifies one [`monitor`] registration (never reused in a runtime).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MonitorId(u64);

/// A monitor: exactly one [`Down`] arrives on `rx`, then it closes.
#[derive(Debug)]
pub struct Monitor {
    /// This registration's id.
    pub id: MonitorId,
    /// The watched actor.
    pub target: Pid,
    /// Where the `Down` arrives.
    pub rx: Receiver<Down>,
}

/// Watch `target`: one [`Down`] arrives on the returned monitor's `rx` when
/// it goes down, however it goes down. The target is unaffected and does
/// not know. A target that is already gone gives `DownReason::NoProc` at
/// once.
///
/// ```
/// use smarm::{monitor, run, spawn, DownReason};
///
/// run(|| {
///     let worker = spawn(|| panic!("boom"));
///     let m = monitor(worker.pid());
///     let down = m.rx.recv().unwrap();
///     assert_eq!(down.pid, worker.pid());
///     assert_eq!(down.reason, DownReason::Panic);
///     assert!(m.rx.recv().is_err(), "exactly one Down");
///     assert!(worker.join().is_err());
/// });
/// ```
///
/// # Panics
///
/// Outside an actor.
pub fn monitor<A>(target: Pid<A>) -> Monitor {
    let (tx, rx) = channel::<Down>();
    let MonitorRef { id, target } = register("monitor", target.erase(), move |down| {
        let _ = tx.send(down);
    });
    Monitor { id, target, rx }
}

/// A channel monitor for an actor about to be spawned (see
/// `Builder::spawn_monitor`): the entry its signal record starts with, and
/// the receiving end. The `Monitor` is completed once the pid is known.
pub(crate) fn prearranged(shared: &Shared) -> ((MonitorId, DownSink), Receiver<Down>) {
    let (tx, rx) = channel::<Down>();
    let id = MonitorId(shared.next_monitor_id());
    let sink: DownSink = Box::new(move |down| {
        let _ = tx.send(down);
    });
    ((id, sink), rx)
}

/// One monitor registration, however its `Down` is delivered: what
/// [`demonitor`] cancels. [`monitor_with`] returns one; a [`Monitor`]
/// converts into one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MonitorRef {
    /// This registration's id.
    pub id: MonitorId,
    /// The watched actor.
    pub target: Pid,
}

impl From<&Monitor> for MonitorRef {
    fn from(m: &Monitor) -> Self {
        MonitorRef {
            id: m.id,
            target: m.target,
        }
    }
}

/// [`monitor`], delivering the [`Down`] by calling `deliver` instead of
/// through a channel of its own: how a server has its monitors' `Down`s
/// arrive in its one mailbox, in order with its other messages.
///
/// `deliver` runs once, on a scheduler during the target's finalisation
/// (or at once in the caller, with `NoProc`, if the target is already
/// gone), outside every runtime lock: it must not block, and it may send.
/// A panic in it is reported by the panic hook and goes no further.
/// Cancelled by [`demonitor`], it is dropped uncalled.
///
/// ```
/// use smarm::{monitor_with, run, spawn, DownReason};
///
/// run(|| {
///     let (tx, rx) = smarm::channel();
///     let worker = spawn(|| panic!("boom"));
///     let m = monitor_with(worker.pid(), move |down| drop(tx.send(("worker", down))));
///     let (tag, down) = rx.recv().unwrap();
///     assert_eq!((tag, down.pid, down.reason), ("worker", m.target, DownReason::Panic));
///     assert!(worker.join().is_err());
/// });
/// ```
///
/// # Panics
///
/// Outside an actor.
pub fn monitor_with<A>(target: Pid<A>, deliver: impl FnOnce(Down) + Send + 'static) -> MonitorRef {
    register("monitor_with", target.erase(), deliver)
}

/// Register a monitor of `target` with `deliver` as its sink; deliver
/// `NoProc` at once if the target is gone (I1).
fn register(
    caller: &'static str,
    target: Pid,
    deliver: impl FnOnce(Down) + Send + 'static,
) -> MonitorRef {
    let mut sink: Option<DownSink> = Some(Box::new(deliver));
    let id = scheduler::with_current_actor(caller, |_, shared| {
        let id = MonitorId(shared.next_monitor_id());
        let _ = with_live_signals(shared, target, |sig, _| {
            if let Some(sink) = sink.take() {
                sig.monitors.push((id, sink));
            }
        });
        id
    });
    if let Some(deliver) = sink {
        // Not registered: the target is gone (outside the cold lock, I3).
        super::record::contain(|| {
            deliver(Down {
                pid: target,
                reason: DownReason::NoProc,
            })
        });
    }
    MonitorRef { id, target }
}

/// Cancel monitor `m` (a [`Monitor`] by reference, or a [`MonitorRef`]):
/// `Some(id)` if it was still registered (no `Down` will arrive; a channel
/// monitor's channel closes), `None` if the target had already gone down
/// (its `Down` is sent or queued). Drop a [`Monitor`] to discard a queued
/// `Down` as well.
///
/// ```
/// use std::time::Duration;
///
/// smarm::run(|| {
///     let sleeper = smarm::spawn(|| smarm::sleep(Duration::from_millis(10)));
///     let m = smarm::monitor(sleeper.pid());
///     assert_eq!(smarm::demonitor(&m), Some(m.id));
///     sleeper.join().unwrap();
///     assert!(m.rx.recv().is_err(), "no Down after demonitor");
/// });
/// ```
///
/// # Panics
///
/// Outside an actor.
pub fn demonitor(m: impl Into<MonitorRef>) -> Option<MonitorId> {
    let m = m.into();
    let removed = scheduler::with_current_actor("demonitor", |_, shared| {
        with_live_signals(shared, m.target, |sig, _| {
            let i = sig.monitors.iter().position(|(id, _)| *id == m.id)?;
            Some(sig.monitors.swap_remove(i))
        })
        .flatten()
    });
    removed.map(|(id, sink)| {
        drop(sink); // outside the cold lock (I3): closes a monitor's channel
        id
    })
}
