//! `on_exit`: a callback run when an actor exits, for layers that keep
//! per-actor state (the registry forgets names, a process group drops a
//! member).

use super::DownReason;
use crate::scheduler;
use crate::slot::Pid;

/// Run `f(pid, reason)` on a scheduler when `pid` exits, however it exits.
/// `false` (and `f` is dropped) if `pid` is not a live actor of the current
/// runtime. `f` runs during the actor's finalisation, outside every runtime
/// lock and not in an actor: it must not block, and it may send (how a
/// process group drops a dead member at once and tells its watchers). A
/// panic in `f` is reported by the panic hook and goes no further.
///
/// ```
/// smarm::run(|| {
///     let (tx, rx) = smarm::channel();
///     let child = smarm::spawn(|| {});
///     let pid = child.pid();
///     smarm_core::signal::on_exit(pid, move |p, reason| drop(tx.send((p, reason))));
///     child.join().unwrap();
///     assert_eq!(rx.recv().unwrap(), (pid, smarm::DownReason::Exit));
/// });
/// ```
pub fn on_exit<A>(pid: Pid<A>, f: impl FnOnce(Pid, DownReason) + Send + 'static) -> bool {
    let pid = pid.erase();
    scheduler::with_worker(|_, shared| {
        super::with_live_signals(shared, pid, |sig, _| sig.exit_hooks.push(Box::new(f))).is_some()
    })
    .unwrap_or(false)
}
