//! Timer dispatch: arming timers in the shard of the scheduler an actor
//! runs on, and firing due ones from a scheduler's loop (the busy-path
//! due-check and the timekeeper's wake). The heaps themselves are the
//! `timer` layer's; this is where the schedulers drive them (timer (I4)).

use super::Shared;
use crate::slot::{Pid, Slot, WaitId};
use crate::timer::heap::{Clock, Entry, TimerAction, TimerId};
use std::time::Instant;

/// How late a timer shard's deadline must be before a busy scheduler
/// fires it for the scheduler that owns it (`fire_due_timers`): a quarter
/// of the default timeslice, so a timer waits at most that long behind an
/// owner busy with one long run or blocked in a system call.
const FOREIGN_GRACE_NANOS: u64 = 250_000;

impl Shared {
    /// Arm a timer running `f` on a scheduler at `deadline`, for `owner`.
    pub(crate) fn insert_timer(
        &self,
        deadline: Instant,
        owner: Pid,
        f: Box<dyn FnOnce() + Send>,
        clock: Clock,
    ) -> TimerId {
        self.timers.insert(
            &self.coord,
            self.local_timer_shard(),
            deadline,
            owner,
            TimerAction::Send(f),
            clock,
        )
    }

    /// The timer shard of this thread's scheduler (shard 0 off-scheduler).
    fn local_timer_shard(&self) -> usize {
        self.local_scheduler_id()
            .map_or(0, |id| self.coord.shard_of(id))
    }

    /// Arm the running actor's bounded-wait timer for `wait`, due at `at`
    /// (coordinator nanos; time bounded (B1)), in the timer shard of the
    /// scheduler `scheduler` it runs on.
    pub(crate) fn arm_wait_timer(
        &self,
        scheduler: usize,
        slot: &Slot,
        wait: WaitId,
        at: u64,
        clock: Clock,
    ) {
        self.timers.arm_wait(
            &self.coord,
            self.coord.shard_of(scheduler),
            slot,
            wait,
            at,
            clock,
        );
    }

    /// Pop and dispatch every due timer. `try_only` (the busy path) skips
    /// a shard whose lock another scheduler holds (its deadline stays due,
    /// so the check fires again next loop), and leaves another scheduler's
    /// shard to that scheduler until it is `FOREIGN_GRACE_NANOS` late: its
    /// owner is usually a few pops from its own check, and firing there
    /// keeps the shard's lines and the woken actors on its core (time
    /// (I4)).
    pub(crate) fn fire_due_timers(&self, try_only: bool) {
        let mut due: Vec<Entry> = Vec::new();
        // From an `Instant`, as the deadlines of message timers are: the
        // raw clock runs a hair ahead of those (coordinator `origin`), and
        // no timer fires early (time (I2)).
        let now = self.coord.deadline_nanos(crate::clock::instant());
        let own = self.local_timer_shard();
        for shard in 0..self.coord.timer_shards() {
            let at = self.coord.shard_deadline(shard);
            if at > now || (try_only && shard != own && now - at < FOREIGN_GRACE_NANOS) {
                continue;
            }
            self.timers
                .take_due(&self.coord, shard, now, try_only, &mut due);
        }
        #[cfg(feature = "sim")]
        if self.simulated {
            super::simulated::order_due(&mut due);
        }
        for entry in due {
            trace_event!(self, TimerFire, entry.pid.to_bits(), 0);
            match entry.action {
                TimerAction::Send(fire) => fire(),
                TimerAction::WakeBounded => {
                    if let Some(wait) =
                        crate::timer::bounded::fire(&self.slots, entry.pid, entry.seq)
                    {
                        self.wake(wait);
                    }
                }
            }
        }
    }

    /// Cancel timer `id` (`true` if it was still armed).
    pub(crate) fn cancel_timer(&self, id: TimerId) -> bool {
        self.timers.cancel(&self.coord, id)
    }

    /// Retire every timer (the runtime is finishing).
    pub(crate) fn clear_timers(&self) {
        self.timers.clear(&self.coord);
    }

    /// Release a finished actor's cached wait timer (timer (I3)).
    #[inline]
    pub(super) fn finish_actor_timers(&self, slot: &Slot) {
        self.timers.finish_actor(&self.coord, slot);
    }
}
