//! The node's `net_kernel`: the registered process every Erlang node has,
//! answering what other nodes ask of it, so that `net_adm:ping` from an
//! Erlang shell answers `pong` (and keeps the connection, so `nodes()`
//! lists this node) and [`Node::ping`] works against any node.
//!
//! `net_adm:ping(Node)` is `gen_server:call({net_kernel, Node},
//! {is_auth, node()})`: the caller monitors the name first, so a node
//! with no `net_kernel` answers the monitor with `noproc`, the ping says
//! `pang`, and the caller disconnects. A node reached at all is
//! authenticated (the handshake checked the cookie), so the answer is
//! always `yes`, as Erlang's `net_kernel` answers.
//!
//! # Invariants
//!
//! - (K1) The name `net_kernel` is registered before [`Node::start`]
//!   returns and for as long as the node runs; it is this module's alone
//!   ([`Node::register`] of it fails).
//! - (K2) Every `{is_auth, Node}` call is answered `yes`; any other
//!   request is logged and left unanswered (the caller's own timeout or
//!   monitor ends its call), as a request the node does not implement.

use super::{Mailbox, Node, log};
use crate::term::{Term, atom};
use std::time::Duration;

/// The registered name of the node's kernel process.
pub(super) const NAME: &str = "net_kernel";

impl Node {
    /// Start the kernel process (K1): registers [`NAME`] in the actor that
    /// serves it, and returns once it is registered.
    pub(super) fn start_kernel(&self) {
        self.start_service(NAME, "pings to this node will fail", |_, kernel| {
            serve(&kernel)
        });
    }

    /// Whether `node` answers, as `net_adm:ping/1`: connects if need be,
    /// then asks its `net_kernel`. `true` is Erlang's `pong`; `false`
    /// (`pang`) if it cannot be reached, refuses this node's cookie, or
    /// does not answer within the tick time. A node pinged successfully
    /// stays connected ([`nodes`](Node::nodes) lists it).
    ///
    /// ```no_run
    /// use smarm::dist::Node;
    ///
    /// smarm::run(|| {
    ///     let node = Node::start("shop@localhost", "secret").unwrap();
    ///     if node.ping("erl@localhost") {
    ///         println!("connected to {:?}", node.nodes());
    ///     }
    ///     node.stop();
    /// });
    /// ```
    pub fn ping(&self, node: &str) -> bool {
        let request = crate::term::tuple(vec![atom("is_auth"), atom(self.name())]);
        let timeout = self.inner.ticktime.max(Duration::from_secs(1));
        matches!(self.call((NAME, node), request, timeout), Ok(ref t) if *t == atom("yes"))
    }
}

/// Answer the kernel's calls until the node stops (K2).
fn serve(kernel: &Mailbox) {
    while let Ok(msg) = kernel.recv() {
        let Some(call) = msg.gen_call() else {
            continue; // a plain message: net_kernel takes none from peers
        };
        if is_auth(&call.request) {
            let _ = kernel.reply(&call.reply_to, atom("yes"));
        } else {
            log(&format!(
                "net_kernel: unanswered request {}",
                crate::term::display(&call.request)
            ));
        }
    }
}

/// Whether `request` is `{is_auth, Node}`.
fn is_auth(request: &Term) -> bool {
    match request {
        Term::Tuple(t) => {
            matches!(t.elements.as_slice(), [tag, Term::Atom(_)] if *tag == atom("is_auth"))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::is_auth;
    use crate::term::{atom, tuple};

    #[test]
    fn only_is_auth_with_a_node_name_is_an_auth_request() {
        assert!(is_auth(&tuple(vec![
            atom("is_auth"),
            atom("erl@localhost")
        ])));
        assert!(!is_auth(&tuple(vec![atom("is_auth")])));
        assert!(!is_auth(&tuple(vec![
            atom("connect"),
            atom("erl@localhost")
        ])));
        assert!(!is_auth(&atom("is_auth")));
    }
}
