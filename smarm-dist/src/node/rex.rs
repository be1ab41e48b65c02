//! The node's `rex`: the registered process `rpc` talks to on every
//! node. Since OTP 23 `rpc:call` and `rpc:multicall` go through
//! `spawn_request` (`spawn.rs`) and come here only for a node that
//! refused one; `rpc:cast` comes here unless `rex` said the node
//! supports `erpc` (`features_request`, asked by the caller's `rex` when
//! it sees this node come up). So `rex` answers that question, and runs
//! the exported functions ([`exports`](super::exports)) that reach it as
//! calls and casts, with `rpc`'s shapes: the value (or the thrown one),
//! or `{badrpc, {'EXIT', Reason}}`.
//!
//! # Invariants
//!
//! - (R1) The name `rex` is registered before [`Node::start`] returns and
//!   for as long as the node runs.
//! - (R2) `rex` never runs a function itself: each runs in an actor of
//!   its own, so a slow one holds up no other request.

use super::exports::Outcome;
use super::{Mailbox, Node, log};
use crate::term::{Term, atom, list_elements, tuple};

/// The registered name of the node's `rpc` server.
pub(super) const NAME: &str = "rex";

/// A request `rex` takes: `{call | block_call | cast, M, F, Args, GL}`.
fn mfa(request: &Term) -> Option<(&str, String, String, Vec<Term>)> {
    let Term::Tuple(t) = request else { return None };
    let [Term::Atom(kind), Term::Atom(m), Term::Atom(f), args, _gl] = &t.elements[..] else {
        return None;
    };
    Some((
        kind.name.as_str(),
        m.name.clone(),
        f.name.clone(),
        list_elements(args)?,
    ))
}

/// `rpc`'s answer for a function that came to `outcome`.
fn rpc_answer(outcome: Outcome) -> Term {
    let bad = |reason: Term| tuple(vec![atom("badrpc"), tuple(vec![atom("EXIT"), reason])]);
    match outcome {
        Outcome::Return(v) | Outcome::Throw(v) => v,
        Outcome::Exit(r) => bad(r),
        Outcome::Error(r, stack) => bad(tuple(vec![r, stack])),
    }
}

impl Node {
    /// Start `rex` (R1); returns once its name is registered.
    pub(super) fn start_rex(&self) {
        self.start_service(NAME, "rpc:cast to this node will fail", |node, rex| {
            node.serve_rex(&rex)
        });
    }

    fn serve_rex(&self, rex: &Mailbox) {
        while let Ok(msg) = rex.recv() {
            if let Some(call) = msg.gen_call() {
                let Some((_, m, f, args)) = mfa(&call.request) else {
                    log(&format!(
                        "rex: unanswered call {}",
                        crate::term::display(&call.request)
                    ));
                    continue;
                };
                let node = self.clone();
                let from = rex.pid().clone();
                self.spawn("smarm.dist.rex.call", move || {
                    let answer = rpc_answer(node.apply(&m, &f, args));
                    let _ = node.reply_from(&from, &call.reply_to, answer, false);
                }); // (R2)
            } else if let Some(cast) = msg.gen_cast() {
                let Some(("cast", m, f, args)) = mfa(cast) else {
                    continue;
                };
                let node = self.clone();
                self.spawn("smarm.dist.rex.cast", move || {
                    if let Outcome::Error(r, _) | Outcome::Exit(r) = node.apply(&m, &f, args) {
                        log(&format!(
                            "rpc:cast of {m}:{f} raised {}",
                            crate::term::display(&r)
                        ));
                    }
                }); // (R2)
            } else if let Term::Tuple(t) = &msg.term
                && let [from, what] = &t.elements[..]
                && *what == atom("features_request")
                && let Some(from) = crate::pid::Pid::from_term(from)
            {
                let reply = tuple(vec![
                    atom("features_reply"),
                    atom(self.name()),
                    Term::from(crate::term::List::from(vec![atom("erpc")])),
                ]);
                let _ = rex.send(&from, reply);
            }
        }
    }
}
