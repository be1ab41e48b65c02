//! The channel's errors: a send to a gone receiver, a receive on a closed
//! channel, a receive that timed out.

use thiserror::Error;

/// [`Sender::send`](crate::channel::Sender::send) failed because the [`Receiver`](crate::channel::Receiver) is gone. The message
/// comes back in `.0`.
#[derive(Debug, PartialEq, Eq, Clone, Copy, Error)]
#[error("smarm: send on a channel whose receiver is gone")]
pub struct SendError<T>(pub T);

/// The channel is closed: every [`Sender`](crate::channel::Sender) is gone and nothing is queued.
#[derive(Debug, PartialEq, Eq, Clone, Copy, Error)]
#[error("smarm: receive on a closed channel (every sender is gone)")]
pub struct RecvError;

/// Why [`Receiver::recv_timeout`](crate::channel::Receiver::recv_timeout) returned without a message.
#[derive(Debug, PartialEq, Eq, Clone, Copy, Error)]
pub enum RecvTimeoutError {
    /// The deadline passed with no message.
    #[error("smarm: receive timed out")]
    Timeout,
    /// Every sender is gone and nothing is queued.
    #[error("smarm: receive on a closed channel (every sender is gone)")]
    Disconnected,
}
