//! The process's node, for the free functions `smarm::dist::{node, nodes,
//! send, call}`: Erlang has one node per VM and `erlang:send/2`,
//! `nodes/0` and `gen_server:call/3` need no node argument. A smarm
//! process may start several nodes (a test often does); the free
//! functions use the first one started while no other was running, until
//! it stops (then none, until the next start), and [`Node`]'s methods
//! address any node explicitly.
//!
//! Invariant: the slot holds a weak reference, so it never keeps a node
//! alive, and it names a stopped node only until the next start.

use super::{CallError, Dest, Inner, Node, SendError};
use crate::term::{Term, ToTerm};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

static CURRENT: Mutex<Weak<Inner>> = Mutex::new(Weak::new());

fn slot() -> std::sync::MutexGuard<'static, Weak<Inner>> {
    CURRENT.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `node` has started: it becomes the process's node if none runs.
pub(super) fn started(node: &Node) {
    let mut current = slot();
    let running = current
        .upgrade()
        .is_some_and(|inner| !Node { inner }.is_stopped());
    if !running {
        *current = Arc::downgrade(&node.inner);
    }
}

/// The process's node (module docs), or `None` (Erlang's `node()` on a
/// node that is not alive).
///
/// ```no_run
/// smarm::run(|| {
///     # let epmd = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
///     let node = smarm::dist::Node::builder("solo@localhost").cookie("c")
///         # .epmd_port(epmd)
///         .start().unwrap();
///     assert_eq!(smarm::dist::node().unwrap().name(), "solo@localhost");
///     assert!(smarm::dist::nodes().is_empty());
///     node.stop();
///     assert!(smarm::dist::node().is_none());
/// });
/// ```
pub fn node() -> Option<Node> {
    let inner = slot().upgrade()?;
    let node = Node { inner };
    (!node.is_stopped()).then_some(node)
}

/// The nodes the process's node is connected to (Erlang's `nodes/0`);
/// empty when no node runs.
pub fn nodes() -> Vec<String> {
    node().map(|n| n.nodes()).unwrap_or_default()
}

/// Send `msg` to `to` from the process's node ([`Node::send`]):
/// `smarm::dist::send(("counter", "erl@localhost"), msg)` is Erlang's
/// `{counter, 'erl@localhost'} ! Msg`. [`SendError::NotAlive`] when no
/// node runs.
pub fn send(to: impl Into<Dest>, msg: impl ToTerm) -> Result<(), SendError> {
    node().ok_or(SendError::NotAlive)?.send(to, msg)
}

/// Call the gen_server `to` from the process's node ([`Node::call`]),
/// as `gen_server:call(To, Request, Timeout)`.
pub fn call(
    to: impl Into<Dest>,
    request: impl ToTerm,
    timeout: Duration,
) -> Result<Term, CallError> {
    node()
        .ok_or(CallError::Send(SendError::NotAlive))?
        .call(to, request, timeout)
}
