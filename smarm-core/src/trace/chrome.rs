//! A [`Trace`] as Chrome Trace Event JSON (the "JSON Object Format":
//! `{"traceEvents": [...]}`, timestamps in microseconds).
//!
//! One process (pid 1), one thread per scheduler (tid = its id) plus one
//! for events from other threads (tid = the scheduler count). An actor run
//! is a complete event (`ph: "X"`) from its resume to the event that ended
//! it on the same scheduler (park, yield, preemption, exit; or the trace's
//! end). A wake is a flow (`ph: "s"` where the waker ran, `ph: "f"`, bound
//! to the next slice, at the woken actor's next resume).

use super::{Event, EventKind, Trace};
use crate::json::json_string;
use crate::slot::Pid;
use std::collections::HashMap;

/// An open run on one scheduler track.
struct Open {
    pid: Pid,
    at_us: f64,
}

pub(super) fn export(trace: &Trace) -> String {
    let mut w = Writer {
        trace,
        out: String::from("{\"traceEvents\":["),
        first: true,
        open: (0..trace.schedulers + 1).map(|_| None).collect(),
        pending_flow: HashMap::new(),
        next_flow: 1,
    };
    w.metadata();
    for event in &trace.events {
        w.event(event);
    }
    w.finish()
}

/// The export in progress: the JSON so far, each track's open run, and the
/// wakes whose resume has not come yet (woken pid -> flow id).
struct Writer<'a> {
    trace: &'a Trace,
    out: String,
    first: bool,
    open: Vec<Option<Open>>,
    pending_flow: HashMap<Pid, u64>,
    next_flow: u64,
}

impl Writer<'_> {
    fn push(&mut self, event: String) {
        if !std::mem::take(&mut self.first) {
            self.out.push(',');
        }
        self.out.push_str(&event);
    }

    /// A track per scheduler and one for other threads, and the process.
    fn metadata(&mut self) {
        let schedulers = self.trace.schedulers;
        for tid in 0..=schedulers {
            let name = if tid < schedulers {
                format!("scheduler {tid}")
            } else {
                "other threads".to_string()
            };
            self.push(format!(
                "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":{tid},\"args\":{{\"name\":{}}}}}",
                json_string(&name)
            ));
        }
        self.push(
            "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"smarm\"}}"
                .to_string(),
        );
    }

    fn event(&mut self, event: &Event) {
        let trace = self.trace;
        let tid = event.scheduler.unwrap_or(trace.schedulers);
        let at_us = micros(event);
        match event.kind {
            EventKind::Resume { pid } => {
                if let Some(run) = self.open[tid].take() {
                    self.push(slice(trace, tid, &run, at_us, "switched"));
                }
                self.open[tid] = Some(Open { pid, at_us });
                if let Some(id) = self.pending_flow.remove(&pid) {
                    self.push(format!(
                        "{{\"name\":\"wake\",\"cat\":\"wake\",\"ph\":\"f\",\"bp\":\"e\",\"id\":{id},\"ts\":{at_us:.3},\"pid\":1,\"tid\":{tid}}}"
                    ));
                }
            }
            EventKind::Park { pid, .. }
            | EventKind::Yield { pid }
            | EventKind::Preempt { pid }
            | EventKind::Exit { pid, .. } => {
                let ends_run = self.open[tid].as_ref().is_some_and(|run| run.pid == pid);
                if ends_run && let Some(run) = self.open[tid].take() {
                    self.push(slice(trace, tid, &run, at_us, end_name(&event.kind)));
                }
                if let EventKind::Exit { .. } = event.kind {
                    self.push(instant(trace, tid, at_us, event));
                }
            }
            EventKind::Wake { pid, .. } => {
                let id = self.next_flow;
                self.next_flow += 1;
                self.pending_flow.insert(pid, id);
                self.push(format!(
                    "{{\"name\":\"wake\",\"cat\":\"wake\",\"ph\":\"s\",\"id\":{id},\"ts\":{at_us:.3},\"pid\":1,\"tid\":{tid}}}"
                ));
            }
            EventKind::Enqueue { .. } => {}
            EventKind::Spawn { .. } | EventKind::Steal { .. } | EventKind::TimerFire { .. } => {
                self.push(instant(trace, tid, at_us, event));
            }
        }
    }

    /// Close the runs still open at the trace's end, and the document.
    fn finish(mut self) -> String {
        let end_us = self.trace.duration.as_nanos() as f64 / 1000.0;
        let open = std::mem::take(&mut self.open);
        for (tid, run) in open.into_iter().enumerate() {
            if let Some(run) = run {
                self.push(slice(
                    self.trace,
                    tid,
                    &run,
                    end_us.max(run.at_us),
                    "trace end",
                ));
            }
        }
        self.out.push_str("],\"displayTimeUnit\":\"ns\"}");
        self.out
    }
}

fn micros(event: &Event) -> f64 {
    event.at.as_nanos() as f64 / 1000.0
}

fn end_name(kind: &EventKind) -> &'static str {
    match kind {
        EventKind::Park { .. } => "park",
        EventKind::Yield { .. } => "yield",
        EventKind::Preempt { .. } => "preempt",
        _ => "exit",
    }
}

/// The slice name of `pid`: its name when the trace stopped, and its pid.
fn actor_name(trace: &Trace, pid: Pid) -> String {
    match trace.name_of(pid) {
        Some(name) => format!("{name} {pid}"),
        None => pid.to_string(),
    }
}

fn slice(trace: &Trace, tid: usize, run: &Open, end_us: f64, ended_by: &str) -> String {
    format!(
        "{{\"name\":{},\"cat\":\"actor\",\"ph\":\"X\",\"ts\":{:.3},\"dur\":{:.3},\"pid\":1,\"tid\":{tid},\"args\":{{\"pid\":{},\"ended_by\":{}}}}}",
        json_string(&actor_name(trace, run.pid)),
        run.at_us,
        (end_us - run.at_us).max(0.0),
        json_string(&run.pid.to_string()),
        json_string(ended_by),
    )
}

fn instant(trace: &Trace, tid: usize, at_us: f64, event: &Event) -> String {
    let (name, args) = match event.kind {
        EventKind::Spawn { pid, parent } => (
            format!("spawn {}", actor_name(trace, pid)),
            format!(
                "{{\"pid\":{},\"parent\":{}}}",
                json_string(&pid.to_string()),
                parent.map_or("null".to_string(), |p| json_string(&p.to_string()))
            ),
        ),
        EventKind::Steal { from, count } => (
            format!("steal {count} from scheduler {from}"),
            format!("{{\"from\":{from},\"count\":{count}}}"),
        ),
        EventKind::TimerFire { pid } => (
            format!("timer {}", actor_name(trace, pid)),
            format!("{{\"pid\":{}}}", json_string(&pid.to_string())),
        ),
        EventKind::Exit { pid, panicked } => (
            format!("exit {}", actor_name(trace, pid)),
            format!(
                "{{\"pid\":{},\"panicked\":{panicked}}}",
                json_string(&pid.to_string())
            ),
        ),
        _ => (String::from("event"), String::from("{}")),
    };
    format!(
        "{{\"name\":{},\"cat\":\"runtime\",\"ph\":\"i\",\"s\":\"t\",\"ts\":{at_us:.3},\"pid\":1,\"tid\":{tid},\"args\":{args}}}",
        json_string(&name)
    )
}
