//! `select`: wait on several arms at once and learn which is ready.
//!
//! All arms are registered under one wait. The first wake ends it, and
//! the next wait opens a new epoch, so every other arm's registration is
//! stale and its later wake dies at the slot word's CAS: a winner's
//! siblings never wake a later wait, and nothing is cancelled. Arms whose staleness is not harmless (fd arms) ask for an
//! eager cleanup pass, run after the wake and on a stop unwind.

use crate::scheduler::WaitingOn;
use crate::scheduler::{self, BoundedWaiter, Deadline, Registered, Wait};
use crate::slot::{Pid, WaitId};
use std::time::{Duration, Instant};

pub(crate) mod sealed {
    pub trait Sealed {}
}

/// Something [`select`] can wait on: a [`Receiver`](crate::Receiver), or an
/// [`FdArm`](crate::io::FdArm) (a file descriptor's readiness). Sealed:
/// registration is part of the runtime's wake protocol.
///
/// A channel arm is *ready* when receiving from it would not block: a
/// message is queued, or it is closed; an fd arm when the fd is readable
/// (or writable), hung up or in error.
pub trait Selectable: sealed::Sealed {
    /// Under the arm's own lock: if ready, `Ok(false)` and register
    /// nothing; otherwise register `(pid, epoch)` with its wakers and
    /// return `Ok(true)`. `Err` if the arm cannot be registered.
    #[doc(hidden)]
    fn sel_register(&self, pid: Pid, epoch: u32) -> std::io::Result<bool>;
    /// Whether the arm is ready now.
    #[doc(hidden)]
    fn sel_ready(&self) -> bool;
    /// Remove `(pid, epoch)`'s registration if it is still in place. Only
    /// arms that ask for eager cleanup need it.
    #[doc(hidden)]
    fn sel_unregister(&self, _pid: Pid, _epoch: u32) {}
    /// Whether a stale registration of this arm must be removed eagerly.
    #[doc(hidden)]
    fn sel_eager_cleanup(&self) -> bool {
        false
    }
}

/// Wait until one of `arms` is ready and return its index. Read the message
/// yourself, typically with [`Receiver::try_recv`](crate::Receiver::try_recv) on that arm.
///
/// Arms are checked in order, index 0 first, both at once and after a
/// wake: put a control channel first and it is always seen promptly. There
/// is no fairness promise: a busy arm 0 can starve arm 1. A closed arm is
/// ready forever, so stop passing it once you have seen it close.
///
/// ```
/// use smarm::{channel, select, spawn};
///
/// smarm::run(|| {
///     let (ctl_tx, ctl_rx) = channel::<&str>();
///     let (data_tx, data_rx) = channel::<u32>();
///     spawn(move || {
///         data_tx.send(1).unwrap();
///         data_tx.send(2).unwrap();
///         ctl_tx.send("stop").unwrap();
///     });
///     let mut sum = 0;
///     loop {
///         match select(&[&ctl_rx, &data_rx]) {
///             0 => break, // control first
///             _ => sum += data_rx.try_recv().unwrap().unwrap(),
///         }
///     }
///     // Control won as soon as it was ready, even with data queued.
///     assert!(sum <= 3);
/// });
/// ```
///
/// # Panics
///
/// If `arms` is empty, outside an actor, or if an arm fails to register
/// (see [`try_select`]; channel arms never fail).
pub fn select(arms: &[&dyn Selectable]) -> usize {
    match try_select(arms) {
        Ok(i) => i,
        Err(e) => panic!("smarm: select: an arm failed to register: {e}"),
    }
}

/// [`select`], returning an arm's registration failure as `Err`. On `Err`
/// no registration is left behind.
pub fn try_select(arms: &[&dyn Selectable]) -> std::io::Result<usize> {
    match wait(arms, None)? {
        Some(i) => Ok(i),
        None => unreachable!("a select without a deadline returned without a ready arm"),
    }
}

/// [`select`] with a deadline: `None` if no arm became ready within
/// `timeout`. An arm that becomes ready as the deadline passes wins.
///
/// ```
/// use std::time::Duration;
///
/// smarm::run(|| {
///     let (_tx, rx) = smarm::channel::<u32>();
///     assert_eq!(smarm::select_timeout(&[&rx], Duration::from_millis(5)), None);
/// });
/// ```
///
/// # Panics
///
/// As [`select`].
pub fn select_timeout(arms: &[&dyn Selectable], timeout: Duration) -> Option<usize> {
    match try_select_timeout(arms, timeout) {
        Ok(r) => r,
        Err(e) => panic!("smarm: select_timeout: an arm failed to register: {e}"),
    }
}

/// [`select_timeout`], returning an arm's registration failure as `Err`.
pub fn try_select_timeout(
    arms: &[&dyn Selectable],
    timeout: Duration,
) -> std::io::Result<Option<usize>> {
    // No deadline past any clock: such a select waits like `select`.
    wait(arms, crate::clock::instant().checked_add(timeout))
}

fn wait(arms: &[&dyn Selectable], deadline: Option<Instant>) -> std::io::Result<Option<usize>> {
    assert!(!arms.is_empty(), "smarm: select needs at least one arm");
    let eager = arms.iter().any(|a| a.sel_eager_cleanup());
    // An fd registration is counted until removed: with one, the select is
    // a section (an actor ended mid-way would leave it counted forever).
    let _section = eager.then(scheduler::Section::enter);
    let mut waiter = Select {
        arms,
        eager,
        deadline,
        registered_once: false,
    };
    scheduler::bounded_wait("select", &mut waiter, deadline.map(Deadline::At), false)
}

/// `select`'s side of the bounded-wait loop. The first pass learns which
/// arm is ready by registering them in priority order (an arm that cannot
/// register is an error, not a ready arm); later passes look with
/// `sel_ready`.
struct Select<'a> {
    arms: &'a [&'a dyn Selectable],
    /// Some arm's stale registration must be removed eagerly.
    eager: bool,
    deadline: Option<Instant>,
    registered_once: bool,
}

impl BoundedWaiter for Select<'_> {
    const WAITS_ON: WaitingOn = WaitingOn::Select;
    type Output = std::io::Result<Option<usize>>;

    fn ready(&mut self) -> Option<Self::Output> {
        if !self.registered_once {
            return None;
        }
        self.arms
            .iter()
            .position(|a| a.sel_ready())
            .map(|i| Ok(Some(i)))
    }

    fn timed_out(&mut self) -> Option<Self::Output> {
        Some(Ok(None))
    }

    fn register(&mut self, wait: &Wait) -> Registered<Self::Output> {
        self.registered_once = true;
        let WaitId { pid, epoch } = wait.id();
        for (i, arm) in self.arms.iter().enumerate() {
            match arm.sel_register(pid, epoch) {
                Ok(true) => {}
                Ok(false) => {
                    unregister(&self.arms[..i], pid, epoch, self.eager);
                    return Registered::Done(Ok(Some(i)));
                }
                Err(e) => {
                    unregister(&self.arms[..i], pid, epoch, self.eager);
                    return Registered::Done(Err(e));
                }
            }
        }
        if self.deadline.is_some_and(|d| crate::clock::instant() >= d) {
            unregister(self.arms, pid, epoch, self.eager);
            return Registered::Done(Ok(None));
        }
        Registered::Yes
    }

    const UNREGISTERS: bool = true;

    fn unregister(&mut self, wait: WaitId) {
        unregister(self.arms, wait.pid, wait.epoch, self.eager);
    }
}

fn unregister(arms: &[&dyn Selectable], me: Pid, epoch: u32, eager: bool) {
    if eager {
        for arm in arms {
            if arm.sel_eager_cleanup() {
                arm.sel_unregister(me, epoch);
            }
        }
    }
}
