//! `Builder`: an actor configured before it starts (stack size, label,
//! link, monitor), as `std::thread::Builder` configures a thread.
//!
//! Everything the builder sets is in place before the actor can run: a
//! link or monitor made here cannot miss an early exit, as one made after
//! `spawn` returns could.

use super::spawn::{SpawnOpts, spawn_backpressure, spawn_in};
use super::{JoinHandle, Pid, SpawnError};
use crate::config::{MAX_STACK_SIZE, MIN_STACK_SIZE};
use crate::scheduler::with_current_actor;
use crate::signal::{Monitor, Signals, with_live_signals};

/// Options for one actor, then [`spawn`](Builder::spawn).
///
/// ```
/// smarm::run(|| {
///     let parser = smarm::Builder::new()
///         .name("parser")
///         .stack_size(8 << 20) // deep recursion on untrusted input
///         .spawn(|| {
///             let big = [1u8; 1 << 20]; // a 1 MiB local
///             assert_eq!(big.iter().map(|&b| b as usize).sum::<usize>(), 1 << 20);
///         })
///         .unwrap();
///     parser.join().unwrap();
/// });
/// ```
#[derive(Debug, Clone, Default)]
#[must_use = "a Builder does nothing until `spawn` is called"]
pub struct Builder {
    label: Option<String>,
    stack_size: Option<usize>,
    link: bool,
    parent: Option<Pid>,
    max_heap_size: u64,
}

impl Builder {
    /// An actor like [`spawn`](crate::spawn)'s: the runtime's stack size,
    /// no label, unlinked, the caller as parent.
    pub fn new() -> Self {
        Builder::default()
    }

    /// Label the actor, as `std::thread::Builder::name` names a thread:
    /// introspection ([`actor_info`](crate::actor_info), the process table)
    /// shows it. A label is not a registered name: two actors may share
    /// one, and nothing is sent by it (register with the registry for
    /// that).
    pub fn name(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Give this actor a stack of `bytes` usable bytes (rounded up to whole
    /// pages) instead of the runtime's
    /// [`Config::stack_size`](crate::runtime::Config::stack_size). Stacks
    /// are virtual reservations: a large one costs only the pages used.
    ///
    /// # Panics
    ///
    /// If `bytes` is below 16 KiB or above 1 GiB.
    pub fn stack_size(mut self, bytes: usize) -> Self {
        assert!(
            (MIN_STACK_SIZE..=MAX_STACK_SIZE).contains(&bytes),
            "smarm::Builder::stack_size: {bytes} bytes is outside the allowed \
             {MIN_STACK_SIZE}..={MAX_STACK_SIZE}; pick a size in that range"
        );
        self.stack_size = Some(bytes);
        self
    }

    /// Stop the actor if the heap it holds grows past `bytes` (Erlang's
    /// `max_heap_size`): it ends with
    /// [`DownReason::HeapLimit`](crate::DownReason::HeapLimit), a crash
    /// report says so, and its monitors, links and supervisor see that
    /// reason as any other failure. 0 means no limit.
    ///
    /// The heap an actor holds is what it allocated and has not been freed
    /// (by it or by anyone it handed the memory to), counted by
    /// [`PreemptingAlloc::with_heap_accounting`](crate::PreemptingAlloc::with_heap_accounting),
    /// which must be the global allocator. The limit is checked at each
    /// allocation; the allocation that crosses it succeeds (an allocator
    /// cannot fail softly), and the actor is stopped at its next safepoint
    /// (a blocking call, `check!()`), unwinding and freeing what it held.
    /// One that allocates on for a whole timeslice without reaching one is
    /// ended at an allocation instead, where it stands: its destructors do
    /// not run and what it held is leaked (as for a stack overflow; the
    /// guide's chapter on memory says what that leaves behind). One
    /// allocation larger than the limit is granted if the system allocator
    /// can, and the actor stops right after.
    ///
    /// ```no_run
    /// #[global_allocator]
    /// static ALLOC: smarm::PreemptingAlloc =
    ///     smarm::PreemptingAlloc::system().with_heap_accounting();
    ///
    /// fn main() {
    ///     smarm::run(|| {
    ///         let (_, down) = smarm::Builder::new()
    ///             .max_heap_size(1 << 20)
    ///             .spawn_monitor(|| {
    ///                 let mut hoard = Vec::new();
    ///                 loop {
    ///                     hoard.push(vec![0u8; 4096]);
    ///                     smarm::yield_now(); // a safepoint
    ///                 }
    ///             })
    ///             .unwrap();
    ///         assert_eq!(down.rx.recv().unwrap().reason, smarm::DownReason::HeapLimit);
    ///     });
    /// }
    /// ```
    ///
    /// # Panics
    ///
    /// If `bytes` is not 0 and the accounting allocator is not the global
    /// allocator: the limit could never be enforced.
    pub fn max_heap_size(mut self, bytes: usize) -> Self {
        assert!(
            bytes == 0 || crate::heap::installed(),
            "smarm::Builder::max_heap_size: heap limits need the accounting allocator; install \
             `#[global_allocator] static ALLOC: smarm::PreemptingAlloc = \
             smarm::PreemptingAlloc::system().with_heap_accounting();` in the binary"
        );
        self.max_heap_size = bytes as u64;
        self
    }

    /// Link the actor to the caller before it runs, as
    /// [`spawn_link`](crate::spawn_link) does.
    pub fn link(mut self) -> Self {
        self.link = true;
        self
    }

    /// Record `parent` as the actor's parent instead of the caller, as
    /// [`spawn_under`](crate::spawn_under) does (the link, if any, is still
    /// to the caller).
    pub fn parent<A>(mut self, parent: Pid<A>) -> Self {
        self.parent = Some(parent.erase());
        self
    }

    /// Start the actor running `f`.
    ///
    /// # Errors
    ///
    /// As [`try_spawn`](crate::try_spawn): a full actor table or exhausted
    /// stack memory.
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn spawn<T: Send + 'static>(
        self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<JoinHandle<T>, SpawnError> {
        self.start("Builder::spawn", false, crate::slot::table::entry(f))
            .map(|(handle, _)| handle.retype())
    }

    /// Start the actor running `f`, monitored by the caller from before it
    /// runs: exactly one [`Down`](crate::Down) arrives on the monitor, with
    /// the actor's real exit reason however soon it ends (Erlang's
    /// `spawn_monitor`).
    ///
    /// ```
    /// smarm::run(|| {
    ///     let (child, m) = smarm::Builder::new()
    ///         .spawn_monitor(|| panic!("at once"))
    ///         .unwrap();
    ///     assert_eq!(m.rx.recv().unwrap().reason, smarm::DownReason::Panic);
    ///     assert!(child.join().is_err());
    /// });
    /// ```
    ///
    /// # Errors
    ///
    /// As [`spawn`](Builder::spawn).
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn spawn_monitor<T: Send + 'static>(
        self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<(JoinHandle<T>, Monitor), SpawnError> {
        let (handle, monitor) =
            self.start("Builder::spawn_monitor", true, crate::slot::table::entry(f))?;
        match monitor {
            Some(monitor) => Ok((handle.retype(), monitor)),
            None => unreachable!("a monitored spawn always makes its monitor"),
        }
    }

    fn start(
        self,
        caller: &'static str,
        monitored: bool,
        f: crate::slot::table::Entry,
    ) -> Result<(JoinHandle, Option<Monitor>), SpawnError> {
        let Builder {
            label,
            stack_size,
            link,
            parent,
            max_heap_size,
        } = self;
        let started = with_current_actor(caller, |me, shared| {
            let mut signals = Signals::default();
            if link {
                signals.links.insert(me);
            }
            let rx = monitored.then(|| {
                let (entry, rx) = crate::signal::prearranged_monitor(shared);
                let id = entry.0;
                signals.monitors.push(entry);
                (id, rx)
            });
            let labelled = label.is_some();
            signals.label = label;
            let opts = SpawnOpts {
                parent: Some(parent.unwrap_or(me)),
                signals: (link || monitored || labelled).then(|| Box::new(signals)),
                stack_size,
                max_heap_size,
            };
            let handle = spawn_in(shared, f, opts)?;
            let child = handle.pid();
            if link {
                let _ = with_live_signals(shared, me, |sig, _| sig.links.insert(child));
            }
            let monitor = rx.map(|(id, rx)| Monitor {
                id,
                target: child,
                rx,
            });
            Ok((handle, monitor))
        });
        if started.is_ok() {
            spawn_backpressure();
        }
        started
    }
}
