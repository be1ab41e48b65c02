//! The recording side of runtime trace events (feature `trace`): one
//! bounded ring per scheduler, written only by that scheduler's thread, and
//! one for every other thread (a wake from a plain thread, the system
//! monitor), whose writers take a lock. Recording is off until
//! [`Recorder::start`]; while no runtime of the process records, an event
//! point costs one relaxed load of a static and a branch.
//!
//! A ring keeps the newest `capacity` events: a writer overwrites the
//! oldest without waiting for anyone. The reader (`trace::stop`) may run
//! while a writer is still finishing an event it began before recording
//! stopped, so every entry carries a seqlock stamp and the reader drops an
//! entry it saw half-written or overwritten.
//!
//! # Invariants
//!
//! - (R1) One writer per ring at a time: a scheduler's ring is written only
//!   by its own thread, the shared ring only under its lock.
//! - (R2) An entry's stamp is odd while its words are being written and
//!   `2 * (index + 1)` once event `index` is complete; the stamp is written
//!   odd before the words and even after them (Release), so a reader that
//!   sees the same even stamp before (Acquire) and after (behind an Acquire
//!   fence) its reads of the words read them all from that one event.
//! - (R3) `head` counts events ever begun in the ring; it only grows, and
//!   it is published (Release) after the event's stamp is even.

use crate::loom::{AtomicBool, AtomicU64, Ordering, fence};

/// How many runtimes of the process are recording. An event point tests
/// this one static (no pointer to follow, no register to free) and goes
/// out of line only while it is non-zero.
static RECORDING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Whether any runtime of the process is recording.
#[inline(always)]
pub(crate) fn any_active() -> bool {
    RECORDING.load(std::sync::atomic::Ordering::Relaxed) != 0
}

/// What an event records; its operands `a` and `b` are listed per kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    /// a: the new actor, b: its parent (0 for the root).
    Spawn = 1,
    /// a: the actor, b: the queue ([`Queue`]).
    Enqueue,
    /// a: the actor about to run.
    Resume,
    /// a: the actor, b: what it waits on (`WaitingOn` as a byte).
    Park,
    /// a: the parked actor made runnable, b: the actor that woke it (0 if
    /// the waker was not an actor).
    Wake,
    /// a: the actor.
    Yield,
    /// a: the actor, switched out at a safepoint for overrunning its slice.
    Preempt,
    /// a: the actor, b: 1 if it panicked.
    Exit,
    /// a: the scheduler stolen from, b: how many actors were taken.
    Steal,
    /// a: the actor whose wait timer fired (0 for a message timer).
    TimerFire,
}

impl Kind {
    pub(crate) fn from_u64(v: u64) -> Option<Kind> {
        use Kind::*;
        [
            Spawn, Enqueue, Resume, Park, Wake, Yield, Preempt, Exit, Steal, TimerFire,
        ]
        .into_iter()
        .find(|k| *k as u64 == v)
    }
}

/// The queue an [`Kind::Enqueue`] put the actor on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Queue {
    Next = 0,
    Local,
    Injector,
    Pinned,
}

/// Words per event: timestamp, kind, two operands.
pub(crate) const WORDS: usize = 4;

/// One event as stored: `[clock ticks, kind, a, b]`.
pub(crate) type Raw = [u64; WORDS];

struct Entry {
    stamp: AtomicU64,
    words: [AtomicU64; WORDS],
}

/// A bounded single-writer ring of events (R1).
pub(crate) struct Ring {
    head: AtomicU64,
    entries: Box<[Entry]>,
}

impl Ring {
    /// A ring of `capacity` events (rounded up to a power of two, at least 2).
    pub(crate) fn new(capacity: usize) -> Ring {
        let capacity = capacity.max(2).next_power_of_two();
        Ring {
            head: AtomicU64::new(0),
            entries: (0..capacity)
                .map(|_| Entry {
                    stamp: AtomicU64::new(0),
                    words: std::array::from_fn(|_| AtomicU64::new(0)),
                })
                .collect(),
        }
    }

    fn mask(&self) -> u64 {
        self.entries.len() as u64 - 1
    }

    /// Append `raw`, overwriting the oldest event once the ring is full.
    /// The caller is this ring's one writer (R1).
    pub(crate) fn push(&self, raw: Raw) {
        let index = self.head.load(Ordering::Relaxed);
        let entry = &self.entries[(index & self.mask()) as usize];
        // (R2): odd first, then the words, then the even stamp.
        entry.stamp.store(2 * index + 1, Ordering::Relaxed);
        fence(Ordering::Release);
        let [w0, w1, w2, w3] = &entry.words;
        w0.store(raw[0], Ordering::Relaxed);
        w1.store(raw[1], Ordering::Relaxed);
        w2.store(raw[2], Ordering::Relaxed);
        w3.store(raw[3], Ordering::Relaxed);
        entry.stamp.store(2 * (index + 1), Ordering::Release);
        self.head.store(index + 1, Ordering::Release);
    }

    /// The events from index `from` on that are still in the ring and were
    /// read whole, oldest first, and how many of them were lost (overwritten
    /// or caught mid-write).
    pub(crate) fn read_from(&self, from: u64) -> (Vec<Raw>, u64) {
        let head = self.head.load(Ordering::Acquire);
        let oldest = head.saturating_sub(self.entries.len() as u64).max(from);
        let mut lost = oldest - from.min(oldest);
        let mut out = Vec::with_capacity((head - oldest) as usize);
        for index in oldest..head {
            let entry = &self.entries[(index & self.mask()) as usize];
            let before = entry.stamp.load(Ordering::Acquire);
            let raw: Raw = std::array::from_fn(|i| entry.words[i].load(Ordering::Relaxed));
            fence(Ordering::Acquire);
            let after = entry.stamp.load(Ordering::Relaxed);
            if before == after && before == 2 * (index + 1) {
                out.push(raw);
            } else {
                lost += 1;
            }
        }
        (out, lost)
    }

    /// Events ever begun in this ring (R3).
    pub(crate) fn head(&self) -> u64 {
        self.head.load(Ordering::Acquire)
    }
}

/// A runtime's rings, allocated on the first start.
pub(crate) struct Rings {
    /// One per scheduler, written by its own thread.
    pub(crate) schedulers: Box<[Ring]>,
    /// Everything recorded off a scheduler thread, written under the lock.
    pub(crate) shared: std::sync::Mutex<Ring>,
}

/// A runtime's trace recorder: whether it records, and its rings.
pub(crate) struct Recorder {
    active: AtomicBool,
    rings: std::sync::OnceLock<Rings>,
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

impl Recorder {
    pub(crate) fn new() -> Recorder {
        Recorder {
            active: AtomicBool::new(false),
            rings: std::sync::OnceLock::new(),
        }
    }

    /// Whether this runtime records events.
    #[inline(always)]
    pub(crate) fn active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    /// Start recording into rings of `capacity` events per scheduler
    /// (allocated on the first start; later starts keep the first size).
    /// Returns each ring's head at the start, the mark a reader reads from.
    pub(crate) fn start(&self, schedulers: usize, capacity: usize) -> Marks {
        let rings = self.rings.get_or_init(|| Rings {
            schedulers: (0..schedulers).map(|_| Ring::new(capacity)).collect(),
            shared: std::sync::Mutex::new(Ring::new(capacity)),
        });
        let marks = Marks {
            schedulers: rings.schedulers.iter().map(Ring::head).collect(),
            shared: rings.shared.lock().map_or(0, |ring| ring.head()),
        };
        if !self.active.swap(true, Ordering::AcqRel) {
            RECORDING.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        marks
    }

    /// Stop recording. An event already begun may still land; the reader
    /// tells it apart (R2).
    pub(crate) fn stop(&self) {
        if self.active.swap(false, Ordering::AcqRel) {
            RECORDING.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// The rings, once started.
    pub(crate) fn rings(&self) -> Option<&Rings> {
        self.rings.get()
    }

    /// Record `raw` from scheduler `scheduler` (its own ring, R1) or, with
    /// `None`, from another thread (the shared ring, under its lock).
    #[cold]
    #[inline(never)]
    pub(crate) fn record(&self, scheduler: Option<usize>, raw: Raw) {
        let Some(rings) = self.rings.get() else {
            return;
        };
        match scheduler.and_then(|id| rings.schedulers.get(id)) {
            Some(ring) => ring.push(raw),
            None => {
                if let Ok(ring) = rings.shared.lock() {
                    ring.push(raw);
                }
            }
        }
    }
}

impl Drop for Recorder {
    /// A runtime dropped while recording no longer counts as recording.
    fn drop(&mut self) {
        self.stop();
    }
}

/// Where each ring stood when recording started.
#[derive(Debug, Clone, Default)]
pub(crate) struct Marks {
    pub(crate) schedulers: Vec<u64>,
    pub(crate) shared: u64,
}

#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    /// A reader racing a writer that wraps the ring never accepts a torn
    /// or overwritten entry (R2): every event it returns is whole, in
    /// order, and the lost count makes up the rest.
    #[test]
    fn reader_never_sees_a_torn_event() {
        loom::model(|| {
            // A full ring, then a writer overwriting it while the reader
            // reads: every interleaving of the overwrite with the read.
            let ring = Arc::new(Ring::new(2));
            let event = |i: u64| [i, i * 10, i * 100, i * 1000];
            ring.push(event(1));
            ring.push(event(2));
            let writer = {
                let ring = ring.clone();
                thread::spawn(move || {
                    ring.push(event(3));
                    ring.push(event(4));
                })
            };
            let (events, lost) = ring.read_from(0);
            let mut last = 0;
            for raw in &events {
                assert_eq!(*raw, event(raw[0]), "torn event");
                assert!(raw[0] > last, "events out of order");
                last = raw[0];
            }
            assert!(events.len() as u64 + lost <= 4);
            writer.join().unwrap();
            let (events, lost) = ring.read_from(0);
            assert_eq!(events, [event(3), event(4)], "the newest two remain");
            assert_eq!(lost, 2, "the first two were overwritten");
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_events_and_counts_the_rest() {
        let ring = Ring::new(4);
        for i in 0..10u64 {
            ring.push([i, 0, 0, 0]);
        }
        let (events, lost) = ring.read_from(0);
        assert_eq!(
            events.iter().map(|e| e[0]).collect::<Vec<_>>(),
            [6, 7, 8, 9]
        );
        assert_eq!(lost, 6);
        let (events, lost) = ring.read_from(8);
        assert_eq!(events.iter().map(|e| e[0]).collect::<Vec<_>>(), [8, 9]);
        assert_eq!(lost, 0);
    }
}
