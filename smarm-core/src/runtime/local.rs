//! Per-runtime state and deferred drops, for libraries that build on
//! smarm (the OTP layer's registry and process groups are built this way).

use crate::scheduler;
use crate::slot::Pid;
use std::any::Any;

/// Run `f` on the current runtime's instance of `T`, created with
/// `T::default()` on first use. The lookup is lock-free after that (a few
/// atomic loads), whatever the number of types. `f` also gets
/// the runtime itself ([`RuntimeRef`]), to ask it things without another
/// lookup. `f` must not block (keep it to table updates and sends): it
/// cannot be switched out, which is also what makes a value it reads from
/// an atomic pointer safe until it returns (see [`defer_drop`]).
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// #[derive(Default)]
/// struct Requests(AtomicU64); // one per runtime
///
/// smarm::run(|| {
///     let count = || smarm_core::runtime::with_runtime_local::<Requests, _>(|r, _| {
///         r.0.fetch_add(1, Ordering::Relaxed) + 1
///     });
///     assert_eq!(count(), 1);
///     assert_eq!(count(), 2);
/// });
/// smarm::run(|| {
///     // Another run of another runtime: a fresh value.
///     let n = smarm_core::runtime::with_runtime_local::<Requests, _>(|r, _| r.0.load(Ordering::Relaxed));
///     assert_eq!(n, 0);
/// });
/// ```
///
/// # Panics
///
/// Outside a runtime (an actor, or a timer callback on a scheduler).
pub fn with_runtime_local<T: Any + Send + Sync + Default, R>(
    f: impl FnOnce(&T, RuntimeRef<'_>) -> R,
) -> R {
    let found = scheduler::with_worker(|_, shared| {
        // The reference lives as long as `shared`, which outlives `f`.
        f(shared.locals().get_or_default::<T>(), RuntimeRef(shared))
    });
    match found {
        Some(r) => r,
        None => scheduler::outside_actor("with_runtime_local"),
    }
}

/// The runtime a [`with_runtime_local`] closure runs on: what it can ask
/// without looking the runtime up again.
#[derive(Clone, Copy)]
pub struct RuntimeRef<'a>(&'a scheduler::Shared);

impl<'a> RuntimeRef<'a> {
    pub(super) fn new(shared: &'a scheduler::Shared) -> Self {
        RuntimeRef(shared)
    }
}

impl RuntimeRef<'_> {
    /// [`is_alive`](crate::is_alive), on this runtime.
    #[inline]
    pub fn is_alive<A>(self, pid: Pid<A>) -> bool {
        crate::actor::alive_in(self.0, pid.erase())
    }
}

impl std::fmt::Debug for RuntimeRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RuntimeRef")
    }
}

/// Drop `value` once no actor or callback of the current runtime that
/// could have read it is still running: every scheduler has since gone
/// back to its loop between two actors, or parked.
///
/// This is what makes lock-free reads safe for a layer above: publish a
/// value through an atomic pointer, read it inside a
/// [`with_runtime_local`] closure (which cannot switch the actor out), and
/// after swapping in a replacement hand the old one to `defer_drop` instead
/// of dropping it. The drop runs on a scheduler thread, outside every
/// runtime lock; it must not block.
///
/// # Panics
///
/// Outside a runtime (an actor, or a timer callback on a scheduler).
pub fn defer_drop<T: Send + 'static>(value: T) {
    let value: Box<dyn Any + Send> = Box::new(value);
    match scheduler::with_worker(|_, shared| shared.defer_drop(value)) {
        Some(()) => {}
        None => scheduler::outside_actor("defer_drop"),
    }
}
