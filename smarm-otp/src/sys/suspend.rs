//! A suspended process's loop, once for every behaviour that reads system
//! requests from its mailbox (gen_server, supervisors, gen_statem), as
//! OTP's `sys:suspend_loop` serves every `proc_lib` behaviour: the
//! behaviour says what a message is ([`Suspendable`]), this loop does the
//! rest.
//!
//! While suspended, a process answers system requests (and a state
//! inspection, and a shutdown request), stops when its parent exits (OTP's
//! `system_terminate`), and keeps every other message, in order, for after
//! [`resume`](super::resume) (D1); a kept message still counts in the
//! process's `mailbox_len`. It waits as any actor waits for a message,
//! with no deadline, so a stop request or the root-exit sweep ends it as
//! it ends any parked actor.
//!
//! (A typed actor's own loop is suspended in place instead: its requests
//! come beside its mailbox, in a lane an interrupt announces, so it keeps
//! what arrives while suspended without a loop of its own.)

use crate::behaviour::{Inbox, StopReason};

/// What a suspended process does with a message from its mailbox.
pub(crate) enum WhileSuspended<M> {
    /// A system request, a state inspection or a shutdown request:
    /// answered now.
    Answer(M),
    /// Its parent exited: stop, for this reason.
    Stop(StopReason),
    /// Anything else: kept for after (D1).
    Keep(M),
}

/// What a behaviour gives the suspended loop.
pub(crate) trait Suspendable {
    /// A message of its mailbox, opened.
    type Msg;
    /// Whether it is still suspended (a request it answered may resume it).
    fn is_suspended(&self) -> bool;
    /// Sort a message received while suspended.
    fn while_suspended(&self, msg: Self::Msg) -> WhileSuspended<Self::Msg>;
    /// Answer a message sorted [`WhileSuspended::Answer`]; `Err` to stop
    /// (a shutdown request, `sys::terminate`).
    fn answer(&mut self, msg: Self::Msg) -> Result<(), StopReason>;
    /// Keep a message for after the suspension, behind those kept before.
    fn keep(&mut self, msg: Self::Msg);
}

/// Serve `process` while it is suspended, reading `inbox` (each message
/// opened by `open`): until it is resumed (`Ok`), or it is to stop
/// (`Err`, with why).
#[cold]
#[inline(never)]
pub(crate) fn suspend_loop<P, E, I>(
    process: &mut P,
    inbox: &I,
    open: fn(E) -> P::Msg,
) -> Result<(), StopReason>
where
    P: Suspendable,
    I: Inbox<E>,
{
    while process.is_suspended() {
        let Ok(msg) = inbox.recv_while_suspended() else {
            return Ok(()); // never: a serving behaviour holds a sender to its mailbox
        };
        match process.while_suspended(open(msg)) {
            WhileSuspended::Answer(msg) => process.answer(msg)?,
            WhileSuspended::Stop(reason) => return Err(reason),
            WhileSuspended::Keep(msg) => process.keep(msg),
        }
    }
    Ok(())
}
