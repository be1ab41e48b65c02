//! A suspended process's loop, once for every behaviour (gen_server,
//! supervisors, gen_statem, typed actors), as OTP's `sys:suspend_loop`
//! serves every `proc_lib` behaviour: the behaviour says what a message is
//! and where the next one comes from ([`Suspendable`]), this loop does the
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
//! A gen_server's or gen_statem's system requests are messages of its
//! mailbox; a typed actor's come beside it, in a lane an interrupt
//! announces (`typed.rs`), and its `next` reads both.

use crate::behaviour::StopReason;

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

/// Serve `process` while it is suspended, taking each message from
/// `next` (`None`: its mailbox closed, which a serving behaviour, holding
/// a sender to it, never sees): until it is resumed (`Ok`), or it is to
/// stop (`Err`, with why).
#[cold]
#[inline(never)]
pub(crate) fn suspend_loop<P: Suspendable>(
    process: &mut P,
    mut next: impl FnMut() -> Option<P::Msg>,
) -> Result<(), StopReason> {
    while process.is_suspended() {
        let Some(msg) = next() else {
            return Ok(());
        };
        match process.while_suspended(msg) {
            WhileSuspended::Answer(msg) => process.answer(msg)?,
            WhileSuspended::Stop(reason) => return Err(reason),
            WhileSuspended::Keep(msg) => process.keep(msg),
        }
    }
    Ok(())
}
