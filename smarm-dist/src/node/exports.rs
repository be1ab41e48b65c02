//! Functions a node exports to other nodes under Erlang module and
//! function names, so that `erpc:call(Node, shop, price, [Item])`,
//! `rpc:call` and `spawn(Node, shop, price, [Item])` run them.
//!
//! An exported function takes the argument list and returns a term, or
//! raises one of Erlang's three exception classes ([`Raise`]); a panic in
//! it is raised as an `error` (`{panic, Message}`), so a caller always
//! gets an answer. It runs in a process of its own (`spawn.rs`), as
//! `erpc:execute_call` runs a function on a BEAM node.
//!
//! # Invariants
//!
//! - (E1) The table holds at most one function per `(module, function)`;
//!   a function runs outside the node's lock (it may call back into the
//!   node).

use super::Node;
use crate::term::{FromTerm, List, Term, ToTerm, atom, display, tuple};
use std::sync::Arc;
use thiserror::Error;

/// An exception an exported function raises, as Erlang's three classes:
/// the caller's `erpc:call` raises the same class (`throw(Value)`,
/// `error({exception, Reason, Stack})`, `exit({exception, Reason})`), and
/// `rpc:call` answers `Value` or `{badrpc, {'EXIT', ...}}`.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum Raise {
    /// `throw(Value)`: a non-local return the caller gets as a value.
    #[error("throw: {}", display(.0))]
    Throw(Term),
    /// `error(Reason)`: a run-time error (`badarg`, `function_clause`,
    /// your own reason); the caller gets it with a stack naming the
    /// function.
    #[error("error: {}", display(.0))]
    Error(Term),
    /// `exit(Reason)`: the function's process ends with `Reason`.
    #[error("exit: {}", display(.0))]
    Exit(Term),
}

impl Raise {
    /// `throw(value)`.
    pub fn throw(value: impl ToTerm) -> Raise {
        Raise::Throw(value.into_term())
    }

    /// `error(reason)`.
    pub fn error(reason: impl ToTerm) -> Raise {
        Raise::Error(reason.into_term())
    }

    /// `exit(reason)`.
    pub fn exit(reason: impl ToTerm) -> Raise {
        Raise::Exit(reason.into_term())
    }
}

/// An exported function.
pub(super) type Exported = Arc<dyn Fn(Vec<Term>) -> Result<Term, Raise> + Send + Sync>;

/// What running an exported function came to: its value, or the
/// exception with the stack Erlang would show (`[{M, F, Arity, []}]`, or
/// `[{M, F, Args, []}]` for `undef`).
pub(super) enum Outcome {
    Return(Term),
    Throw(Term),
    Error(Term, Term),
    Exit(Term),
}

impl Node {
    /// Export `function` as `module:function` to other nodes: an Erlang
    /// `erpc:call(Node, Module, Function, Args)` (or `rpc:call`, or a
    /// `spawn/4`) runs it with `Args` in a process of its own, and gets
    /// its value, or its [`Raise`] as the matching Erlang exception. Any
    /// arity is accepted; a function that takes a fixed number of
    /// arguments raises `error(undef)` or `error(function_clause)` for
    /// others, as it sees fit. Exporting a name again replaces the
    /// function.
    ///
    /// ```no_run
    /// use smarm::dist::{Node, Raise, Term, term};
    ///
    /// smarm::run(|| {
    ///     let node = Node::start("shop@localhost", "secret").unwrap();
    ///     node.export("shop", "echo", |args: Vec<Term>| match &args[..] {
    ///         [one] => Ok(one.clone()),
    ///         _ => Err(Raise::error(term::atom("badarg"))),
    ///     });
    ///     // From Erlang: erpc:call('shop@localhost', shop, echo, [hi]) =:= hi
    ///     # node.stop();
    /// });
    /// ```
    pub fn export<F>(&self, module: &str, function: &str, f: F)
    where
        F: Fn(Vec<Term>) -> Result<Term, Raise> + Send + Sync + 'static,
    {
        let f: Exported = Arc::new(f);
        let key = (module.to_string(), function.to_string());
        let _ = self.with_state(|s| s.procs.exports.insert(key, f)); // (E1)
    }

    /// [`export`](Node::export) a typed function: its arguments decode
    /// as the tuple `A` ([`FromTerm`]; `(String, u32)` for two, `(X,)`
    /// for one), and its value encodes as `R` ([`ToTerm`]). Arguments that
    /// do not decode raise `error(function_clause)`, as an Erlang function
    /// whose clauses none match.
    ///
    /// ```no_run
    /// use smarm::dist::{Node, Raise};
    ///
    /// smarm::run(|| {
    ///     let node = Node::start("shop@localhost", "secret").unwrap();
    ///     node.export_typed("shop", "price", |(item, qty): (String, u32)| {
    ///         match item.as_str() {
    ///             "apple" => Ok(qty * 3),
    ///             _ => Err(Raise::throw(("unknown_item", item))),
    ///         }
    ///     });
    ///     // From Erlang: erpc:call('shop@localhost', shop, price, ["apple", 2]) =:= 6
    ///     # node.stop();
    /// });
    /// ```
    pub fn export_typed<A, R, F>(&self, module: &str, function: &str, f: F)
    where
        A: FromTerm,
        R: ToTerm,
        F: Fn(A) -> Result<R, Raise> + Send + Sync + 'static,
    {
        self.export(module, function, move |args| {
            let args =
                A::from_term(&tuple(args)).map_err(|_| Raise::Error(atom("function_clause")))?;
            f(args).map(ToTerm::into_term)
        });
    }

    /// Export what a BEAM node answers of `erlang` for a remote caller
    /// with no code of its own: `erlang:node/0`, `erlang:nodes/0`,
    /// `erlang:is_alive/0`, so `rpc:call(Node, erlang, node, [])` works.
    pub(super) fn export_builtins(&self) {
        let node = self.name().to_string();
        self.export("erlang", "node", move |args| match &args[..] {
            [] => Ok(atom(&node)),
            _ => Err(Raise::error(atom("undef"))),
        });
        // The node's handle would keep the node alive from its own table.
        let weak = Arc::downgrade(&self.inner);
        self.export("erlang", "nodes", move |args| {
            match (&args[..], weak.upgrade()) {
                ([], Some(inner)) => {
                    let nodes = Node { inner }.nodes();
                    Ok(Term::from(List::from(
                        nodes.iter().map(|n| atom(n)).collect::<Vec<_>>(),
                    )))
                }
                _ => Err(Raise::error(atom("undef"))),
            }
        });
        self.export("erlang", "is_alive", |args| match &args[..] {
            [] => Ok(true.to_term()),
            _ => Err(Raise::error(atom("undef"))),
        });
    }

    /// Take `module:function` back; `false` if it was not exported.
    pub fn unexport(&self, module: &str, function: &str) -> bool {
        let key = (module.to_string(), function.to_string());
        self.with_state(|s| s.procs.exports.remove(&key).is_some())
            .unwrap_or(false)
    }

    /// The function exported as `module:function`, if any.
    pub(super) fn exported(&self, module: &str, function: &str) -> Option<Exported> {
        let key = (module.to_string(), function.to_string());
        self.with_state(|s| s.procs.exports.get(&key).cloned())
            .flatten()
    }

    /// Run `module:function(args)` as `apply/3` would on a BEAM node: an
    /// unexported function raises `undef`, a panic an `error`.
    pub(super) fn apply(&self, module: &str, function: &str, args: Vec<Term>) -> Outcome {
        let stack = |arity: Term| {
            Term::from(List::from(vec![tuple(vec![
                atom(module),
                atom(function),
                arity,
                Term::from(List::nil()),
            ])]))
        };
        let arity = args.len().to_term();
        let Some(f) = self.exported(module, function) else {
            return Outcome::Error(atom("undef"), stack(Term::from(List::from(args))));
        };
        // The function's panic is its caller's error, not the node's.
        let run = std::panic::AssertUnwindSafe(|| f(args));
        match std::panic::catch_unwind(run) {
            Ok(Ok(value)) => Outcome::Return(value),
            Ok(Err(Raise::Throw(v))) => Outcome::Throw(v),
            Ok(Err(Raise::Error(r))) => Outcome::Error(r, stack(arity)),
            Ok(Err(Raise::Exit(r))) => Outcome::Exit(r),
            Err(panic) => {
                let text = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic without a message".into());
                Outcome::Error(tuple(vec![atom("panic"), text.to_term()]), stack(arity))
            }
        }
    }
}
