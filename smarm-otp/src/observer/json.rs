//! The observer protocol: a [`RuntimeSnapshot`] as JSON, `format_version`
//! first, and the history of scheduler samples.

use serde_json::{Map, Value, json};
use smarm_core::introspect::{ActorInfo, ActorState, RuntimeSnapshot, SchedulerStats, WaitingOn};

/// `snapshot` as the JSON object `/api/snapshot` serves. `uptime_ms`
/// counts from the observer's start.
pub(crate) fn snapshot(snapshot: &RuntimeSnapshot, time_ms: u64, uptime_ms: u64) -> String {
    let mut out = Map::new();
    // `format_version` first, so a reader can check it before the rest.
    out.insert("format_version".into(), json!(snapshot.format_version));
    out.insert("time_ms".into(), json!(time_ms));
    out.insert("uptime_ms".into(), json!(uptime_ms));
    out.insert(
        "actors".into(),
        Value::Array(snapshot.actors.iter().map(actor).collect()),
    );
    out.insert(
        "schedulers".into(),
        Value::Array(snapshot.schedulers.iter().map(scheduler).collect()),
    );
    Value::Object(out).to_string()
}

fn actor(a: &ActorInfo) -> Value {
    json!({
        "pid": a.pid.to_string(),
        "label": a.label,
        "names": a.names,
        "state": state(a.state),
        "waiting_on": a.waiting_on.map(waiting_on),
        "supervisor": a.supervisor.to_string(),
        "trap_exit": a.trap_exit,
        "monitors": a.monitors,
        "links": a.links,
        "joiners": a.joiners,
        "mailbox_depth": a.mailbox_depth,
        "overruns": a.overruns,
        "messages_received": a.messages_received,
        "budget_cycles": a.budget_cycles,
        "stack_bytes": a.stack_bytes,
        "stack_pages": a.stack_pages,
        "heap_bytes": a.heap_bytes,
        "heap_limit": a.heap_limit,
        "restarts": a.restarts,
        "next_restart_ms": a.next_restart.map(|d| d.as_millis() as u64),
    })
}

fn scheduler(s: &SchedulerStats) -> Value {
    json!({
        "id": s.id,
        "actors_run": s.actors_run,
        "parks": s.parks,
        "wakes": s.wakes,
        "steals": s.steals,
        "run_queue": s.run_queue,
        "idle_ns": s.idle.as_nanos() as u64,
        "blocked_in": s.blocked_in.map(|p| p.to_string()),
        "blocked_for_us": s.blocked_for.as_micros() as u64,
        "moved_off": s.moved_off,
        "spare": s.spare,
        "active": s.active,
        "spare_starts": s.spare_starts,
    })
}

/// The protocol's name of an actor state.
pub(crate) fn state(s: ActorState) -> &'static str {
    match s {
        ActorState::Queued => "queued",
        ActorState::Running => "running",
        ActorState::Notified => "notified",
        ActorState::Parked => "parked",
        ActorState::Done => "done",
    }
}

/// The protocol's name of what an actor waits on.
pub(crate) fn waiting_on(w: WaitingOn) -> &'static str {
    match w {
        WaitingOn::Message => "message",
        WaitingOn::Select => "select",
        WaitingOn::Reply => "reply",
        WaitingOn::Lock => "lock",
        WaitingOn::Fd => "fd",
        WaitingOn::Join => "join",
        WaitingOn::Timer => "timer",
        WaitingOn::BlockingJob => "blocking_job",
        WaitingOn::Room => "room",
        WaitingOn::Hibernating => "hibernating",
        WaitingOn::Future => "future",
        _ => "other",
    }
}

/// One history sample: per scheduler, utilisation over the last interval
/// and run-queue length.
#[derive(Debug, Clone)]
pub(crate) struct Sample {
    pub(crate) t_ms: u64,
    /// `(id, utilisation 0..=1, run queue)`.
    pub(crate) schedulers: Vec<(usize, f64, usize)>,
}

/// A behaviour's `sys` status, as `/api/status/...` serves it.
pub(crate) fn status(s: &crate::sys::Status) -> String {
    json!({
        "pid": s.pid.to_string(),
        "behaviour": s.behaviour,
        "module": s.module,
        "state": s.state,
        "suspended": s.suspended,
        "mailbox_len": s.mailbox_len,
        "log_size": s.log_size,
        "trace": s.trace,
        "installed": s.installed,
    })
    .to_string()
}

/// The history as `/api/history` serves it, oldest sample first.
pub(crate) fn history<'a>(interval_ms: u64, samples: impl Iterator<Item = &'a Sample>) -> String {
    let samples: Vec<Value> = samples
        .map(|s| {
            json!({
                "t_ms": s.t_ms,
                "schedulers": s.schedulers.iter().map(|(id, u, q)| json!({
                    "id": id,
                    "utilisation": (u * 1000.0).round() / 1000.0,
                    "run_queue": q,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({ "interval_ms": interval_ms, "samples": samples }).to_string()
}
