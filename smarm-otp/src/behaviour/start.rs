//! Synchronous starts, shared by every behaviour: spawn the actor (linked
//! to the caller, or not), let it report that it is ready (or why not) on a
//! `Started` channel, and return only then, as Erlang's `proc_lib` starts
//! do. So a started server has run its `init`, a named one is registered,
//! and a supervisor's children are up.

use super::StartError;
use smarm_core::Pid;
use smarm_core::channel::{Sender, channel};

/// Where a starting actor reports `Ok(())` once ready, or its error. If it
/// drops this without reporting (it panicked), the start fails with
/// [`StartError::InitPanicked`].
pub(crate) type Started = Sender<Result<(), StartError>>;

/// Spawn `body` as `builder` says (linked, labelled, limited), hand it
/// its `Started` channel, and wait for its report. What `body` returns is
/// the actor's value (a gen_server's is its `Hibernation`).
pub(crate) fn start<T: Send + 'static>(
    builder: smarm_core::Builder,
    body: impl FnOnce(Started) -> T + Send + 'static,
) -> Result<Pid, StartError> {
    let (started_tx, started) = channel::<Result<(), StartError>>();
    let body = move || body(started_tx);
    let handle = builder.spawn(body)?;
    let pid = handle.pid();
    drop(handle); // detached: its life is its own
    match started.recv() {
        Ok(Ok(())) => Ok(pid),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(StartError::InitPanicked),
    }
}
