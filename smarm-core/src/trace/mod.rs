//! Runtime trace events (feature `trace`): what each scheduler did, event
//! by event, for a window you choose, exported to the Chrome Trace Event
//! format that Perfetto (ui.perfetto.dev, offline too) and
//! `chrome://tracing` open.
//!
//! ```
//! use smarm::{channel, run, spawn};
//! use smarm_core::trace; // `smarm::trace` in the facade
//!
//! run(|| {
//!     let (tx, rx) = channel::<u32>();
//!     trace::start();
//!     let child = spawn(move || {
//!         tx.send(7).unwrap();
//!     });
//!     assert_eq!(rx.recv().unwrap(), 7);
//!     child.join().unwrap();
//!     let trace = trace::stop().unwrap();
//!     // The spawn, the child's run and exit, the wake of this actor...
//!     assert!(trace.events().len() >= 4);
//!     let json = trace.to_chrome_json(); // open it in Perfetto
//!     assert!(json.starts_with("{\"traceEvents\":["));
//! });
//! ```
//!
//! # What is recorded
//!
//! Spawns, enqueues (and onto which queue), resumes, parks (and what the
//! actor waits on), wakes (and by which actor), yields, preemptions, exits,
//! steals and timer fires, each with a timestamp from the runtime's cycle
//! counter. Each scheduler records into a ring of its own that only its
//! thread writes (no lock, no shared cache line); events from other
//! threads go to one shared ring under a lock. A ring keeps the newest
//! events ([`start_with_capacity`]); [`Trace::lost`] counts the rest.
//!
//! # Cost
//!
//! Without the feature no event point exists. With it, a point costs one
//! relaxed load while no trace is running, and a clock read plus four
//! stores while one is (the guide's "Observing a running system" chapter
//! has the measured figures).
//!
//! # Invariants
//!
//! - (T1) At most one trace is running per runtime; [`start`] while one
//!   runs starts it afresh.
//! - (T2) A trace holds only events recorded after its [`start`]: the
//!   reader starts at each ring's head as it stood then (ring (R3)).

mod chrome;

use crate::recorder::{Kind, Marks, Queue};
use crate::scheduler::{WaitingOn, with_current_actor};
use crate::slot::Pid;
use std::collections::HashMap;
use std::time::Duration;

/// Events kept per scheduler ring unless [`start_with_capacity`] says
/// otherwise (32 bytes each: 2 MiB per scheduler).
pub const DEFAULT_CAPACITY: usize = 1 << 16;

/// Why [`stop`] has no trace to return.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    /// No trace was running in this runtime.
    #[error("no trace is running: call smarm::trace::start() first")]
    NotStarted,
}

/// The running trace of a runtime: where each ring stood at its start.
#[derive(Default)]
struct Session(std::sync::Mutex<Option<(Marks, u64)>>);

/// Start recording this runtime's events (restarting a trace already
/// running, (T1)), with rings of [`DEFAULT_CAPACITY`] events.
///
/// # Panics
///
/// Outside an actor.
pub fn start() {
    start_in("smarm::trace::start", DEFAULT_CAPACITY);
}

/// [`start`], with rings of `capacity` events per scheduler (rounded up to
/// a power of two). The rings are allocated by the first start of a
/// runtime; later starts keep that size.
///
/// # Panics
///
/// Outside an actor.
pub fn start_with_capacity(capacity: usize) {
    start_in("smarm::trace::start_with_capacity", capacity);
}

fn start_in(what: &str, capacity: usize) {
    with_current_actor(what, |_, shared| {
        let session = shared.locals().get_or_default::<Session>();
        let mut running = session.0.lock().unwrap_or_else(|e| e.into_inner());
        shared.recorder().stop();
        let marks = shared.recorder().start(shared.scheduler_count(), capacity);
        *running = Some((marks, crate::clock::now()));
    });
}

/// Stop recording and collect what this runtime recorded since [`start`].
///
/// # Errors
///
/// [`TraceError::NotStarted`] if no trace is running.
///
/// # Panics
///
/// Outside an actor.
pub fn stop() -> Result<Trace, TraceError> {
    let collected = with_current_actor("smarm::trace::stop", |_, shared| {
        let session = shared.locals().get_or_default::<Session>();
        let mut running = session.0.lock().unwrap_or_else(|e| e.into_inner());
        let (marks, start) = running.take()?;
        shared.recorder().stop();
        let end = crate::clock::now();
        let rings = shared.recorder().rings()?;
        let mut raw = Vec::new();
        let mut lost = 0;
        for (id, ring) in rings.schedulers.iter().enumerate() {
            let from = marks.schedulers.get(id).copied().unwrap_or(0);
            let (events, n) = ring.read_from(from);
            lost += n;
            raw.extend(events.into_iter().map(|e| (Some(id), e)));
        }
        if let Ok(ring) = rings.shared.lock() {
            let (events, n) = ring.read_from(marks.shared);
            lost += n;
            raw.extend(events.into_iter().map(|e| (None, e)));
        }
        Some((raw, lost, start, end, rings.schedulers.len()))
    });
    let (raw, lost, start, end, schedulers) = collected.ok_or(TraceError::NotStarted)?;
    let mut events: Vec<Event> = raw
        .into_iter()
        .filter_map(|(scheduler, [ts, kind, a, b])| {
            Some(Event {
                at: Duration::from_nanos(crate::clock::nanos_for(ts.saturating_sub(start))),
                scheduler,
                kind: EventKind::decode(Kind::from_u64(kind)?, a, b),
            })
        })
        .collect();
    // Each ring is in order; the cycle counter is invariant across cores,
    // so one stable sort interleaves them.
    events.sort_by_key(|e| e.at);
    let names = crate::introspect::snapshot()
        .actors
        .into_iter()
        .filter_map(|a| {
            let name = a.names.first().map(|n| n.to_string()).or(a.label)?;
            Some((a.pid, name))
        })
        .collect();
    Ok(Trace {
        events,
        lost,
        schedulers,
        duration: Duration::from_nanos(crate::clock::nanos_for(end.saturating_sub(start))),
        names,
    })
}

/// One recorded event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// When, from the trace's start.
    pub at: Duration,
    /// The scheduler whose thread recorded it; `None` for another thread.
    pub scheduler: Option<usize>,
    /// What happened.
    pub kind: EventKind,
}

/// What an [`Event`] records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// `pid` was spawned by `parent` (`None` for a root actor).
    Spawn {
        /// The new actor.
        pid: Pid,
        /// Its parent.
        parent: Option<Pid>,
    },
    /// `pid` was made runnable on `queue`.
    Enqueue {
        /// The actor.
        pid: Pid,
        /// Where it was queued.
        queue: QueueKind,
    },
    /// `pid` starts (or resumes) running.
    Resume {
        /// The actor.
        pid: Pid,
    },
    /// `pid` parks, waiting on `on` (`None` if it had not said).
    Park {
        /// The actor.
        pid: Pid,
        /// What it waits for.
        on: Option<WaitingOn>,
    },
    /// Parked `pid` was made runnable by `by` (`None`: not by an actor:
    /// a timer, IO readiness, another thread).
    Wake {
        /// The woken actor.
        pid: Pid,
        /// The actor that woke it.
        by: Option<Pid>,
    },
    /// `pid` yields its turn.
    Yield {
        /// The actor.
        pid: Pid,
    },
    /// `pid` overran its timeslice and was switched out at a safepoint.
    Preempt {
        /// The actor.
        pid: Pid,
    },
    /// `pid` finished; `panicked` if by a panic.
    Exit {
        /// The actor.
        pid: Pid,
        /// Whether it panicked.
        panicked: bool,
    },
    /// `count` actors were stolen from scheduler `from`.
    Steal {
        /// The scheduler stolen from.
        from: usize,
        /// Actors taken.
        count: u32,
    },
    /// A timer fired: `pid`'s wait timer or a message timer it set.
    TimerFire {
        /// The actor the timer belongs to.
        pid: Pid,
    },
}

/// The queue an [`EventKind::Enqueue`] put an actor on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueKind {
    /// The scheduler's next slot: it runs next.
    Next,
    /// The back of the scheduler's local queue.
    Local,
    /// The global injector (from a thread that is not a scheduler).
    Injector,
    /// The queue of the one scheduler it must resume on (preempted, or
    /// unwinding).
    Pinned,
}

impl EventKind {
    fn decode(kind: Kind, a: u64, b: u64) -> EventKind {
        let pid = Pid::from_bits(a);
        let some_pid = |bits: u64| (bits != 0).then(|| Pid::from_bits(bits));
        match kind {
            Kind::Spawn => EventKind::Spawn {
                pid,
                parent: some_pid(b),
            },
            Kind::Enqueue => EventKind::Enqueue {
                pid,
                queue: match b {
                    x if x == Queue::Next as u64 => QueueKind::Next,
                    x if x == Queue::Local as u64 => QueueKind::Local,
                    x if x == Queue::Pinned as u64 => QueueKind::Pinned,
                    _ => QueueKind::Injector,
                },
            },
            Kind::Resume => EventKind::Resume { pid },
            Kind::Park => EventKind::Park {
                pid,
                on: WaitingOn::from_u8(b as u8),
            },
            Kind::Wake => EventKind::Wake {
                pid,
                by: some_pid(b),
            },
            Kind::Yield => EventKind::Yield { pid },
            Kind::Preempt => EventKind::Preempt { pid },
            Kind::Exit => EventKind::Exit {
                pid,
                panicked: b != 0,
            },
            Kind::Steal => EventKind::Steal {
                from: a as usize,
                count: b as u32,
            },
            Kind::TimerFire => EventKind::TimerFire { pid },
        }
    }

    /// The actor the event is about, if one.
    pub fn pid(&self) -> Option<Pid> {
        match *self {
            EventKind::Spawn { pid, .. }
            | EventKind::Enqueue { pid, .. }
            | EventKind::Resume { pid }
            | EventKind::Park { pid, .. }
            | EventKind::Wake { pid, .. }
            | EventKind::Yield { pid }
            | EventKind::Preempt { pid }
            | EventKind::Exit { pid, .. }
            | EventKind::TimerFire { pid } => Some(pid),
            EventKind::Steal { .. } => None,
        }
    }
}

/// The events of one trace, oldest first.
#[derive(Debug, Clone)]
pub struct Trace {
    events: Vec<Event>,
    lost: u64,
    schedulers: usize,
    duration: Duration,
    names: HashMap<Pid, String>,
}

impl Trace {
    /// Every event kept, in time order.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Events recorded but not kept: overwritten in a full ring, or caught
    /// mid-write by [`stop`].
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// How long the trace ran.
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// The runtime's scheduler count (its rings).
    pub fn schedulers(&self) -> usize {
        self.schedulers
    }

    /// The name `pid` had when the trace stopped: its first registered
    /// name, else its label; `None` for an unnamed or finished actor.
    pub fn name_of(&self, pid: Pid) -> Option<&str> {
        self.names.get(&pid).map(String::as_str)
    }

    /// The trace in the Chrome Trace Event format (JSON object form): one
    /// track per scheduler thread (and one for other threads), one slice
    /// per actor run, a flow arrow from each wake to the resume it caused,
    /// and instant events for spawns, steals and timer fires.
    pub fn to_chrome_json(&self) -> String {
        chrome::export(self)
    }

    /// Write [`to_chrome_json`](Trace::to_chrome_json) to `path`.
    ///
    /// # Errors
    ///
    /// Whatever writing the file returns.
    pub fn write_chrome(&self, path: impl AsRef<std::path::Path>) -> std::io::Result<()> {
        std::fs::write(path, self.to_chrome_json())
    }
}
