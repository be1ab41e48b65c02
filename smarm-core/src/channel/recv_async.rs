//! A receiver from async code: the future of `Receiver::recv_async` and
//! the receiver as a `Stream`, both over `Receiver::poll_recv`.

use super::mpsc::{Receiver, RecvError};
use super::timed::Taking;
use std::task::{Context, Poll};

/// The future of [`Receiver::recv_async`]. Dropped before its message
/// came, it leaves no waker registered.
#[must_use = "a receive future does nothing until awaited"]
pub struct RecvAsync<'a, T> {
    rx: &'a mut Receiver<T>,
    registered: bool,
}

impl<'a, T> RecvAsync<'a, T> {
    pub(super) fn new(rx: &'a mut Receiver<T>) -> Self {
        RecvAsync {
            rx,
            registered: false,
        }
    }
}

impl<T> std::future::Future for RecvAsync<'_, T> {
    type Output = Result<T, RecvError>;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let polled = self.rx.poll_recv(cx);
        self.registered = polled.is_pending();
        polled
    }
}

impl<T> Drop for RecvAsync<'_, T> {
    fn drop(&mut self) {
        if self.registered {
            // The one receiver's registration (I1): this future's.
            let waker = self.rx.chan().lock().waker.take();
            drop(waker);
        }
    }
}

impl<T> std::fmt::Debug for RecvAsync<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RecvAsync")
    }
}

// A receiver's messages are never pinned (no pin projection): it may move
// while a stream of it is polled.
impl<T> Unpin for Receiver<T> {}

/// The messages of a channel as a stream, ending when every sender is gone
/// and nothing is queued.
impl<T> futures_core::Stream for Receiver<T> {
    type Item = T;

    fn poll_next(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.get_mut().poll_recv(cx).map(Result::ok)
    }
}
