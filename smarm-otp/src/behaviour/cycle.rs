//! Calls that wait on each other: a record of who waits on whom, kept
//! only for calls slow to answer, and the walk that finds a cycle.
//!
//! A call that has had no answer for core's
//! [`FIRST_WATCH`](smarm_core::channel::FIRST_WATCH) (2 ms) notes that its
//! caller waits on the callee, then walks the records from the callee: if
//! they lead back to the caller (A waits on B, B waits on A; or A → B → C
//! → A), no one in the cycle can answer, and the call fails with
//! [`CallError::Cycle`](super::CallError::Cycle) naming it instead of
//! everyone waiting out their timeouts. The walk is repeated at each of
//! core's later looks (gaps that double), so the last of the cycle to
//! note its wait finds it. A fast call never gets here: the records cost
//! nothing on `call`.
//!
//! Whom a caller waits on is the actor that owes its reply: the callee at
//! first; the server that received the reply slot when it was passed on
//! with a `send_request` (the obligation moved). A server that keeps a
//! caller's `Reply` to answer later still owes it, so calling that caller
//! back is a cycle; one that has passed it on with `send_request` does
//! not. (A reply slot handed on inside a plain message cannot be followed:
//! the server that handed it on is taken to still owe it.)
//!
//! # Invariants
//!
//! - (Y1) A record exists only while its call waits: it is removed when
//!   the call returns, by any way (a guard), so a walk never follows a
//!   finished call.
//! - (Y2) The walk is bounded (`MAX_WALK` steps), so records that change
//!   under it cannot make it loop.
//! - (Y3) The passed-on reply slots stay bounded: those of callers that
//!   never noted a wait are dropped after a second.

use smarm_core::Pid;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The longest chain of callers walked.
const MAX_WALK: usize = 64;

/// One runtime's records.
#[derive(Default)]
pub(crate) struct Waits {
    inner: Mutex<Records>,
}

/// One noted wait: on whom, which call (its tag), and when it began.
#[derive(Clone, Copy)]
struct Wait {
    on: Pid,
    tag: u64,
    began: u64,
}

#[derive(Default)]
struct Records {
    /// A waiting caller → its wait.
    waiting: HashMap<Pid, Wait>,
    /// A call `(caller, tag)` whose reply slot was passed on → who owes it
    /// now, and when it was passed.
    moved: HashMap<(Pid, u64), (Pid, Instant)>,
}

fn with<R>(f: impl FnOnce(&mut Records) -> R) -> R {
    smarm_core::runtime::with_runtime_local::<Waits, R>(|waits, _| {
        f(&mut waits.inner.lock().unwrap_or_else(|e| e.into_inner()))
    })
}

/// The calling actor `me` waits on `callee` in call `tag`, begun at
/// `began`: note it (once per call), and walk from whoever owes its reply.
/// The cycle, starting with `me`, if the walk comes back to `me` and `me`'s
/// call is the newest in it: the call that closed the cycle is the one
/// that fails (the others' looks leave it to that one, whose first look
/// comes after theirs have noted their waits).
pub(crate) fn look(
    me: Pid,
    callee: Pid,
    tag: u64,
    began: u64,
    noted: &mut Option<Noted>,
) -> Option<Vec<Pid>> {
    with(|records| {
        if noted.is_none() {
            let wait = Wait {
                on: callee,
                tag,
                began,
            };
            records.waiting.insert(me, wait);
            *noted = Some(Noted { me });
        }
        let newest = (began, me.index(), me.generation());
        let mut path = vec![me];
        let mut at = records.owner(me, callee, tag);
        for _ in 0..MAX_WALK {
            if at == me {
                return Some(path);
            }
            path.push(at);
            let wait = *records.waiting.get(&at)?;
            if (wait.began, at.index(), at.generation()) > newest {
                return None; // a newer call in the chain: it decides
            }
            at = records.owner(at, wait.on, wait.tag);
        }
        None // (Y2)
    })
}

impl Records {
    /// Who owes `caller` the reply to its call `tag` made to `callee`.
    fn owner(&self, caller: Pid, callee: Pid, tag: u64) -> Pid {
        self.moved
            .get(&(caller, tag))
            .map_or(callee, |(owner, _)| *owner)
    }
}

/// `reply` is being passed on to `owner` (a `send_request`): the call it
/// answers is owed by `owner` from now on. Nothing for a reply slot that
/// is not an actor caller's, or outside an actor.
pub(crate) fn passed_on<T: Send>(reply: &super::Reply<T>, owner: Pid) {
    if smarm_core::try_self_pid().is_some()
        && let Some(call) = reply.call_id()
    {
        moved(call, owner);
    }
}

/// The call `(caller, tag)` is now owed by `owner`.
fn moved(call: (Pid, u64), owner: Pid) {
    with(|records| {
        // A fast call never notes its wait, so nothing removes its entry
        // when it returns: entries of callers not waiting (noted within
        // 2 ms of calling) are dropped once they are old.
        if records.moved.len() >= PRUNE_AT {
            let Records { waiting, moved } = records;
            moved.retain(|(caller, _), (_, at)| {
                waiting.contains_key(caller) || at.elapsed() < STALE
            });
        }
        records.moved.insert(call, (owner, smarm_core::time::now()));
    });
}

/// How many passed-on reply slots are kept before stale ones are dropped.
const PRUNE_AT: usize = 256;

/// When a passed-on reply slot whose caller never noted its wait is
/// surely finished.
const STALE: Duration = Duration::from_secs(1);

/// A noted wait, removed when dropped (Y1).
pub(crate) struct Noted {
    me: Pid,
}

impl Drop for Noted {
    fn drop(&mut self) {
        let me = self.me;
        with(|records| {
            records.waiting.remove(&me);
            records.moved.retain(|(caller, _), _| *caller != me);
        });
    }
}
