//! How an actor finished, and the error `join` reports for a panic.

use std::any::Any;
use std::fmt;
use thiserror::Error;

/// The actor panicked, or ended for another abnormal reason. Returned by
/// [`JoinHandle::join`](crate::JoinHandle::join). For a panic, `payload`
/// is exactly what the panic carried, as with
/// [`std::thread::JoinHandle::join`]; for any other end (killed by a link,
/// a stack overflow, [`exit_with`](crate::exit_with)) it is a
/// [`Ended`](crate::Ended) naming the [`reason`](JoinError::reason).
///
/// ```
/// smarm::run(|| {
///     let h = smarm::spawn(|| panic!("boom"));
///     let err = h.join().unwrap_err();
///     assert_eq!(err.payload.downcast_ref::<&str>(), Some(&"boom"));
///     assert_eq!(err.to_string(), "the actor panicked: boom");
/// });
/// ```
#[derive(Error)]
#[error("{}", describe(.payload.as_ref()))]
pub struct JoinError {
    /// The panic payload (usually a `&'static str` or a `String`).
    pub payload: Box<dyn Any + Send>,
}

impl JoinError {
    /// Why the actor went down: [`DownReason::Panic`](crate::DownReason::Panic)
    /// for a panic, else the reason it ended with.
    ///
    /// ```
    /// smarm::run(|| {
    ///     let h = smarm::spawn(|| smarm::exit_with("done early"));
    ///     let err = h.join().unwrap_err();
    ///     assert_eq!(err.reason(), smarm::DownReason::Custom("done early".into()));
    ///     assert_eq!(err.to_string(), "the actor exited: done early");
    /// });
    /// ```
    pub fn reason(&self) -> crate::DownReason {
        match self.payload.downcast_ref::<crate::signal::Ended>() {
            Some(k) => k.reason.clone(),
            None => crate::DownReason::Panic,
        }
    }
}

/// "the actor panicked: <message>", or what ended it.
fn describe(payload: &(dyn Any + Send)) -> String {
    match payload.downcast_ref::<crate::signal::Ended>() {
        Some(k) => k.to_string(),
        None => format!("the actor panicked: {}", panic_message(payload)),
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinError")
            .field("message", &panic_message(self.payload.as_ref()))
            .finish()
    }
}

/// The message of a panic payload, when it is a string.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(k) = payload.downcast_ref::<crate::signal::Ended>() {
        k.to_string()
    } else {
        "<non-string panic payload>".to_string()
    }
}
