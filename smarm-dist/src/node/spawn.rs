//! Spawn requests across nodes (`erlang:spawn_request/5`), which `erpc`,
//! `rpc` and `spawn/4` ride on since OTP 23, in both directions.
//!
//! A peer's SPAWN_REQUEST starts a process here: an actor with a
//! node-visible mailbox that runs what was asked, as a BEAM node runs it:
//! `erpc:execute_call(Ref, M, F, Args)` applies the exported function
//! ([`exports`](super::exports)) and ends with `{Ref, return, Value}` (or
//! `throw`, `exit`, `error` with a stack), which the caller reads from
//! its monitor's `DOWN`; `erpc:execute_cast(M, F, Args)` applies it and
//! ends `normal`; any other `M:F/Arity` applies the exported function
//! and ends as an Erlang process does (`normal`, `{Reason, Stack}` for an
//! error, `{undef, [{M, F, Args, []}]}` if it is not exported).
//!
//! Going out, [`Node::erpc_call`] sends a SPAWN_REQUEST for
//! `erpc:execute_call` with a monitor and reads the answer from the
//! `DOWN`, as `erpc:call` does.
//!
//! # Invariants
//!
//! - (P1) A spawned process sends SPAWN_REPLY before any other signal:
//!   its monitor and link are in the tables first, then the reply goes
//!   out on the connection, then the function runs; every later signal
//!   goes out on the same connection after it.
//! - (P2) A link of a spawned process hears the process's exact exit
//!   reason: the process removes its links and sends their EXITs itself
//!   before its actor ends (L1: whoever removes a link delivers it).
//! - (P3) A request of ours waits in the table until its SPAWN_REPLY, its
//!   connection going down (the waiter hears `noconnection`), or the
//!   waiter giving up; a reply for a request given up is answered with a
//!   DEMONITOR_P, so the process runs on unwatched.

use super::exports::Outcome;
use super::monitor::watch;
use super::{Message, Node, State};
use crate::control::{Control, SPAWN_REPLY_LINKED, SPAWN_REPLY_MONITORED};
use crate::pid::Pid;
use crate::term::{List, Term, atom, display, list_elements, tuple};
use std::time::Duration;
use thiserror::Error;

/// A SPAWN_REQUEST of ours awaiting its reply.
pub(super) struct Pending {
    mailbox: u32,
    node: String,
}

/// Why [`Node::erpc_call`] has no value, by the exception `erpc:call`
/// raises in Erlang.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ErpcError {
    /// The function threw `Value` (Erlang's `throw(Value)`).
    #[error("the function threw {}", display(.0))]
    Throw(Term),
    /// The function raised an error (`error({exception, Reason, Stack})`).
    #[error(
        "the function raised the error {} at {}",
        display(reason),
        display(stack)
    )]
    Error {
        /// The error reason (`undef` for a function that is not there).
        reason: Term,
        /// Where, as Erlang's stack trace.
        stack: Term,
    },
    /// The function exited (`exit({exception, Reason})`).
    #[error("the function exited with {}", display(.0))]
    Exit(Term),
    /// The process running it was killed by a signal
    /// (`exit({signal, Reason})`).
    #[error("the process running the function ended with {}", display(.0))]
    Signal(Term),
    /// The call could not be made or its node went away
    /// (`{erpc, noconnection}`).
    #[error("no connection to the node (it may or may not have run the function)")]
    Noconnection,
    /// No answer within the timeout (`{erpc, timeout}`); the function
    /// may or may not run.
    #[error("no answer within {0:?} (the function may or may not have run)")]
    Timeout(Duration),
    /// The node refused the request (`{erpc, Reason}`: `notsup` for a
    /// node that does not spawn for others, `badarg`, `system_limit`).
    #[error("the node refused the call: {}", display(.0))]
    Refused(Term),
}

/// What a spawned process runs.
enum Job {
    /// `erpc:execute_call(Ref, M, F, Args)`.
    Call {
        res: Term,
        module: String,
        function: String,
        args: Vec<Term>,
    },
    /// `erpc:execute_call/4` with arguments of the wrong kinds: ends with
    /// `{Ref, error, {erpc, badarg}}` as `erpc` does.
    BadCall { res: Term },
    /// `erpc:execute_cast(M, F, Args)` (and `rex`'s casts).
    Cast {
        module: String,
        function: String,
        args: Vec<Term>,
    },
    /// `M:F(Args...)` itself.
    Apply {
        module: String,
        function: String,
        args: Vec<Term>,
    },
}

fn atom_name(t: &Term) -> Option<String> {
    crate::term::atom_name(t).map(str::to_string)
}

impl Job {
    fn new(module: String, function: String, args: Vec<Term>) -> Job {
        let names =
            |m: &Term, f: &Term, a: &Term| Some((atom_name(m)?, atom_name(f)?, list_elements(a)?));
        match (module.as_str(), function.as_str(), &args[..]) {
            ("erpc", "execute_call", [res, m, f, a]) => match names(m, f, a) {
                Some((module, function, args)) => Job::Call {
                    res: res.clone(),
                    module,
                    function,
                    args,
                },
                None => Job::BadCall { res: res.clone() },
            },
            ("erpc", "execute_cast", [m, f, a]) => match names(m, f, a) {
                Some((module, function, args)) => Job::Cast {
                    module,
                    function,
                    args,
                },
                None => Job::Apply {
                    module,
                    function,
                    args,
                },
            },
            _ => Job::Apply {
                module,
                function,
                args,
            },
        }
    }

    /// Run it: the exit reason of its process.
    fn run(self, node: &Node) -> Term {
        match self {
            Job::Call {
                res,
                module,
                function,
                args,
            } => match node.apply(&module, &function, args) {
                Outcome::Return(v) => tuple(vec![res, atom("return"), v]),
                Outcome::Throw(v) => tuple(vec![res, atom("throw"), v]),
                Outcome::Exit(r) => tuple(vec![res, atom("exit"), r]),
                Outcome::Error(r, stack) => tuple(vec![res, atom("error"), r, stack]),
            },
            Job::BadCall { res } => tuple(vec![
                res,
                atom("error"),
                tuple(vec![atom("erpc"), atom("badarg")]),
            ]),
            Job::Cast {
                module,
                function,
                args,
            }
            | Job::Apply {
                module,
                function,
                args,
            } => {
                let reason = process_exit(node.apply(&module, &function, args));
                if reason != atom("normal") {
                    super::log(&format!(
                        "{module}:{function} ended with {}",
                        display(&reason)
                    ));
                }
                reason
            }
        }
    }
}

/// The exit reason of an Erlang process whose function came to `outcome`.
fn process_exit(outcome: Outcome) -> Term {
    match outcome {
        Outcome::Return(_) => atom("normal"),
        Outcome::Throw(v) => tuple(vec![
            tuple(vec![atom("nocatch"), v]),
            Term::from(List::nil()),
        ]),
        Outcome::Error(r, stack) => tuple(vec![r, stack]),
        Outcome::Exit(r) => r,
    }
}

/// A request of ours is answered, or its connection is gone.
pub(super) fn node_down(s: &mut State, peer: &str) {
    let gone: Vec<_> = s
        .signals
        .spawning
        .extract_if(|_, p| p.node == peer)
        .collect();
    for (id, p) in gone {
        if let Some(tx) = s.procs.mailboxes.get(&p.mailbox) {
            let _ = tx.try_send(Message::new(None, spawn_error(&id, atom("noconnection"))));
        }
    }
}

/// `{spawn_reply, ReqId, error, Reason}`, as `spawn_request` delivers a
/// failure.
fn spawn_error(id: &Term, reason: Term) -> Term {
    tuple(vec![atom("spawn_reply"), id.clone(), atom("error"), reason])
}

impl Node {
    /// A peer's SPAWN_REQUEST: `from` asks for a process running
    /// `module:function` with `args` (P1).
    pub(super) fn spawn_requested(
        &self,
        id: Term,
        from: Pid,
        (module, function, arity): (String, String, u32),
        options: Vec<Term>,
        args: Term,
        _token: Option<Term>,
    ) {
        let refuse = |reason: &str| {
            let reply = Control::SpawnReply {
                id: id.clone(),
                to: from.clone(),
                flags: 0,
                result: atom(reason),
            };
            let _ = self.post(from.node(), reply, None, false);
        };
        let Some(args) = list_elements(&args).filter(|a| a.len() == arity as usize) else {
            return refuse("badarg");
        };
        let link = options.contains(&atom("link"));
        let monitor = options.contains(&atom("monitor"));
        let job = Job::new(module, function, args);
        let node = self.clone();
        let (id2, from2) = (id.clone(), from.clone());
        if !self.spawn("smarm.dist.spawned", move || {
            node.spawned(id2, from2, link, monitor, job)
        }) {
            refuse("system_limit");
        }
    }

    /// The body of a spawned process.
    fn spawned(&self, id: Term, from: Pid, link: bool, monitor: bool, job: Job) {
        let me = self.mailbox();
        let pid = me.pid().clone();
        let mut flags = 0;
        if monitor {
            self.watched_by(from.clone(), pid.id(), id.clone(), pid.to_term());
            flags |= SPAWN_REPLY_MONITORED;
        }
        if link {
            self.link_spawned(pid.clone(), from.clone());
            flags |= SPAWN_REPLY_LINKED;
        }
        let reply = Control::SpawnReply {
            id,
            to: from.clone(),
            flags,
            result: pid.to_term(),
        };
        let _ = self.post(from.node(), reply, None, false); // (P1)
        let reason = job.run(self);
        self.end_links(&pid, &reason); // (P2)
        me.close(reason);
    }

    /// A peer's SPAWN_REPLY to a request of ours (P3).
    pub(super) fn spawn_replied(&self, id: Term, to: &Pid, flags: u32, result: Term) {
        let pid = Pid::from_term(&result);
        let waited = self
            .with_state(|s| {
                let p = s.signals.spawning.remove(&id)?;
                if p.mailbox != to.id() {
                    return None;
                }
                match &pid {
                    Some(pid) if flags & SPAWN_REPLY_MONITORED != 0 => {
                        watch(
                            s,
                            id.clone(),
                            p.mailbox,
                            pid.to_term(),
                            pid.to_term(),
                            &p.node,
                        );
                    }
                    Some(_) => {}
                    None => {
                        let tx = s.procs.mailboxes.get(&p.mailbox)?;
                        let _ = tx.try_send(Message::new(None, spawn_error(&id, result.clone())));
                    }
                }
                Some(())
            })
            .flatten();
        if waited.is_none()
            && let Some(pid) = pid
            && flags & SPAWN_REPLY_MONITORED != 0
        {
            // Given up on: the process runs on unwatched.
            let demonitor = Control::DemonitorP {
                from: to.clone(),
                to: pid.to_term(),
                reference: id,
            };
            let _ = self.post(pid.node(), demonitor, None, false);
        }
    }

    /// Run `module:function(args)` on `node` as Erlang's `erpc:call/5`
    /// does: a process spawned there applies it, and its value comes
    /// back, or the exception it raised ([`ErpcError`]). Works against
    /// any node that spawns for others (BEAM nodes since OTP 23, smarm
    /// nodes with [`export`](Node::export)ed functions).
    ///
    /// ```no_run
    /// use smarm::dist::{Node, ToTerm};
    /// use std::time::Duration;
    ///
    /// smarm::run(|| {
    ///     let node = Node::start("shop@localhost", "secret").unwrap();
    ///     let sum = node.erpc_call(
    ///         "erl@localhost",
    ///         "lists",
    ///         "sum",
    ///         vec![vec![1, 2, 3].to_term()],
    ///         Duration::from_secs(5),
    ///     );
    ///     println!("{sum:?}");
    ///     node.stop();
    /// });
    /// ```
    pub fn erpc_call(
        &self,
        node: &str,
        module: &str,
        function: &str,
        args: Vec<Term>,
        timeout: Duration,
    ) -> Result<Term, ErpcError> {
        let me = self.mailbox();
        let id = self.new_reference();
        let res = self.new_reference();
        let _ = self.with_state(|s| {
            s.signals.spawning.insert(
                id.clone(),
                Pending {
                    mailbox: me.pid().id(),
                    node: node.to_string(),
                },
            )
        }); // (P3)
        let request = Control::SpawnRequest {
            id: id.clone(),
            from: me.pid().clone(),
            group_leader: me.pid().to_term(),
            module: "erpc".into(),
            function: "execute_call".into(),
            arity: 4,
            options: vec![atom("monitor")],
        };
        let args = vec![
            res.clone(),
            atom(module),
            atom(function),
            Term::from(List::from(args)),
        ];
        if self
            .post(node, request, Some(Term::from(List::from(args))), true)
            .is_err()
        {
            let _ = self.with_state(|s| s.signals.spawning.remove(&id));
            return Err(ErpcError::Noconnection);
        }
        let deadline = smarm_core::time::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(smarm_core::time::now());
            let Ok(msg) = me.recv_timeout(left) else {
                // Given up: a reply still to come is answered (P3); a
                // monitor already set is taken down.
                let pending = self.with_state(|s| s.signals.spawning.remove(&id));
                if !matches!(pending, Some(Some(_))) {
                    me.demonitor(&id);
                }
                return Err(ErpcError::Timeout(timeout));
            };
            let Term::Tuple(t) = &msg.term else { continue };
            match &t.elements[..] {
                [tag, r, error, reason]
                    if *tag == atom("spawn_reply") && *r == id && *error == atom("error") =>
                {
                    return Err(match reason {
                        r if *r == atom("noconnection") => ErpcError::Noconnection,
                        r => ErpcError::Refused(r.clone()),
                    });
                }
                [down, r, _, _, reason] if *down == atom("DOWN") && *r == id => {
                    return erpc_result(&res, reason);
                }
                _ => {} // not for this call
            }
        }
    }
}

/// The answer an `erpc:execute_call` process's exit reason carries, read
/// as `erpc:call` reads it.
fn erpc_result(res: &Term, reason: &Term) -> Result<Term, ErpcError> {
    if let Term::Tuple(t) = reason
        && t.elements.first() == Some(res)
    {
        match &t.elements[1..] {
            [class, v] if *class == atom("return") => return Ok(v.clone()),
            [class, v] if *class == atom("throw") => return Err(ErpcError::Throw(v.clone())),
            [class, v] if *class == atom("exit") => return Err(ErpcError::Exit(v.clone())),
            [class, reason, stack] if *class == atom("error") => {
                return Err(ErpcError::Error {
                    reason: reason.clone(),
                    stack: stack.clone(),
                });
            }
            [class, Term::Tuple(e)] if *class == atom("error") => {
                if let [erpc, why] = &e.elements[..]
                    && *erpc == atom("erpc")
                {
                    return Err(ErpcError::Refused(why.clone()));
                }
            }
            _ => {}
        }
    }
    if *reason == atom("noconnection") {
        return Err(ErpcError::Noconnection);
    }
    Err(ErpcError::Signal(reason.clone()))
}
