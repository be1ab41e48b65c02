//! The terminal view: a `top`-like table of the busiest actors and a line
//! per scheduler, for machines without a browser.

use super::json::{state, waiting_on};
use smarm_core::introspect::{ActorInfo, RuntimeSnapshot};
use std::fmt::Write;
use std::time::Duration;

/// What [`top_text`] ranks actors by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TopBy {
    /// Messages queued on their published channels.
    #[default]
    MailboxDepth,
    /// Run time (with the `budget-accounting` feature, which `observer`
    /// turns on).
    RunTime,
    /// Messages taken from their published channels.
    MessagesReceived,
    /// Restarts made (supervisors).
    Restarts,
    /// Stack in use at the last switch out (with `budget-accounting`).
    StackBytes,
    /// Heap held (with the heap-accounting allocator).
    HeapBytes,
}

impl TopBy {
    fn key(self, a: &ActorInfo) -> u64 {
        match self {
            TopBy::MailboxDepth => u64::from(a.mailbox_depth),
            TopBy::RunTime => a.budget_cycles.unwrap_or(0),
            TopBy::MessagesReceived => a.messages_received,
            TopBy::Restarts => a.restarts,
            TopBy::StackBytes => a.stack_bytes.unwrap_or(0),
            TopBy::HeapBytes => a.heap_bytes.unwrap_or(0),
        }
    }
}

/// `snapshot` as text: one line per scheduler, then the `n` actors with
/// the largest `by`.
///
/// ```
/// use smarm::observer::{top_text, TopBy};
///
/// smarm::run(|| {
///     let text = top_text(&smarm::snapshot(), TopBy::MailboxDepth, 10);
///     assert!(text.contains("PID"));
/// });
/// ```
pub fn top_text(snapshot: &RuntimeSnapshot, by: TopBy, n: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "smarm: {} actors", snapshot.actors.len());
    for s in snapshot.schedulers.iter().filter(|s| s.active) {
        let _ = writeln!(
            out,
            "scheduler {}: run {} queue {} steals {} idle {:.1}s{}",
            s.id,
            s.actors_run,
            s.run_queue,
            s.steals,
            s.idle.as_secs_f64(),
            s.blocked_in
                .map(|p| format!("  BLOCKED in {p} for {:?}", s.blocked_for))
                .unwrap_or_default(),
        );
    }
    let mut actors: Vec<&ActorInfo> = snapshot.actors.iter().collect();
    actors.sort_by_key(|a| std::cmp::Reverse(by.key(a)));
    let _ = writeln!(
        out,
        "\n{:<14} {:<24} {:<9} {:<12} {:>8} {:>12} {:>9} {:>8} {:>8} {:>8}",
        "PID",
        "NAME",
        "STATE",
        "WAITING",
        "MAILBOX",
        "RECEIVED",
        "RESTARTS",
        "RUN",
        "STACK",
        "HEAP"
    );
    for a in actors.into_iter().take(n) {
        let name = a
            .names
            .first()
            .map(|n| n.to_string())
            .or_else(|| a.label.clone())
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{:<14} {:<24.24} {:<9} {:<12} {:>8} {:>12} {:>9} {:>8} {:>8} {:>8}",
            a.pid.to_string(),
            name,
            state(a.state),
            a.waiting_on.map_or("", waiting_on),
            a.mailbox_depth,
            a.messages_received,
            a.restarts,
            a.budget_cycles.map_or("-".to_string(), ticks),
            a.stack_bytes.map_or("-".to_string(), kib),
            a.heap_bytes.map_or("-".to_string(), kib),
        );
    }
    out
}

fn kib(bytes: u64) -> String {
    format!("{}K", bytes.div_ceil(1024))
}

fn ticks(t: u64) -> String {
    match t {
        0..1_000 => t.to_string(),
        1_000..1_000_000 => format!("{}k", t / 1_000),
        1_000_000..1_000_000_000 => format!("{}M", t / 1_000_000),
        _ => format!("{}G", t / 1_000_000_000),
    }
}

/// Redraw [`top_text`] on the terminal (standard output) every `every`
/// until the calling actor is stopped: spawn it as an actor of its own.
///
/// # Panics
///
/// Outside an actor.
pub fn run_top(by: TopBy, n: usize, every: Duration) -> ! {
    smarm_core::require_actor("smarm::observer::run_top");
    loop {
        // Clear the screen and home the cursor, then draw.
        print!("\x1b[2J\x1b[H{}", top_text(&smarm_core::snapshot(), by, n));
        smarm_core::time::sleep(every);
    }
}
