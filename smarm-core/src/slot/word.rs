//! The packed slot state word: `generation:32 | epoch:28 | state:4`.
//!
//! Every transition goes through [`SlotWord::transition`]; the named
//! transitions return `#[must_use]` enums that say what the caller must do.

use crate::loom::{AtomicU64, Ordering};

const STATE_BITS: u32 = 4;
const EPOCH_BITS: u32 = 28;
const STATE_MASK: u64 = (1 << STATE_BITS) - 1;
const EPOCH_MASK: u64 = ((1 << EPOCH_BITS) - 1) << STATE_BITS;
const GEN_SHIFT: u32 = STATE_BITS + EPOCH_BITS;

/// The lifecycle states of a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum State {
    /// No actor; on the free list.
    Vacant = 0,
    /// In exactly one run queue (slot (I1)).
    Queued = 1,
    /// On a scheduler thread.
    Running = 2,
    /// Running, and a wake for the current wait has landed.
    RunningNotified = 3,
    /// Suspended in a wait; a matching wake enqueues it.
    Parked = 4,
    /// Finished; its outcome waits for the `JoinHandle`.
    Done = 5,
}

impl State {
    fn from_bits(bits: u64) -> State {
        match bits & STATE_MASK {
            0 => State::Vacant,
            1 => State::Queued,
            2 => State::Running,
            3 => State::RunningNotified,
            4 => State::Parked,
            _ => State::Done,
        }
    }
}

/// A decoded reading of the word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Snapshot(pub(crate) u64);

impl Snapshot {
    pub(crate) fn generation(self) -> u32 {
        (self.0 >> GEN_SHIFT) as u32
    }
    pub(crate) fn epoch(self) -> u32 {
        ((self.0 & EPOCH_MASK) >> STATE_BITS) as u32
    }
    pub(crate) fn state(self) -> State {
        State::from_bits(self.0)
    }
    fn with_state(self, s: State) -> Snapshot {
        Snapshot((self.0 & !STATE_MASK) | s as u64)
    }
    fn with_next_epoch(self) -> Snapshot {
        let epoch = (self.0 & EPOCH_MASK).wrapping_add(1 << STATE_BITS) & EPOCH_MASK;
        Snapshot((self.0 & !EPOCH_MASK) | epoch)
    }
    fn pack(generation: u32, epoch: u32, state: State) -> Snapshot {
        Snapshot(
            (u64::from(generation) << GEN_SHIFT)
                | ((u64::from(epoch) << STATE_BITS) & EPOCH_MASK)
                | state as u64,
        )
    }
}

/// What a waker must do after [`SlotWord::unpark_at`].
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unpark {
    /// Parked→Queued: the caller must enqueue the actor.
    Enqueue,
    /// The wake is recorded (RunningNotified) or already pending: nothing.
    Noted,
    /// Another wait, another tenant, or finished: nothing.
    Stale,
}

/// What the scheduler must do after [`SlotWord::commit_park`].
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParkCommit {
    /// Running→Parked: a future matching wake will enqueue it.
    Parked,
    /// A wake landed first (RunningNotified→Queued): the caller must
    /// enqueue it (or run it again) now.
    Requeue,
}

/// The atomic state word of one slot (transparent: a debugger reads it as
/// the `u64` it is, `debugger.rs`).
#[repr(transparent)]
pub(crate) struct SlotWord(AtomicU64);

impl SlotWord {
    /// A vacant word of generation `generation`.
    pub(crate) fn vacant(generation: u32) -> Self {
        SlotWord(AtomicU64::new(
            Snapshot::pack(generation, 0, State::Vacant).0,
        ))
    }

    /// Read the word.
    pub(crate) fn load(&self) -> Snapshot {
        Snapshot(self.0.load(Ordering::Acquire))
    }

    /// The one CAS loop every transition goes through: `f` maps the current
    /// reading to the next one, or `None` to leave the word alone.
    fn transition(
        &self,
        mut f: impl FnMut(Snapshot) -> Option<Snapshot>,
    ) -> Result<Snapshot, Snapshot> {
        let mut cur = self.load();
        loop {
            let Some(next) = f(cur) else { return Err(cur) };
            match self
                .0
                .compare_exchange_weak(cur.0, next.0, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Ok(cur),
                Err(actual) => cur = Snapshot(actual),
            }
        }
    }

    /// Vacant→Queued for a new actor (the allocator owns the slot). Returns
    /// the generation the new pid carries.
    pub(crate) fn spawn_queued(&self) -> u32 {
        let prev = self.transition(|s| {
            debug_assert_eq!(s.state(), State::Vacant, "spawn into a non-vacant slot");
            Some(Snapshot::pack(s.generation(), 0, State::Queued))
        });
        match prev {
            Ok(s) | Err(s) => s.generation(),
        }
    }

    /// Queued→Running, by the scheduler that popped the actor (slot (I2)).
    ///
    /// A plain store, not a CAS: no other party writes a Queued word
    /// (wakers and stops only read it and leave it alone), so nothing can
    /// be overwritten; a waker's CAS that raced us simply fails and
    /// re-reads Running.
    #[inline]
    pub(crate) fn start_running(&self) {
        let s = self.load();
        debug_assert_eq!(
            s.state(),
            State::Queued,
            "popped an actor that was not Queued"
        );
        self.0
            .store(s.with_state(State::Running).0, Ordering::Release);
    }

    /// Open a new wait: bump the epoch, drop any stale notification, and
    /// return the new epoch. Called by the running actor itself.
    pub(crate) fn begin_wait(&self) -> u32 {
        match self.transition(|s| {
            debug_assert!(matches!(s.state(), State::Running | State::RunningNotified));
            Some(s.with_next_epoch().with_state(State::Running))
        }) {
            Ok(prev) | Err(prev) => prev.with_next_epoch().epoch(),
        }
    }

    /// Close the current wait without parking: like `begin_wait`, so every
    /// waker registered for it becomes stale.
    pub(crate) fn retire_wait(&self) {
        let _ = self.begin_wait();
    }

    /// Deliver a wake for wait `epoch` of incarnation `generation` (slot
    /// (I3)). `epoch = None` is the wildcard wake of a stop request.
    pub(crate) fn unpark_at(&self, generation: u32, epoch: Option<u32>) -> Unpark {
        let r = self.transition(|s| {
            if s.generation() != generation || epoch.is_some_and(|e| e != s.epoch()) {
                return None;
            }
            match s.state() {
                State::Parked => Some(s.with_state(State::Queued)),
                State::Running => Some(s.with_state(State::RunningNotified)),
                _ => None,
            }
        });
        match r {
            Ok(prev) if prev.state() == State::Parked => Unpark::Enqueue,
            Ok(_) => Unpark::Noted,
            Err(s)
                if s.generation() == generation
                    && matches!(s.state(), State::RunningNotified | State::Queued) =>
            {
                Unpark::Noted
            }
            Err(_) => Unpark::Stale,
        }
    }

    /// After the actor switched away to park: Running→Parked, or, if a wake
    /// already landed, RunningNotified→Queued (slot (I2), (I3)).
    pub(crate) fn commit_park(&self) -> ParkCommit {
        match self.transition(|s| match s.state() {
            State::Running => Some(s.with_state(State::Parked)),
            State::RunningNotified => Some(s.with_state(State::Queued)),
            other => {
                debug_assert!(false, "commit_park in state {other:?}");
                None
            }
        }) {
            Ok(prev) if prev.state() == State::Running => ParkCommit::Parked,
            _ => ParkCommit::Requeue,
        }
    }

    /// After the actor yielded: Running/RunningNotified→Queued; the caller
    /// enqueues it.
    pub(crate) fn requeue(&self) {
        let r = self.transition(|s| match s.state() {
            State::Running | State::RunningNotified => Some(s.with_state(State::Queued)),
            _ => None,
        });
        debug_assert!(r.is_ok(), "requeue of an actor that was not running: {r:?}");
    }

    /// The actor finished: →Done. Wakers now see it as stale.
    pub(crate) fn finish(&self) {
        let _ = self.transition(|s| Some(s.with_state(State::Done)));
    }

    /// Done→Vacant with the next generation (slot (I4)). Generation 0 is
    /// skipped so that a zeroed pid never matches a live slot.
    pub(crate) fn recycle(&self) {
        let _ = self.transition(|s| {
            debug_assert_eq!(s.state(), State::Done, "recycling a slot that is not Done");
            let next = match s.generation().wrapping_add(1) {
                0 => 1,
                g => g,
            };
            Some(Snapshot::pack(next, 0, State::Vacant))
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn running(w: &SlotWord) {
        let _ = w.spawn_queued();
        w.start_running();
    }

    #[test]
    fn pack_roundtrip() {
        let s = Snapshot::pack(0xdead_beef, 0x0abc_def1, State::Parked);
        assert_eq!(s.generation(), 0xdead_beef);
        assert_eq!(s.epoch(), 0x0abc_def1);
        assert_eq!(s.state(), State::Parked);
    }

    #[test]
    fn epoch_wraps_within_its_field() {
        let s = Snapshot::pack(7, (1 << EPOCH_BITS) - 1, State::Running).with_next_epoch();
        assert_eq!(s.epoch(), 0);
        assert_eq!(
            s.generation(),
            7,
            "epoch overflow must not carry into the generation"
        );
    }

    #[test]
    fn wake_after_park_enqueues() {
        let w = SlotWord::vacant(1);
        running(&w);
        let e = w.begin_wait();
        assert_eq!(w.commit_park(), ParkCommit::Parked);
        assert_eq!(w.unpark_at(1, Some(e)), Unpark::Enqueue);
        assert_eq!(w.load().state(), State::Queued);
        assert_eq!(
            w.unpark_at(1, Some(e)),
            Unpark::Noted,
            "second wake must not enqueue twice"
        );
    }

    #[test]
    fn wake_before_park_commit_requeues() {
        let w = SlotWord::vacant(1);
        running(&w);
        let e = w.begin_wait();
        assert_eq!(w.unpark_at(1, Some(e)), Unpark::Noted);
        assert_eq!(w.load().state(), State::RunningNotified);
        assert_eq!(w.commit_park(), ParkCommit::Requeue);
        assert_eq!(w.load().state(), State::Queued);
    }

    #[test]
    fn stale_epoch_and_generation_do_nothing() {
        let w = SlotWord::vacant(1);
        running(&w);
        let old = w.begin_wait();
        let new = w.begin_wait();
        assert_ne!(old, new);
        assert_eq!(w.commit_park(), ParkCommit::Parked);
        assert_eq!(w.unpark_at(1, Some(old)), Unpark::Stale);
        assert_eq!(w.unpark_at(2, Some(new)), Unpark::Stale);
        assert_eq!(w.load().state(), State::Parked);
        assert_eq!(
            w.unpark_at(1, None),
            Unpark::Enqueue,
            "the wildcard wake ignores epochs"
        );
    }

    #[test]
    fn begin_wait_drops_a_stale_notification() {
        let w = SlotWord::vacant(1);
        running(&w);
        let e = w.begin_wait();
        assert_eq!(w.unpark_at(1, Some(e)), Unpark::Noted);
        let _ = w.begin_wait();
        assert_eq!(
            w.commit_park(),
            ParkCommit::Parked,
            "an old wait's wake must not end a new wait"
        );
    }

    #[test]
    fn recycle_bumps_generation() {
        let w = SlotWord::vacant(u32::MAX);
        running(&w);
        w.finish();
        w.recycle();
        let s = w.load();
        assert_eq!(s.state(), State::Vacant);
        assert_eq!(s.generation(), 1, "generation 0 is skipped");
    }
}
