//! How a supervisor stops its children, as OTP's `shutdown/2` does: a
//! `shutdown` exit signal, then, past the child's [`Shutdown::Timeout`], a
//! `kill`.
//!
//! Each child is unlinked and monitored first, so its end arrives as a
//! `Down`, never as a trapped `Exit` mistaken for a crash (S1). A child
//! that does not trap exits ends at its next blocking call or safepoint
//! with [`DownReason::Shutdown`](smarm_core::DownReason::Shutdown), running
//! its destructors and a behaviour's `terminate`; one that traps them is
//! told, and a behaviour whose parent the supervisor is stops then. `kill`
//! is untrappable but, like every stop in smarm, cooperative: a child that
//! never reaches a safepoint after it (a loop of pure computation without
//! `check!()`) is left with the kill pending once a second timeout has
//! passed, and the supervisor moves on (S2).

use super::Shutdown;
use smarm_core::{ExitSignal, Pid};
use std::collections::HashSet;
use std::time::Duration;

/// Stop `pids` by `shutdown`, asking each with `ask` (a `shutdown` exit
/// signal, or a behaviour's drain) and waiting for all of them together.
pub(super) fn stop_children(pids: &[Pid], shutdown: Shutdown, mut ask: impl FnMut(Pid)) {
    let (down_tx, downs) = smarm_core::channel::<Pid>();
    for &pid in pids {
        let down_tx = down_tx.clone();
        smarm_core::monitor_with(pid, move |down| {
            let _ = down_tx.send(down.pid);
        }); // (S1)
        smarm_core::unlink(pid);
    }
    drop(down_tx);
    let timeout = match shutdown {
        Shutdown::BrutalKill => {
            for &pid in pids {
                smarm_core::exit(pid, ExitSignal::Kill);
            }
            return;
        }
        Shutdown::Timeout(d) => Some(d),
        Shutdown::Infinity => None,
    };
    for &pid in pids {
        ask(pid);
    }
    let mut running: HashSet<Pid> = pids.iter().copied().collect();
    wait_for(&downs, &mut running, timeout);
    let Some(timeout) = timeout else { return };
    if running.is_empty() {
        return;
    }
    for &pid in &running {
        smarm_core::exit(pid, ExitSignal::Kill);
    }
    wait_for(&downs, &mut running, Some(timeout)); // (S2)
}

/// Wait up to `timeout` (`None`: for ever) for the `Down`s of `running`,
/// removing each.
fn wait_for(
    downs: &smarm_core::Receiver<Pid>,
    running: &mut HashSet<Pid>,
    timeout: Option<Duration>,
) {
    let deadline = timeout.and_then(|d| smarm_core::time::now().checked_add(d));
    while !running.is_empty() {
        let down = match deadline {
            Some(at) => downs
                .recv_timeout(at.saturating_duration_since(smarm_core::time::now()))
                .ok(),
            None => downs.recv().ok(),
        };
        match down {
            Some(pid) => running.remove(&pid),
            None => return,
        };
    }
}

/// Ask `pid` to stop as OTP's supervisor does: a `shutdown` exit signal.
pub(super) fn ask_to_shut_down(pid: Pid) {
    smarm_core::exit(pid, ExitSignal::Shutdown);
}
