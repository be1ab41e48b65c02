//! `async_reply`: one value back to a caller that awaits it (a call made
//! with `call_async` from async code): the sender is the server's way
//! back, the receiver a future for any executor.
//!
//! # Invariants
//!
//! - (A1) Each value is delivered once or handed back: `send` stores it
//!   only while the receiver still waits, and a receiver dropped before
//!   the value came makes a later `send` return it (a late reply).
//! - (A2) No lost wake: the receiver stores its waker and the sender
//!   takes it under the same lock as the value.

use crate::channel::ReplyError;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

enum Slot<T> {
    /// The caller waits; its waker, once it polled.
    Waiting(Option<Waker>),
    Full(T),
    /// The sender was dropped unsent.
    Closed,
    /// The caller gave up (A1).
    Gone,
}

/// The sending half of an [`async_reply`]: [`send`](Self::send) the value
/// once, from any thread; dropping it unsent ends the wait with
/// [`ReplyError::Closed`].
pub struct AsyncReplySender<T> {
    slot: Option<Arc<Mutex<Slot<T>>>>,
}

/// The receiving half of an [`async_reply`]: a future of the value, or of
/// [`ReplyError::Closed`] if the sender was dropped unsent. Dropping it
/// makes a later `send` hand the value back.
pub struct AsyncReply<T> {
    slot: Arc<Mutex<Slot<T>>>,
}

/// A single-value reply whose receiver is a future, for callers outside
/// actors (a tokio task, any executor).
///
/// ```
/// let (tx, rx) = smarm::future::async_reply::<u32>();
/// std::thread::spawn(move || tx.send(7));
/// assert_eq!(smarm::future::block_on(rx), Ok(7));
/// ```
pub fn async_reply<T>() -> (AsyncReplySender<T>, AsyncReply<T>) {
    let slot = Arc::new(Mutex::new(Slot::Waiting(None)));
    (
        AsyncReplySender {
            slot: Some(slot.clone()),
        },
        AsyncReply { slot },
    )
}

impl<T> AsyncReplySender<T> {
    /// Deliver the value; handed back if the receiver was dropped (A1).
    pub fn send(mut self, value: T) -> Result<(), T> {
        match self.slot.take() {
            Some(slot) => settle(&slot, Slot::Full(value)).map_err(|back| match back {
                Slot::Full(value) => value,
                _ => unreachable!("settle hands back what it was given"),
            }),
            None => Err(value),
        }
    }

    /// Whether the receiver still waits.
    pub fn is_waited_on(&self) -> bool {
        self.slot
            .as_ref()
            .is_some_and(|s| matches!(*crate::lock::lock_std(s), Slot::Waiting(_)))
    }
}

/// Put `outcome` in a waiting slot and wake its waker (A2), or hand the
/// outcome back if the receiver is gone.
fn settle<T>(slot: &Mutex<Slot<T>>, outcome: Slot<T>) -> Result<(), Slot<T>> {
    let mut s = crate::lock::lock_std(slot);
    let waker = match &mut *s {
        Slot::Waiting(waker) => waker.take(),
        _ => return Err(outcome),
    };
    *s = outcome;
    drop(s);
    if let Some(waker) = waker {
        waker.wake();
    }
    Ok(())
}

impl<T> Drop for AsyncReplySender<T> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            let _ = settle(&slot, Slot::Closed);
        }
    }
}

impl<T> Future for AsyncReply<T> {
    type Output = Result<T, ReplyError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut s = crate::lock::lock_std(&self.slot);
        match &mut *s {
            Slot::Waiting(waker) => {
                if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    *waker = Some(cx.waker().clone()); // (A2)
                }
                Poll::Pending
            }
            Slot::Full(_) => match std::mem::replace(&mut *s, Slot::Gone) {
                Slot::Full(value) => Poll::Ready(Ok(value)),
                _ => unreachable!("matched Full just above"),
            },
            Slot::Closed => Poll::Ready(Err(ReplyError::Closed)),
            Slot::Gone => Poll::Ready(Err(ReplyError::Closed)),
        }
    }
}

impl<T> Drop for AsyncReply<T> {
    fn drop(&mut self) {
        // A value that came is dropped here; a later one is handed back.
        let old = std::mem::replace(&mut *crate::lock::lock_std(&self.slot), Slot::Gone);
        drop(old);
    }
}

impl<T> std::fmt::Debug for AsyncReplySender<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncReplySender")
            .field("waited_on", &self.is_waited_on())
            .finish()
    }
}

impl<T> std::fmt::Debug for AsyncReply<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AsyncReply")
    }
}
