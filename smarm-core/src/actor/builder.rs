//! `Builder`: an actor configured before it starts (stack size, label,
//! link, monitor), as `std::thread::Builder` configures a thread.
//!
//! Everything the builder sets is in place before the actor can run: a
//! link or monitor made here cannot miss an early exit, as one made after
//! `spawn` returns could.

use super::spawn::{spawn_backpressure, spawn_in, SpawnOpts};
use super::{JoinHandle, Pid, SpawnError};
use crate::config::{MAX_STACK_SIZE, MIN_STACK_SIZE};
use crate::scheduler::with_current_actor;
use crate::signal::{with_live_signals, Monitor, Signals};

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
