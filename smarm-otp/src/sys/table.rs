//! How a runtime's behaviours are reached by pid: a table from each
//! running behaviour's pid to the way into its mailbox, kept until it
//! exits, however it exits.

use super::{Request, System};
use crate::behaviour::{CallError, DEFAULT_CALL_TIMEOUT, Reply};
use smarm_core::Pid;
use std::collections::HashMap;
use std::sync::Mutex;

/// How each running behaviour of a runtime is reached by pid.
#[derive(Default)]
struct Table(Mutex<HashMap<Pid, Deliver>>);

/// Puts a request in a behaviour's mailbox. A request that cannot be put
/// there is dropped, and with it its reply slot: the caller sees the
/// process down.
pub(crate) type Deliver = std::sync::Arc<dyn Fn(Request) + Send + Sync>;

fn with_table<R>(f: impl FnOnce(&mut HashMap<Pid, Deliver>) -> R) -> R {
    smarm_core::runtime::with_runtime_local::<Table, R>(|table, _| {
        f(&mut table.0.lock().unwrap_or_else(|e| e.into_inner()))
    })
}

/// A behaviour serves as `pid` (the calling actor, or one it just
/// spawned): reachable by pid through `deliver` until it exits, however it
/// exits.
pub(crate) fn note(pid: Pid, deliver: Deliver) {
    with_table(|t| t.insert(pid, deliver));
    let hooked = smarm_core::signal::on_exit(pid, move |pid, _| {
        with_table(|t| t.remove(&pid));
    });
    if !hooked {
        // It exited already: no hook would ever remove the entry.
        let gone = with_table(|t| t.remove(&pid));
        drop(gone); // outside the table's lock
    }
}

/// Any process by its pid, typed or not (a typed actor's `Pid<M>`).
impl<A> System for Pid<A> {
    fn system_call<R: Send + 'static>(
        &self,
        what: &'static str,
        request: impl FnOnce(Reply<R>) -> Request,
    ) -> Result<R, CallError> {
        let pid = self.erase();
        crate::behaviour::call_to(
            what,
            || Some(pid),
            request,
            |req| {
                // Sent outside the table's lock.
                match with_table(|t| t.get(&pid).cloned()) {
                    Some(deliver) => {
                        deliver(req);
                        Ok(())
                    }
                    None => Err(req),
                }
            },
            DEFAULT_CALL_TIMEOUT,
        )
    }
}

/// A process by its registered name (a gen_server's `ServerName`, a
/// gen_statem's `StatemName`, any `Name<M>`), as OTP's `sys` takes a
/// registered name: whoever holds it when the request is made. A name no
/// one holds: [`CallError::ServerDown`].
impl<M> System for crate::registry::Name<M> {
    fn system_call<R: Send + 'static>(
        &self,
        what: &'static str,
        request: impl FnOnce(Reply<R>) -> Request,
    ) -> Result<R, CallError> {
        by_name(self.as_str(), what, request)
    }
}

/// A process by the text of its registered name (`sys::get_status(&"code-lock")`).
impl System for &str {
    fn system_call<R: Send + 'static>(
        &self,
        what: &'static str,
        request: impl FnOnce(Reply<R>) -> Request,
    ) -> Result<R, CallError> {
        by_name(self, what, request)
    }
}

fn by_name<R: Send + 'static>(
    name: &str,
    what: &'static str,
    request: impl FnOnce(Reply<R>) -> Request,
) -> Result<R, CallError> {
    smarm_core::require_actor(what);
    match crate::registry::whereis(name) {
        Some(pid) => pid.system_call(what, request),
        None => Err(CallError::ServerDown),
    }
}
