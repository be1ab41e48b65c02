//! Sending by name and by pid, at once or after a delay.

use super::{Name, ReadSide, SendError, with_read_side, with_tables, with_tables_of};
use smarm_core::channel::Sender;
use smarm_core::time;
use smarm_core::time::TimerId;
use smarm_core::{Addressable, Pid};
use std::time::Duration;

/// Send `msg` to whichever live actor holds `name` now: a lock-free
/// lookup and the channel send itself (no allocation, no sender clone).
pub fn send<M: Send + 'static>(name: Name<M>, msg: M) -> Result<(), SendError<M>> {
    // ReadSide path (I4): a bound name's holder is alive until its exit hook
    // unbinds it, so only a failed send needs the liveness check.
    let msg =
        match with_read_side(
            |read_side, _| match read_side.name(name.as_str(), name.hash()) {
                None => Ok(Err(SendError::Unresolved(msg))),
                Some(bound) => {
                    let sent = match bound.sender::<M>() {
                        Some(tx) => tx.send(msg).map_err(|e| e.0),
                        None => deliver_to(bound.inbox(), msg).map_err(SendError::into_inner),
                    };
                    sent.map(Ok)
                }
            },
        ) {
            Ok(sent) => return sent,
            Err(msg) => msg,
        };
    with_tables(|t| match t.holder(name.as_str()) {
        Some(pid) => deliver(t.read_side, pid, msg),
        None => Err(SendError::Unresolved(msg)),
    })
}

/// Send `msg` to exactly the actor `pid` names; `Dead` once that
/// incarnation is gone, even if its slot now holds another actor.
pub fn send_to<A: Addressable>(pid: Pid<A>, msg: A::Msg) -> Result<(), SendError<A::Msg>> {
    send_dyn(pid.erase(), msg)
}

/// [`send_to`] without the address type: the untyped escape hatch.
pub fn send_dyn<M: Send + 'static>(pid: Pid, msg: M) -> Result<(), SendError<M>> {
    with_read_side(|read_side, rt| {
        // ReadSide path (I4): an inbox still published is its live owner's.
        let msg = match deliver(read_side, pid, msg) {
            Ok(()) => return Ok(()),
            Err(e) => e.into_inner(),
        };
        if !rt.is_alive(pid) {
            return Err(SendError::Dead(msg));
        }
        deliver(read_side, pid, msg)
    })
}

/// [`send`] from outside the runtime (a tokio task, a plain thread): to
/// whichever live actor of `rt` holds `name` now. The lookup takes the
/// registry lock; the send happens after it, and on a full bounded
/// mailbox blocks the calling thread until there is room (from async code
/// use [`resolve_in`] and `Sender::send_async`).
pub fn send_in<M: Send + 'static>(
    rt: &smarm_core::runtime::RuntimeHandle,
    name: Name<M>,
    msg: M,
) -> Result<(), SendError<M>> {
    match resolve_in(rt, name) {
        Some((_, tx)) => tx.send(msg).map_err(|e| SendError::Closed(e.0)),
        None => Err(SendError::Unresolved(msg)),
    }
}

/// The live holder of `name` in `rt` and a clone of its sender for `M`,
/// from outside the runtime.
pub fn resolve_in<M: Send + 'static>(
    rt: &smarm_core::runtime::RuntimeHandle,
    name: Name<M>,
) -> Option<(Pid, Sender<M>)> {
    let (pid, tx) = with_tables_of(rt, |t, read_side| {
        let pid = t.by_name.get(name.as_str())?.pid;
        let tx = read_side
            .inbox(pid.index())
            .filter(|i| i.pid == pid)?
            .sender::<M>()?
            .clone();
        Some((pid, tx))
    })?;
    rt.is_alive(pid).then_some((pid, tx))
}

/// The live holder of `name` and a clone of its sender for `M`: how
/// `gen_server` rebuilds a typed server address from a name.
pub(crate) fn resolve_sender<M: Send + 'static>(name: Name<M>) -> Option<(Pid, Sender<M>)> {
    with_tables(|t| {
        let pid = t.holder(name.as_str())?;
        let tx = t.live_inbox(pid)?.sender::<M>()?.clone();
        Some((pid, tx))
    })
}

/// Send on `pid`'s channel for `M` (the channel's lock is the only lock
/// taken; the wake it may make takes only run-queue locks).
fn deliver<M: Send + 'static>(read_side: &ReadSide, pid: Pid, msg: M) -> Result<(), SendError<M>> {
    deliver_to(read_side.inbox(pid.index()).filter(|i| i.pid == pid), msg)
}

/// Send on `inbox`'s channel for `M`.
fn deliver_to<M: Send + 'static>(
    inbox: Option<&super::read_side::Inbox>,
    msg: M,
) -> Result<(), SendError<M>> {
    match inbox.and_then(|i| i.sender::<M>()) {
        Some(tx) => tx.send(msg).map_err(|e| SendError::Closed(e.0)),
        None => Err(SendError::NoChannel(msg)),
    }
}

/// Deliver `msg` to `pid` after `after` (Erlang's `erlang:send_after`).
/// Resolved when the timer fires: if that incarnation is gone by then, the
/// message is dropped. Cancel with [`cancel_timer`](smarm_core::time::cancel_timer).
///
/// ```
/// use smarm::{send_after, spawn_addr, Addressable};
/// use std::time::Duration;
///
/// struct Alarm;
/// impl Addressable for Alarm {
///     type Msg = &'static str;
/// }
///
/// smarm::run(|| {
///     let (tx, rx) = smarm::channel();
///     let alarm = spawn_addr::<Alarm>(move |inbox| tx.send(inbox.recv().unwrap()).unwrap());
///     send_after(Duration::from_millis(5), alarm, "wake up");
///     assert_eq!(rx.recv().unwrap(), "wake up");
/// });
/// ```
///
/// # Panics
///
/// Outside an actor.
pub fn send_after<A: Addressable>(after: Duration, pid: Pid<A>, msg: A::Msg) -> TimerId {
    time::call_after(after, move || {
        let _ = send_to(pid, msg); // a dead target: dropped
    })
}

/// [`send_after`] on the wall clock: under causal profiling (feature
/// `smarm-causal`) the timer keeps real time instead of waiting out the
/// delay a profile inserts (for a deadline the outside world sets: a
/// protocol timeout, a schedule by the clock); without the feature it is
/// [`send_after`].
///
/// ```
/// use smarm::{send_after_wall, spawn_addr, Addressable};
/// use std::time::Duration;
///
/// struct Alarm;
/// impl Addressable for Alarm {
///     type Msg = &'static str;
/// }
///
/// smarm::run(|| {
///     let (tx, rx) = smarm::channel();
///     let alarm = spawn_addr::<Alarm>(move |inbox| tx.send(inbox.recv().unwrap()).unwrap());
///     send_after_wall(Duration::from_millis(5), alarm, "time is up");
///     assert_eq!(rx.recv().unwrap(), "time is up");
/// });
/// ```
///
/// # Panics
///
/// Outside an actor.
pub fn send_after_wall<A: Addressable>(after: Duration, pid: Pid<A>, msg: A::Msg) -> TimerId {
    time::call_after_wall(after, move || {
        let _ = send_to(pid, msg);
    })
}

/// Deliver `msg` to whoever holds `name` when the timer fires (a restarted
/// holder is reached); dropped if nobody does.
///
/// # Panics
///
/// Outside an actor.
pub fn send_after_named<M: Send + 'static>(after: Duration, name: Name<M>, msg: M) -> TimerId {
    time::call_after(after, move || {
        let _ = send(name, msg);
    })
}

/// [`send_after_named`] on the wall clock: under causal profiling (feature
/// `smarm-causal`) the timer keeps real time (see [`send_after_wall`]);
/// without the feature it is [`send_after_named`].
///
/// # Panics
///
/// Outside an actor.
pub fn send_after_named_wall<M: Send + 'static>(after: Duration, name: Name<M>, msg: M) -> TimerId {
    time::call_after_wall(after, move || {
        let _ = send(name, msg);
    })
}
