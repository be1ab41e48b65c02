//! The restart machinery both supervisors share (the static one in
//! `server.rs`, the dynamic one in `dynamic.rs`): what counts as a
//! failure, the restart log against the intensity window, the jitter of
//! backoff delays, the supervisor report, giving up, and publishing
//! restarts for introspection (through `crate::facts`, so the registry
//! that shows them does not import supervisors).

use crate::facts;
use crate::gen_server::{Flow, StopReason};
use smarm_core::report::{self, SupervisorAction};
use smarm_core::{DownReason, Exit, Pid};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The restarts of a supervisor within its intensity window (shared by
/// the static and the dynamic supervisor).
#[derive(Default)]
pub(super) struct RestartLog(VecDeque<Instant>);

impl RestartLog {
    /// Restarts within the window at the last count.
    pub(super) fn len(&self) -> u32 {
        u32::try_from(self.0.len()).unwrap_or(u32::MAX)
    }

    /// Note one restart; an error once more than `intensity` fall within
    /// `period`.
    pub(super) fn count(&mut self, intensity: u32, period: Duration) -> Result<(), String> {
        let now = smarm_core::time::now();
        self.0.push_back(now);
        while self
            .0
            .front()
            .is_some_and(|t| now.duration_since(*t) > period)
        {
            self.0.pop_front();
        }
        if self.0.len() > intensity as usize {
            return Err(format!(
                "more than {intensity} restart(s) within {period:?}"
            ));
        }
        Ok(())
    }
}

/// Report, through `smarm::report`, `action` by supervisor `me` on its
/// child `child` after `exit` (shared by the static and the dynamic
/// supervisor).
pub(super) fn report_child(
    me: Pid,
    child: String,
    exit: &Exit,
    restarts: u32,
    action: SupervisorAction,
) {
    if action == SupervisorAction::Restarted {
        facts::count_restart(me);
    }
    let name = smarm_core::introspect::actor_info(me).and_then(|info| info.names.first().copied());
    report::emit(report::Report::Supervisor(report::SupervisorReport::new(
        me,
        name,
        child,
        exit.from,
        exit.reason.clone(),
        restarts,
        action,
    )));
}

/// A supervisor starts: make its restarts visible to introspection, and
/// forget them when it exits.
pub(super) fn track_restarts(me: Pid) {
    crate::registry::ensure_introspection_hook();
    smarm_core::signal::on_exit(me, move |_, _| facts::forget(me));
}

/// Supervisor `me`'s next delayed restart is due at `next` (or none is
/// waiting): for introspection (`ActorInfo::next_restart`).
pub(super) fn publish_next_restart(me: Pid, next: Option<Instant>) {
    facts::next_restart_at(me, next);
}

/// The draws that spread backoff delays (shared by the static and the
/// dynamic supervisor): xorshift, seeded by the clock and the pid.
pub(super) struct Jitter(u64);

impl Jitter {
    pub(super) fn new(me: Pid) -> Jitter {
        let clock = smarm_core::time::system_now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Jitter((clock ^ (u64::from(me.index()) << 32 | u64::from(me.generation()))) | 1)
    }

    /// The next draw, in [0, 1).
    pub(super) fn next_unit(&mut self) -> f64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        (x >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Whether an exit is a failure (a transient child restarts after one):
/// every reason but a normal exit, a stop or a shutdown (Erlang's `normal`
/// and `shutdown`): a panic, a stop by a linked actor's exit, a kill, a
/// stack overflow, a reason of the child's own.
pub(super) fn is_failure(reason: &DownReason) -> bool {
    !matches!(
        reason,
        DownReason::Exit | DownReason::Stopped | DownReason::Shutdown
    )
}

/// What a supervisor does after a restart's `outcome`: go on, or (the
/// give-up report already made) stop with `shutdown`, as OTP's supervisor
/// does, so its own supervisor restarts it by its restart type or gives up
/// in turn, and nothing is reported as a crash.
pub(super) fn give_up_on(outcome: Result<(), String>) -> Flow {
    match outcome {
        Ok(()) => Flow::Continue,
        Err(_) => Flow::Stop(StopReason::Exit(DownReason::Shutdown)),
    }
}
