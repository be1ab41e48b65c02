//! How an actor finished, and the error `join` reports for a panic.

use std::any::Any;
use std::fmt;
use thiserror::Error;

/// The actor panicked. Returned by [`JoinHandle::join`](crate::JoinHandle::join);
/// `payload` is exactly what the panic carried, as with
/// [`std::thread::JoinHandle::join`].
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
#[error("the actor panicked: {}", panic_message(.payload.as_ref()))]
pub struct JoinError {
    /// The panic payload (usually a `&'static str` or a `String`).
    pub payload: Box<dyn Any + Send>,
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
    } else if let Some(k) = payload.downcast_ref::<crate::signal::Killed>() {
        k.to_string()
    } else {
        "<non-string panic payload>".to_string()
    }
}
