//! gen_server across nodes: answering an Erlang `gen_server:call` that
//! reaches a mailbox, and calling an Erlang gen_server (or `rpc`) from
//! smarm, with the timeout and `DOWN` semantics of a local call.
//!
//! A call is the message `{'$gen_call', {From, Tag}, Request}`, and its
//! answer `{Tag, Reply}`. OTP 24 and later make `Tag` `[alias | Ref]`,
//! where `Ref` is an alias of the caller (ALIAS_SEND delivers to it);
//! older callers use a plain reference and get the answer at `From`.
//! [`ReplyTo::reply`] does whichever the tag asks for.

use super::{Mailbox, Message, Node, SendError};
use crate::control::Control;
use crate::node::Dest;
use crate::pid::Pid;
use crate::term::ToTerm;
use crate::term::{Atom, ImproperList, List, Term, atom, tuple};
use smarm_core::RecvTimeoutError;
use std::time::Duration;
use thiserror::Error;

/// Why a call to a server on a node failed.
#[derive(Debug, Error)]
pub enum CallError {
    /// The request could not be sent.
    #[error("smarm::dist: call: {0}")]
    Send(#[from] SendError),
    /// The server ended, or did not exist (`noproc`), or its node went
    /// away (`noconnection`), before answering: its reason.
    #[error(
        "smarm::dist: call: the server is down: {}",
        crate::term::display(reason)
    )]
    Down {
        /// The reason from the `DOWN` message.
        reason: Term,
    },
    /// No answer within the timeout.
    #[error("smarm::dist: call: no answer within {0:?}")]
    Timeout(Duration),
    /// The answer of an `rpc` was `{badrpc, Reason}`.
    #[error("smarm::dist: rpc: {}", crate::term::display(.0))]
    BadRpc(Term),
    /// The call's destination is a mailbox of this node owned by the
    /// calling actor itself, which could only answer after the call
    /// returned (Erlang's `calling_self`).
    #[error(
        "smarm::dist: call to self: the destination is a mailbox of the calling actor, which \
         could only answer after the call returned"
    )]
    CallingSelf,
}

/// Where the answer to a call goes.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplyTo {
    /// The caller.
    pub pid: Pid,
    /// The call's tag (a reference, or `[alias | Ref]`).
    pub tag: Term,
}

/// A `gen_server:call` that reached a mailbox.
#[derive(Debug, Clone, PartialEq)]
pub struct GenCall {
    /// What was asked.
    pub request: Term,
    /// Where the answer goes ([`Mailbox::reply`]).
    pub reply_to: ReplyTo,
}

fn elements(t: &Term) -> Option<&[Term]> {
    match t {
        Term::Tuple(t) => Some(&t.elements),
        _ => None,
    }
}

fn is_atom(t: &Term, name: &str) -> bool {
    matches!(t, Term::Atom(Atom { name: n }) if n == name)
}

impl Message {
    /// This message as a `gen_server:call` (`{'$gen_call', {From, Tag},
    /// Request}`), if it is one.
    pub fn gen_call(&self) -> Option<GenCall> {
        let [label, from, request] = elements(&self.term)? else {
            return None;
        };
        if !is_atom(label, "$gen_call") {
            return None;
        }
        let [pid, tag] = elements(from)? else {
            return None;
        };
        Some(GenCall {
            request: request.clone(),
            reply_to: ReplyTo {
                pid: Pid::from_term(pid)?,
                tag: tag.clone(),
            },
        })
    }

    /// This message as a `gen_server:cast` (`{'$gen_cast', Request}`): the
    /// request.
    pub fn gen_cast(&self) -> Option<&Term> {
        let [label, request] = elements(&self.term)? else {
            return None;
        };
        is_atom(label, "$gen_cast").then_some(request)
    }
}

/// The alias in an OTP 24+ call tag, `[alias | Ref]`.
fn alias_of(tag: &Term) -> Option<&Term> {
    match tag {
        Term::ImproperList(ImproperList { elements, last })
            if elements.len() == 1 && is_atom(&elements[0], "alias") =>
        {
            Some(last)
        }
        _ => None,
    }
}

impl Mailbox {
    /// Answer the call `to` with `reply` (`gen_server:reply/2`).
    pub fn reply(&self, to: &ReplyTo, reply: impl ToTerm) -> Result<(), SendError> {
        self.node.reply_from(&self.pid, to, reply.into_term(), true)
    }

    /// [`Node::call`] from this mailbox: the request names this mailbox's
    /// pid as the caller (for protocols where the callee checks who
    /// calls, as `global`'s lock holders); messages that arrive before the
    /// reply go to `other`.
    pub(super) fn call_from(
        &self,
        to: Dest,
        request: Term,
        timeout: Duration,
        mut other: impl FnMut(Message),
    ) -> Result<Term, CallError> {
        let me = self;
        let reference = me.monitor(to.clone());
        let message = tuple(vec![
            atom("$gen_call"),
            tuple(vec![me.pid().to_term(), reference.clone()]),
            request,
        ]);
        if let Err(e) = me.send(to, message) {
            me.demonitor(&reference);
            return Err(e.into());
        }
        let deadline = smarm_core::time::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(smarm_core::time::now());
            match me.recv_timeout(left) {
                Ok(msg) => match elements(&msg.term) {
                    Some([tag, reply]) if *tag == reference => {
                        me.demonitor(&reference);
                        return Ok(reply.clone());
                    }
                    Some([down, r, _, _, reason]) if is_atom(down, "DOWN") && *r == reference => {
                        return Err(CallError::Down {
                            reason: reason.clone(),
                        });
                    }
                    _ => other(msg),
                },
                Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => {
                    me.demonitor(&reference);
                    return Err(CallError::Timeout(timeout));
                }
            }
        }
    }
}

impl Node {
    /// Answer the call `to` with `reply`, from the mailbox `from`: through
    /// the caller's alias when it gave one (OTP 24 and later), else to
    /// its pid; reconnecting to the caller's node first only if
    /// `connect`.
    pub(super) fn reply_from(
        &self,
        from: &Pid,
        to: &ReplyTo,
        reply: Term,
        connect: bool,
    ) -> Result<(), SendError> {
        let message = tuple(vec![to.tag.clone(), reply]);
        let control = match alias_of(&to.tag) {
            Some(alias) => Control::AliasSend {
                from: from.clone(),
                alias: alias.clone(),
            },
            None => Control::Send {
                from: Some(from.clone()),
                to: to.pid.clone(),
            },
        };
        self.post(to.pid.node(), control, Some(message), connect)
    }

    /// Call the gen_server `to` (a pid, or `(name, node)`) with
    /// `request`, as `gen_server:call(To, Request, Timeout)`: its answer,
    /// or why there is none. The server is monitored for the call, so a
    /// server that ends, never existed, or whose node goes away fails the
    /// call at once with its reason rather than at the timeout.
    ///
    /// ```no_run
    /// use smarm::dist::{term, Node};
    /// use std::time::Duration;
    ///
    /// smarm::run(|| {
    ///     let node = Node::start("shop@localhost", "secret").unwrap();
    ///     // An Erlang node erl@localhost runs a gen_server registered as kv.
    ///     let reply = node.call(("kv", "erl@localhost"), term::atom("size"), Duration::from_secs(5));
    ///     println!("{reply:?}");
    ///     node.stop();
    /// });
    /// ```
    pub fn call(
        &self,
        to: impl Into<Dest>,
        request: impl ToTerm,
        timeout: Duration,
    ) -> Result<Term, CallError> {
        let to = to.into();
        if self.owned_by_caller(&to) {
            return Err(CallError::CallingSelf);
        }
        // A fresh mailbox: nothing else arrives in it.
        self.mailbox()
            .call_from(to, request.into_term(), timeout, drop)
    }

    /// Run `module:function(args...)` on the Erlang node `node`, as
    /// `rpc:call/5`, through its `rex` server: the result, or
    /// [`CallError::BadRpc`] with the reason (an exception in the
    /// function, an undefined function). The function's group leader is
    /// this node's own pid, which does not serve IO: a function that
    /// prints fails.
    pub fn rpc(
        &self,
        node: &str,
        module: &str,
        function: &str,
        args: Vec<Term>,
        timeout: Duration,
    ) -> Result<Term, CallError> {
        let request = tuple(vec![
            atom("call"),
            atom(module),
            atom(function),
            Term::from(List::from(args)),
            self.node_pid().to_term(),
        ]);
        let reply = self.call(("rex", node), request, timeout)?;
        match elements(&reply) {
            Some([bad, reason]) if is_atom(bad, "badrpc") => Err(CallError::BadRpc(reason.clone())),
            _ => Ok(reply),
        }
    }
}
