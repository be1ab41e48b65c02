//! The actor layer's part of an actor's finalisation (the scheduler's
//! `ExitHook`): its outcome, its joiner, its monitors and links, and the
//! recycling of its slot.

use super::Outcome;
use crate::scheduler::{HeapLimitKilled, Overflowed};
use crate::scheduler::{Shared, StopSignal};
use crate::slot::{DownReason, Pid, Slot};

/// Finish the exit of `pid` (its slot already `Done`, its stack released),
/// whose closure ended with `result`. Every wake made here happens before
/// the scheduler counts the actor out of the live set (runtime (I2)).
pub(crate) fn exit_hook(
    shared: &Shared,
    pid: Pid,
    slot: &Slot,
    result: std::thread::Result<crate::slot::table::Value>,
) {
    let (outcome, heap_limit) = outcome_of(shared, pid, result);
    let (joiner, recycle, dropped, notify, crash) = record_exit(pid, slot, outcome, heap_limit);
    if let Some(crash) = crash {
        (*crash).emit();
    }
    // Monitors and links learn of the exit before the actor stops counting
    // as live (runtime (I2)): their sends are wakes this finalisation makes.
    if let Some((reason, signals)) = notify {
        crate::signal::notify_exit(shared, pid, reason, *signals);
    }
    match joiner {
        Some(crate::slot::Joiner::Wait(wait)) => shared.wake(wait),
        Some(crate::slot::Joiner::Task(waker)) => waker.wake(),
        None => {}
    }
    if recycle {
        slot.word.recycle();
        shared.slots.release(pid.index());
    }
    // A detached actor's panic payload is dropped here, on the scheduler
    // stack, before the actor stops counting as live.
    drop(dropped);
}

/// The outcome of an actor whose closure ended with `result`, and the heap
/// limit it crossed with whether it was ended at an allocation (its
/// destructors not run) rather than unwound.
#[inline(always)]
fn outcome_of(
    shared: &Shared,
    pid: Pid,
    result: std::thread::Result<crate::slot::table::Value>,
) -> (Outcome, Option<(u64, bool)>) {
    // The heap limit the actor crossed, and whether it was ended at an
    // allocation (its destructors not run) rather than unwound.
    let mut heap_limit = None;
    let outcome = match result {
        Ok(value) => Outcome::Exit(value),
        Err(payload) if payload.is::<StopSignal>() => match heap_limit_crossed(shared, pid) {
            Some(limit) => {
                heap_limit = Some((limit, false));
                Outcome::Ended(DownReason::HeapLimit)
            }
            None => Outcome::Stopped,
        },
        Err(payload) if payload.is::<Overflowed>() => Outcome::Ended(DownReason::StackOverflow),
        Err(payload) if payload.is::<HeapLimitKilled>() => {
            heap_limit = Some((heap_limit_crossed(shared, pid).unwrap_or(0), true));
            Outcome::Ended(DownReason::HeapLimit)
        }
        Err(payload) => match payload.downcast::<super::ExitWith>() {
            Ok(exit) => Outcome::Ended(exit.0),
            Err(payload) => Outcome::Panic(payload),
        },
    };
    (outcome, heap_limit)
}

/// What the exit leaves to do, decided under the slot's cold lock: the
/// joiner to wake, whether to recycle the slot, an outcome to drop (nobody
/// will join), the monitors and links to notify, and a crash report.
#[inline(always)]
fn record_exit(
    pid: Pid,
    slot: &Slot,
    outcome: Outcome,
    heap_limit: Option<(u64, bool)>,
) -> ExitTail {
    let mut cold = slot.cold.lock();
    let joiner = cold.joiner.take();
    let mut signals = crate::signal::take_signals(&mut cold);
    // A panic is reported once, here (report (R2)); emitted after the
    // lock is released (the names come from the layer above).
    let crash = match &outcome {
        Outcome::Panic(payload) => Some(crash_report(
            pid,
            slot,
            signals.as_deref(),
            DownReason::Panic,
            super::outcome::panic_message(payload.as_ref()),
        )),
        Outcome::Ended(DownReason::HeapLimit) => Some(crash_report(
            pid,
            slot,
            signals.as_deref(),
            DownReason::HeapLimit,
            heap_limit_message(heap_limit),
        )),
        _ => None,
    };
    // A stop caused by a linked actor's exit is that exit's reason.
    let outcome = match (outcome, signals.as_mut().and_then(|s| s.kill_reason.take())) {
        (Outcome::Stopped, Some(reason)) => Outcome::Ended(reason),
        (outcome, _) => outcome,
    };
    // The reason is needed only by monitors and links (most actors
    // have none).
    let notify = signals.map(|s| (DownReason::of(&outcome), s));
    if cold.handle_alive {
        cold.outcome = Some(outcome);
        (joiner, false, None, notify, crash)
    } else {
        cold.handle_alive = true; // ready for the next tenant
        (joiner, true, Some(outcome), notify, crash)
    }
}

/// [`record_exit`]'s verdict: joiner, recycle, dropped outcome, notices,
/// crash report.
type ExitTail = (
    Option<crate::slot::Joiner>,
    bool,
    Option<Outcome>,
    Option<(DownReason, Box<crate::signal::Signals>)>,
    Option<Box<Crash>>,
);

/// What a crash report says of a heap-limit stop: the limit, and whether
/// the actor unwound or was ended at an allocation.
#[cold]
fn heap_limit_message(crossed: Option<(u64, bool)>) -> String {
    let (limit, abandoned) = crossed.unwrap_or((0, false));
    let mut message = format!("its heap grew past its limit of {limit} bytes (max_heap_size)");
    if abandoned {
        message.push_str(
            "; it allocated on for a whole timeslice without a blocking call, so it was ended \
             at an allocation: its destructors did not run and what it held is leaked",
        );
    }
    message
}

/// The heap limit `pid` crossed (which stopped it), if it did.
#[inline]
fn heap_limit_crossed(shared: &Shared, pid: Pid) -> Option<u64> {
    let account = shared.accounts.as_ref()?.cell(pid.index())?;
    account.tripped().then(|| account.limit()).flatten()
}

/// What a crash report needs from the finalising actor's slot, taken under
/// its cold lock (kept out of line and boxed: most exits are not panics).
struct Crash {
    reason: DownReason,
    pid: Pid,
    label: Option<String>,
    parent: Option<Pid>,
    message: String,
    last_message: Option<String>,
}

#[cold]
#[inline(never)]
fn crash_report(
    pid: Pid,
    slot: &Slot,
    signals: Option<&crate::signal::Signals>,
    reason: DownReason,
    message: String,
) -> Box<Crash> {
    let parent = match slot.parent.load(std::sync::atomic::Ordering::Relaxed) {
        0 => None,
        bits => Some(Pid::from_bits(bits)),
    };
    Box::new(Crash {
        pid,
        label: signals.and_then(|s| s.label.clone()),
        parent,
        reason,
        message,
        last_message: signals.and_then(|s| s.last_message.clone()),
    })
}

impl Crash {
    /// Emit the report (no lock held: the names come from the layer above).
    #[cold]
    fn emit(self) {
        let names = super::extras::names_of(self.pid);
        crate::report::actor_crashed(crate::report::Crashed {
            reason: self.reason,
            pid: self.pid,
            label: self.label,
            names,
            parent: self.parent,
            message: self.message,
            last_message: self.last_message,
        });
    }
}
