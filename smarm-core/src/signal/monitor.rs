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

use super::with_live_signals;
use crate::channel::{channel, Receiver};
use crate::scheduler;
use crate::slot::{DownReason, Pid};

/// The message a monitor delivers: `pid` went down for `reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    let target = target.erase();
    let (tx, rx) = channel::<Down>();
    let id = scheduler::with_current_actor("monitor", |_, shared| {
        let id = MonitorId(shared.next_monitor_id());
        // Cloning a Sender takes its channel lock: Leaf → Channel is allowed.
        let registered =
            with_live_signals(shared, target, |sig, _| sig.monitors.push((id, tx.clone())));
        (id, registered.is_some())
    });
    let (id, registered) = id;
    if !registered {
        let _ = tx.send(Down {
            pid: target,
            reason: DownReason::NoProc,
        });
    }
    drop(tx); // the registration now holds the only sender (I1)
    Monitor { id, target, rx }
}

/// Cancel monitor `m`: `Some(id)` if it was still registered (no `Down`
/// will arrive and its channel closes), `None` if the target had already
/// gone down (its `Down` is sent or queued). Drop the monitor to discard a
/// queued `Down` as well.
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
pub fn demonitor(m: &Monitor) -> Option<MonitorId> {
    let removed = scheduler::with_current_actor("demonitor", |_, shared| {
        with_live_signals(shared, m.target, |sig, _| {
            let i = sig.monitors.iter().position(|(id, _)| *id == m.id)?;
            Some(sig.monitors.swap_remove(i))
        })
        .flatten()
    });
    removed.map(|(id, tx)| {
        drop(tx); // outside the cold lock (I3): closes the monitor's channel
        id
    })
}
