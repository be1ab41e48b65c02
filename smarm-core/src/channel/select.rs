//! `select`: wait on several arms at once and learn which is ready.
//!
//! All arms are registered under one wait epoch. The first wake ends the
//! wait; the wait is then retired (the epoch bumped), so every other arm's
//! registration is stale and its later wake dies at the slot word's CAS:
//! a winner's siblings never produce a spurious wake, and nothing is
//! cancelled. Arms whose staleness is not harmless (fd arms) ask for an
//! eager cleanup pass, run after the wake and on a stop unwind.

use super::{register_epoch, Receiver};
use crate::scheduler;
use crate::slot::Pid;
use std::time::{Duration, Instant};

pub(crate) mod sealed {
    pub trait Sealed {}
}

/// Something [`select`] can wait on: a [`Receiver`] (fd readiness arms
/// arrive with the IO layer). Sealed: registration is part of the
/// runtime's wake protocol.
///
/// An arm is *ready* when receiving from it would not block: a message is
/// queued, or it is closed.
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

impl<T> sealed::Sealed for Receiver<T> {}

impl<T> Selectable for Receiver<T> {
    fn sel_register(&self, pid: Pid, epoch: u32) -> std::io::Result<bool> {
        if !self.taken().is_empty() {
            return Ok(false);
        }
        let mut g = self.inner.lock();
        if !g.queue.is_empty() || g.senders == 0 {
            return Ok(false);
        }
        register_epoch(&mut g, pid, epoch);
        Ok(true)
    }

    fn sel_ready(&self) -> bool {
        self.is_ready()
    }
}

/// Wait until one of `arms` is ready and return its index. Read the message
/// yourself, typically with [`Receiver::try_recv`] on that arm.
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
    wait(arms, Some(crate::time::deadline_after(timeout)))
}

fn wait(arms: &[&dyn Selectable], deadline: Option<Instant>) -> std::io::Result<Option<usize>> {
    assert!(!arms.is_empty(), "smarm: select needs at least one arm");
    let eager = arms.iter().any(|a| a.sel_eager_cleanup());
    loop {
        let (me, epoch) = scheduler::begin_wait("select");
        // Register in priority order; a ready arm ends the pass.
        let mut ready = None;
        for (i, arm) in arms.iter().enumerate() {
            match arm.sel_register(me, epoch) {
                Ok(true) => {}
                Ok(false) => {
                    ready = Some(i);
                    break;
                }
                Err(e) => {
                    unregister(&arms[..i], me, epoch, eager);
                    scheduler::retire_wait();
                    return Err(e);
                }
            }
        }
        if let Some(i) = ready {
            unregister(&arms[..i], me, epoch, eager);
            scheduler::retire_wait();
            return Ok(Some(i));
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            unregister(arms, me, epoch, eager);
            scheduler::retire_wait();
            return Ok(None);
        }
        let timer = deadline.map(|d| crate::time::bounded::arm(d, me, epoch));
        let cleanup = Cleanup {
            arms,
            me,
            epoch,
            armed: eager,
        };
        scheduler::park();
        drop(cleanup);
        drop(timer);
        // End the wait: every sibling registration is now stale, and a
        // wake that raced the one we got is eaten here.
        scheduler::retire_wait();
        if let Some(i) = arms.iter().position(|a| a.sel_ready()) {
            return Ok(Some(i));
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(None);
        }
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

/// Runs the eager cleanup after the park, including when a stop unwinds
/// out of it.
struct Cleanup<'a> {
    arms: &'a [&'a dyn Selectable],
    me: Pid,
    epoch: u32,
    armed: bool,
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        unregister(self.arms, self.me, self.epoch, self.armed);
    }
}
