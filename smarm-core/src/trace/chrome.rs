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
use crate::slot::Pid;
use std::collections::HashMap;
use std::fmt::Write;

/// An open run on one scheduler track.
struct Open {
    pid: Pid,
    at_us: f64,
}

pub(super) fn export(trace: &Trace) -> String {
    let mut out = String::from("{\"traceEvents\":[");
    let mut first = true;
    let mut push = |out: &mut String, event: String| {
        if !std::mem::take(&mut first) {
            out.push(',');
        }
        out.push_str(&event);
    };
    let tracks = trace.schedulers + 1;
    for tid in 0..tracks {
        let name = if tid < trace.schedulers {
            format!("scheduler {tid}")
        } else {
            "other threads".to_string()
        };
        push(
            &mut out,
            format!(
                "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":{tid},\"args\":{{\"name\":{}}}}}",
                json_string(&name)
            ),
        );
    }
    push(
        &mut out,
        "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"smarm\"}}"
            .to_string(),
    );
    let mut open: Vec<Option<Open>> = (0..tracks).map(|_| None).collect();
    // Wakes whose resume has not come yet: woken pid -> flow id.
    let mut pending_flow: HashMap<Pid, u64> = HashMap::new();
    let mut next_flow = 1u64;
    for event in &trace.events {
        let tid = event.scheduler.unwrap_or(trace.schedulers);
        let at_us = micros(event);
        match event.kind {
            EventKind::Resume { pid } => {
                if let Some(run) = open[tid].take() {
                    push(&mut out, slice(trace, tid, &run, at_us, "switched"));
                }
                open[tid] = Some(Open { pid, at_us });
                if let Some(id) = pending_flow.remove(&pid) {
                    push(
                        &mut out,
                        format!(
                            "{{\"name\":\"wake\",\"cat\":\"wake\",\"ph\":\"f\",\"bp\":\"e\",\"id\":{id},\"ts\":{at_us:.3},\"pid\":1,\"tid\":{tid}}}"
                        ),
                    );
                }
            }
            EventKind::Park { pid, .. }
            | EventKind::Yield { pid }
            | EventKind::Preempt { pid }
            | EventKind::Exit { pid, .. } => {
                let ends_run = open[tid].as_ref().is_some_and(|run| run.pid == pid);
                if ends_run {
                    if let Some(run) = open[tid].take() {
                        push(
                            &mut out,
                            slice(trace, tid, &run, at_us, end_name(&event.kind)),
                        );
                    }
                }
                if let EventKind::Exit { .. } = event.kind {
                    push(&mut out, instant(trace, tid, at_us, event));
                }
            }
            EventKind::Wake { pid, .. } => {
                let id = next_flow;
                next_flow += 1;
                pending_flow.insert(pid, id);
                push(
                    &mut out,
                    format!(
                        "{{\"name\":\"wake\",\"cat\":\"wake\",\"ph\":\"s\",\"id\":{id},\"ts\":{at_us:.3},\"pid\":1,\"tid\":{tid}}}"
                    ),
                );
            }
            EventKind::Enqueue { .. } => {}
            EventKind::Spawn { .. } | EventKind::Steal { .. } | EventKind::TimerFire { .. } => {
                push(&mut out, instant(trace, tid, at_us, event));
            }
        }
    }
    let end_us = trace.duration.as_nanos() as f64 / 1000.0;
    for (tid, run) in open.into_iter().enumerate() {
        if let Some(run) = run {
            push(
                &mut out,
                slice(trace, tid, &run, end_us.max(run.at_us), "trace end"),
            );
        }
    }
    out.push_str("],\"displayTimeUnit\":\"ns\"}");
    out
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

/// `s` as a JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::json_string;

    #[test]
    fn strings_are_escaped() {
        assert_eq!(json_string("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\u0001\"");
    }
}
