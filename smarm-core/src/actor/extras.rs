//! What the layers above the runtime know about an actor (its registered
//! names, its mailbox): a per-runtime hook they install, read by
//! introspection and by the crash report of an actor's finalisation.
//!
//! # Invariants
//!
//! - The first hook installed in a runtime stays (a `OnceLock`), so a
//!   reader never sees it change under it; it runs with no runtime lock
//!   held.

use crate::scheduler;
use crate::slot::Pid;

/// What an upper layer knows about an actor, for introspection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ActorExtras {
    /// Names the actor is registered under.
    pub names: Vec<&'static str>,
    /// Messages queued on the channels it published.
    pub mailbox_depth: u32,
    /// Messages taken from the channels it published.
    pub messages_received: u64,
    /// For a supervisor: how many times it has restarted a child.
    pub restarts: u64,
    /// For a supervisor waiting to restart a child (a restart backoff):
    /// how long until the first such restart is due.
    pub next_restart: Option<std::time::Duration>,
}

/// The runtime's extras hook, if a layer above installed one.
#[derive(Default)]
struct ExtrasHook(std::sync::OnceLock<fn(Pid) -> ActorExtras>);

/// Install, for the current runtime, the function introspection calls for
/// each actor's [`ActorExtras`] (what a layer above knows about it: the
/// registry installs one on its first use in a runtime). The first hook
/// installed in a runtime stays; later calls are ignored. The hook runs in
/// the actor that asked for the snapshot, with no runtime lock held.
///
/// # Panics
///
/// Outside a runtime (an actor, or a callback on a scheduler).
pub fn set_extras_hook(hook: fn(Pid) -> ActorExtras) {
    let installed = scheduler::with_worker(|_, shared| {
        let _ = shared.locals().get_or_default::<ExtrasHook>().0.set(hook);
    });
    if installed.is_none() {
        scheduler::outside_actor("set_extras_hook");
    }
}

/// The names `pid` is registered under, from the runtime's extras hook
/// (none without one), for a crash report at the actor's finalisation.
pub(crate) fn names_of(pid: Pid) -> Vec<&'static str> {
    match extras_hook() {
        Some(hook) => hook(pid).names,
        None => Vec::new(),
    }
}

/// This runtime's extras hook, if a layer above installed one.
pub(crate) fn extras_hook() -> Option<fn(Pid) -> ActorExtras> {
    scheduler::with_worker(|_, shared| {
        shared
            .locals()
            .get_or_default::<ExtrasHook>()
            .0
            .get()
            .copied()
    })
    .flatten()
}
