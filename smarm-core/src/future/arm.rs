//! [`FutureArm`]: a future as a [`select`](crate::select) arm, beside
//! channels and fds.

use super::waker::Held;
use crate::channel::select::{Selectable, sealed};
use crate::slot::Pid;
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A future that [`select`](crate::select) can wait on beside channels:
/// the arm is ready once the future has completed, and
/// [`take`](Self::take) gives its output. The future is polled on the
/// selecting actor's stack whenever `select` looks at its arms; its waker
/// wakes the select (one record per arm, reused across selects). It stays
/// with the actor that made it (`!Send`): its waker names that actor.
///
/// ```
/// use smarm::future::FutureArm;
/// use std::time::Duration;
///
/// smarm::run(|| {
///     let (tx, rx) = smarm::channel::<&str>();
///     let (done_tx, done_rx) = std::sync::mpsc::channel::<std::task::Waker>();
///     let ready = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
///     let r = ready.clone();
///     let arm = FutureArm::new(std::future::poll_fn(move |cx| {
///         if r.load(std::sync::atomic::Ordering::Acquire) {
///             return std::task::Poll::Ready(7);
///         }
///         let _ = done_tx.send(cx.waker().clone());
///         std::task::Poll::Pending
///     }));
///     let waker = std::thread::spawn(move || {
///         let w = done_rx.recv().unwrap();
///         ready.store(true, std::sync::atomic::Ordering::Release);
///         w.wake();
///     });
///     assert_eq!(smarm::select(&[&rx, &arm]), 1, "the future finished first");
///     assert_eq!(arm.take(), Some(7));
///     waker.join().unwrap();
///     drop(tx);
/// });
/// ```
pub struct FutureArm<F: Future> {
    state: RefCell<ArmState<F>>,
    record: RefCell<Option<Held>>,
    /// Selected by the actor that made it: its waker names that actor.
    _not_send: std::marker::PhantomData<*const ()>,
}

enum ArmState<F: Future> {
    Pending(Pin<Box<F>>),
    Ready(F::Output),
    Taken,
}

impl<F: Future> FutureArm<F> {
    /// An arm over `future` (polled only from `select` or `take`).
    pub fn new(future: F) -> FutureArm<F> {
        FutureArm {
            state: RefCell::new(ArmState::Pending(Box::pin(future))),
            record: RefCell::new(None),
            _not_send: std::marker::PhantomData,
        }
    }

    /// The future's output, once it has completed (the arm was selected);
    /// `None` before, and after it was taken.
    pub fn take(&self) -> Option<F::Output> {
        let mut state = self.state.borrow_mut();
        match std::mem::replace(&mut *state, ArmState::Taken) {
            ArmState::Ready(output) => Some(output),
            other => {
                *state = other;
                None
            }
        }
    }

    /// Poll the future once if it is pending, with this arm's waker armed
    /// for `epoch` (a select's wait) or not armed (`None`, a look).
    /// Returns whether the arm is ready.
    fn poll_arm(&self, pid: Option<Pid>, epoch: Option<u32>) -> bool {
        let mut state = self.state.borrow_mut();
        let ArmState::Pending(future) = &mut *state else {
            return matches!(*state, ArmState::Ready(_));
        };
        let mut record = self.record.borrow_mut();
        let held = match &mut *record {
            Some(held) => held,
            None => {
                let Some(pid) = pid.or_else(crate::scheduler::current_pid) else {
                    return false; // not on an actor: only `select` polls it
                };
                let taken = crate::scheduler::with_worker(|_, shared| Held::take(pid, shared));
                match taken {
                    Some(held) => record.insert(held),
                    None => return false,
                }
            }
        };
        held.cell().begin_poll();
        if let Some(epoch) = epoch {
            // Armed before the poll: a wake during it goes to the wait.
            let _ = held.cell().arm(epoch);
        }
        let waker = held.waker();
        let mut cx = Context::from_waker(&waker);
        match super::block_on::poll_once(future.as_mut(), &mut cx) {
            Poll::Ready(output) => {
                *state = ArmState::Ready(output);
                true
            }
            Poll::Pending => false,
        }
    }
}

impl<F: Future> sealed::Sealed for FutureArm<F> {}

impl<F: Future> Selectable for FutureArm<F> {
    fn sel_register(&self, pid: Pid, epoch: u32) -> std::io::Result<bool> {
        Ok(!self.poll_arm(Some(pid), Some(epoch)))
    }

    fn sel_ready(&self) -> bool {
        self.poll_arm(None, None)
    }
}

impl<F: Future> std::fmt::Debug for FutureArm<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ready = matches!(*self.state.borrow(), ArmState::Ready(_));
        f.debug_struct("FutureArm").field("ready", &ready).finish()
    }
}
