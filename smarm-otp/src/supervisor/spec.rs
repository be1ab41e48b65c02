//! What a supervisor is told: child specs, restart types, shutdown
//! policies, strategies and restart intensity.

use super::SupervisorRef;
use crate::behaviour::ServerRef;
use crate::behaviour::address::Requests;
use crate::gen_server::{Builder, GenServer, StartError};
use crate::gen_statem::GenStatem;
use smarm_core::Pid;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// When a child that exited is restarted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restart {
    /// Always.
    Permanent,
    /// Only after an abnormal exit (a panic, or a kill by a link); not
    /// after a normal exit or a stop.
    Transient,
    /// Never: an exited temporary child is forgotten.
    Temporary,
}

/// How a child is stopped when its supervisor stops it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    /// Send it a `kill` exit signal ([`ExitSignal::Kill`](smarm_core::ExitSignal::Kill))
    /// and do not wait for it.
    BrutalKill,
    /// Send it a `shutdown` exit signal
    /// ([`ExitSignal::Shutdown`](smarm_core::ExitSignal::Shutdown):
    /// destructors and `terminate` run; a child that traps exits is told)
    /// and wait up to this long for it to exit; then send it `kill`, which
    /// it cannot trap, and wait as long again. A child still running after
    /// that is left with its kill pending (it ends at its next blocking
    /// call or safepoint) and the supervisor goes on: smarm cannot end an
    /// actor that never reaches a safepoint.
    Timeout(Duration),
    /// Send it a `shutdown` exit signal and wait however long it takes
    /// (the default for a child that is itself a supervisor).
    Infinity,
}

impl Shutdown {
    /// How long a child is given before it is killed (`None`: no limit
    /// for `Infinity`, none given for `BrutalKill`).
    pub(super) fn timeout(self) -> Option<Duration> {
        match self {
            Shutdown::Timeout(d) => Some(d),
            Shutdown::BrutalKill | Shutdown::Infinity => None,
        }
    }
}

/// Whether a child is a worker or a supervisor (which only changes its
/// default shutdown and how `which_children` reports it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildKind {
    /// A worker actor or server.
    Worker,
    /// A supervisor (a subtree).
    Supervisor,
}

/// Which children restart when one exits and is to be restarted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Only that child.
    OneForOne,
    /// Every child: the others are stopped (in reverse start order), then
    /// all are started again in order.
    OneForAll,
    /// That child and every child started after it.
    RestForOne,
}

/// A supervisor's strategy and restart intensity: more than `intensity`
/// restarts within `period` and the supervisor gives up: it stops its
/// children and exits abnormally, for its own supervisor to handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SupFlags {
    /// Which children restart together.
    pub strategy: Strategy,
    /// Most restarts allowed within `period`.
    pub intensity: u32,
    /// The window `intensity` counts over.
    pub period: Duration,
}

impl SupFlags {
    /// `strategy` with Erlang's default intensity: 1 restart in 5 s.
    pub fn new(strategy: Strategy) -> Self {
        SupFlags {
            strategy,
            intensity: 1,
            period: Duration::from_secs(5),
        }
    }

    /// At most `restarts` restarts within `period`.
    pub fn intensity(mut self, restarts: u32, period: Duration) -> Self {
        self.intensity = restarts;
        self.period = period;
        self
    }
}

/// How long a supervisor waits before restarting a child that keeps
/// failing ([`ChildSpec::backoff`]): `initial` after its first failure,
/// doubling with each failure after, up to `max`, each delay moved by up
/// to `jitter` of itself either way (so a fleet of children that failed
/// together do not all come back at once), never past `max`. A child that
/// stayed up for `reset_after` starts over at `initial`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// The delay after the first failure.
    pub initial: Duration,
    /// The longest delay.
    pub max: Duration,
    /// The fraction of each delay it may move by, either way (0 to 1).
    pub jitter: f64,
    /// How long a child must stay up to start over at `initial`.
    pub reset_after: Duration,
}

impl Backoff {
    /// `initial`, doubling up to `max`, with a jitter of 10% and a reset
    /// after `max` of quiet (or 1 s, if longer).
    ///
    /// # Panics
    ///
    /// If `initial` is zero or `max` is below it.
    pub fn new(initial: Duration, max: Duration) -> Self {
        assert!(
            !initial.is_zero() && max >= initial,
            "smarm: supervisor::Backoff::new({initial:?}, {max:?}): the first delay must be above \
             zero and the longest at least as long"
        );
        Backoff {
            initial,
            max,
            jitter: 0.1,
            reset_after: max.max(Duration::from_secs(1)),
        }
    }

    /// Move each delay by up to `jitter` of itself (0: exact delays).
    ///
    /// # Panics
    ///
    /// If `jitter` is not within 0 and 1.
    pub fn jitter(mut self, jitter: f64) -> Self {
        assert!(
            (0.0..=1.0).contains(&jitter),
            "smarm: supervisor::Backoff::jitter({jitter}): give a fraction between 0 and 1"
        );
        self.jitter = jitter;
        self
    }

    /// Start over at `initial` once the child has stayed up this long.
    pub fn reset_after(mut self, quiet: Duration) -> Self {
        self.reset_after = quiet;
        self
    }

    /// The delay before restart number `attempt` (1: after the first
    /// failure), with `unit` in [0, 1) choosing the jitter.
    pub(super) fn delay(&self, attempt: u32, unit: f64) -> Duration {
        let doublings = attempt.saturating_sub(1).min(32);
        let base = self
            .initial
            .saturating_mul(1u32 << doublings.min(31))
            .min(self.max);
        let moved = base.as_secs_f64() * (1.0 + self.jitter * (2.0 * unit - 1.0));
        Duration::from_secs_f64(moved.max(0.0)).min(self.max)
    }
}

/// The function that starts a child: run in the supervisor, it must link
/// the child to the caller (`spawn_link`, `Builder::link`) and return its
/// pid.
pub type StartFn = Box<dyn FnMut() -> Result<Pid, StartError> + Send>;

/// How a draining supervisor stops a child that is a behaviour: the
/// child's own drain (its mailbox handled first), within the timeout.
pub(super) type DrainFn = Box<dyn FnMut(Pid, Duration) + Send>;

/// A behaviour's address a draining supervisor stops its child through.
trait Drains: Send + 'static {
    fn pid(&self) -> Pid;
    fn drain(&self, timeout: Duration);
}

impl<E: Requests> Drains for ServerRef<E> {
    fn pid(&self) -> Pid {
        ServerRef::pid(self)
    }
    fn drain(&self, timeout: Duration) {
        let _ = ServerRef::drain(self, timeout);
    }
}

impl Drains for SupervisorRef {
    fn pid(&self) -> Pid {
        SupervisorRef::pid(self)
    }
    fn drain(&self, timeout: Duration) {
        let _ = SupervisorRef::drain(self, timeout);
    }
}

/// One child of a supervisor: how to start it, and when and how to restart
/// and stop it.
pub struct ChildSpec {
    pub(super) id: String,
    pub(super) start: StartFn,
    /// Set for behaviours: how a draining supervisor stops it.
    pub(super) drain: Option<DrainFn>,
    pub(super) backoff: Option<Backoff>,
    pub(super) restart: Restart,
    pub(super) shutdown: Shutdown,
    pub(super) kind: ChildKind,
}

impl std::fmt::Debug for ChildSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildSpec")
            .field("id", &self.id)
            .field("restart", &self.restart)
            .field("shutdown", &self.shutdown)
            .field("kind", &self.kind)
            .field("backoff", &self.backoff)
            .finish_non_exhaustive()
    }
}

impl ChildSpec {
    /// A permanent worker started by `start`, stopped with a 5 s timeout.
    /// `start` must link the child to the caller and return its pid.
    pub fn new(
        id: impl Into<String>,
        start: impl FnMut() -> Result<Pid, StartError> + Send + 'static,
    ) -> Self {
        ChildSpec {
            id: id.into(),
            start: Box::new(start),
            drain: None,
            backoff: None,
            restart: Restart::Permanent,
            shutdown: Shutdown::Timeout(Duration::from_secs(5)),
            kind: ChildKind::Worker,
        }
    }

    /// A plain actor running `body` (a fresh run of it per restart),
    /// labelled with the child's id (crash reports, introspection). Its
    /// start returns once the actor runs, so children start in order.
    pub fn actor(id: impl Into<String>, body: impl Fn() + Send + Sync + 'static) -> Self {
        let id = id.into();
        let label = id.clone();
        let body = std::sync::Arc::new(body);
        ChildSpec::new(id, move || {
            let body = body.clone();
            let (running_tx, running) = smarm_core::channel::channel::<()>();
            let child = smarm_core::Builder::new()
                .name(label.as_str())
                .link()
                .spawn(move || {
                    let _ = running_tx.send(());
                    drop(running_tx);
                    body()
                })?;
            let _ = running.recv();
            Ok(child.pid())
        })
    }

    /// A gen_server started (linked) with a fresh `args()` per start.
    pub fn server<G: GenServer>(
        id: impl Into<String>,
        args: impl Fn() -> G::Args + Send + 'static,
    ) -> Self {
        ChildSpec::drained_by(id, move || Builder::<G>::new().link().start(args()))
    }

    /// A named gen_server: its name is registered again at each restart,
    /// so it is reachable by name the moment it is back.
    pub fn named_server<G: GenServer>(
        id: impl Into<String>,
        name: crate::gen_server::ServerName<G>,
        args: impl Fn() -> G::Args + Send + 'static,
    ) -> Self {
        ChildSpec::drained_by(id, move || {
            Builder::<G>::new().name(name).link().start(args())
        })
    }

    /// A behaviour child started by `start`, which a draining supervisor
    /// stops through the address its latest start made.
    fn drained_by<R: Drains>(
        id: impl Into<String>,
        start: impl Fn() -> Result<R, StartError> + Send + 'static,
    ) -> Self {
        let latest = Arc::new(Mutex::new(None::<R>));
        let kept = latest.clone();
        let mut spec = ChildSpec::new(id, move || {
            let child = start()?;
            let pid = child.pid();
            *kept.lock().unwrap_or_else(|e| e.into_inner()) = Some(child);
            Ok(pid)
        });
        spec.drain = Some(Box::new(move |pid, timeout| {
            let child = latest.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(child) = child.filter(|c| c.pid() == pid) {
                child.drain(timeout);
            }
        }));
        spec
    }

    /// A state machine ([`gen_statem`](crate::gen_statem)) started (linked)
    /// with a fresh `args()` per start.
    pub fn statem<M: GenStatem>(
        id: impl Into<String>,
        args: impl Fn() -> M::Args + Send + 'static,
    ) -> Self {
        ChildSpec::drained_by(id, move || {
            crate::gen_statem::Builder::<M>::new().link().start(args())
        })
    }

    /// A named state machine: its name is registered again at each
    /// restart.
    pub fn named_statem<M: GenStatem>(
        id: impl Into<String>,
        name: crate::gen_statem::StatemName<M>,
        args: impl Fn() -> M::Args + Send + 'static,
    ) -> Self {
        ChildSpec::drained_by(id, move || {
            crate::gen_statem::Builder::<M>::new()
                .name(name)
                .link()
                .start(args())
        })
    }

    /// A typed actor (`#[derive(Actor)]` messages `M`) started as a server
    /// with a fresh `state()` per start; registered under `M`'s name, if
    /// it has one, at each restart.
    pub fn actor_server<M: crate::typed::Actor, H: crate::typed::Handler<M>>(
        id: impl Into<String>,
        state: impl Fn() -> H + Send + 'static,
    ) -> Self {
        ChildSpec::new(id, move || {
            crate::typed::start_link::<M>(state()).map(Pid::erase)
        })
    }

    /// A nested supervisor with `flags` and the children `children()`
    /// builds at each (re)start.
    pub fn supervisor(
        id: impl Into<String>,
        flags: SupFlags,
        children: impl Fn() -> Vec<ChildSpec> + Send + 'static,
    ) -> Self {
        let id = id.into();
        let label = id.clone();
        let mut spec = ChildSpec::drained_by(id, move || {
            super::handle::start_link_labelled(flags, children(), &label)
        });
        spec.kind = ChildKind::Supervisor;
        spec.shutdown = Shutdown::Infinity;
        spec
    }

    /// A dynamic supervisor (see [`DynamicSupervisor`](super::DynamicSupervisor))
    /// started from the spec `spec()` builds at each (re)start. Give the
    /// spec a [`name`](super::DynamicSpec::name) to reach it.
    pub fn dynamic_supervisor<A: Send + 'static>(
        id: impl Into<String>,
        spec: impl Fn() -> super::DynamicSpec<A> + Send + 'static,
    ) -> Self {
        let mut child = ChildSpec::new(id, move || {
            super::DynamicSupervisor::start_link(spec()).map(|s| s.pid())
        });
        child.kind = ChildKind::Supervisor;
        child.shutdown = Shutdown::Infinity;
        child
    }

    /// When to restart it (default: [`Restart::Permanent`]).
    pub fn restart(mut self, restart: Restart) -> Self {
        self.restart = restart;
        self
    }

    /// Restart it after a delay that grows while it keeps failing
    /// ([`Backoff`]), instead of at once. Each failure still counts toward
    /// the supervisor's restart intensity when it happens, so a child that
    /// fails too often still makes the supervisor give up; while a restart
    /// waits, [`which_children`](super::SupervisorRef::which_children)
    /// shows when it is due, and stopping the supervisor (or the child)
    /// calls it off. With [`Strategy::OneForAll`] or
    /// [`Strategy::RestForOne`], the children stopped with it wait too.
    ///
    /// ```
    /// use smarm::supervisor::{self, Backoff, ChildSpec, Strategy, SupFlags};
    /// use std::time::Duration;
    ///
    /// smarm::run(|| {
    ///     let flaky = ChildSpec::actor("flaky", || panic!("no database yet"))
    ///         .backoff(Backoff::new(Duration::from_millis(100), Duration::from_secs(10)));
    ///     let sup = supervisor::start(SupFlags::new(Strategy::OneForOne), vec![flaky]).unwrap();
    ///     smarm::sleep(Duration::from_millis(20));
    ///     let child = &sup.which_children().unwrap()[0];
    ///     assert!(child.pid.is_none() && child.restarting_at.is_some());
    ///     sup.shutdown().unwrap();
    /// });
    /// ```
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = Some(backoff);
        self
    }

    /// How to stop it (default: a 5 s timeout; infinity for supervisors).
    pub fn shutdown(mut self, shutdown: Shutdown) -> Self {
        self.shutdown = shutdown;
        self
    }

    /// Its id, unique among its siblings.
    pub fn id(&self) -> &str {
        &self.id
    }
}
