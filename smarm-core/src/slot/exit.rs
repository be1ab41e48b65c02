//! How a slot's actor ended: its `Outcome` (kept for its `JoinHandle`) and
//! the `DownReason` its monitors and links are told. They are the slot's
//! record of its actor's end, so they live with the slot; the actor and
//! signal layers produce and read them.

use super::Pid;
use std::any::Any;

/// How an actor finished.
pub(crate) enum Outcome {
    /// Its closure returned this value.
    Exit(Box<dyn Any + Send>),
    /// Its closure panicked with this payload.
    Panic(Box<dyn Any + Send>),
    /// It unwound because of [`request_stop`](crate::request_stop).
    Stopped,
    /// It ended for another reason: a linked actor's exit, an exit signal,
    /// a stack overflow, or a reason of its own
    /// ([`exit_with`](crate::exit_with)).
    Ended(DownReason),
}

/// Why an actor went down: what its monitors' [`Down`](crate::Down) and
/// its links' [`Exit`](crate::Exit) messages say.
///
/// New reasons may be added (as Erlang's exit reasons are open-ended), so
/// a `match` on it needs a wildcard arm. A reason the program gives, or one
/// carried from another node, is a [`Custom`](DownReason::Custom) reason.
///
/// ```
/// use smarm::{DownReason, ExitReason};
///
/// smarm::run(|| {
///     let (child, m) = smarm::Builder::new()
///         .spawn_monitor(|| smarm::exit_with("config file missing"))
///         .unwrap();
///     let reason = m.rx.recv().unwrap().reason;
///     assert_eq!(reason, DownReason::Custom(ExitReason::new("config file missing")));
///     assert!(reason.is_abnormal());
///     assert!(child.join().is_err());
/// });
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DownReason {
    /// It returned normally.
    Exit,
    /// It panicked (the payload goes to whoever joins it).
    Panic,
    /// It was stopped with [`request_stop`](crate::request_stop).
    Stopped,
    /// It did not exist (already finished, or never did) when the monitor
    /// or link was set up.
    NoProc,
    /// It was stopped by the abnormal exit of a linked actor
    /// ([`LinkedExit`]: which one, and why it ended) (Erlang's exit with
    /// the linked process's reason; kept apart from
    /// [`Killed`](DownReason::Killed) so that a crash spreading through
    /// links and a deliberate kill read differently). Boxed, so that a
    /// reason stays two words: every `Down`, `Exit` and behaviour's
    /// message carries one.
    Linked(Box<LinkedExit>),
    /// It was ended by a [`kill`](crate::ExitSignal::Kill) exit signal,
    /// which no actor can trap (Erlang's `killed`).
    Killed,
    /// It was shut down: by a [`shutdown`](crate::ExitSignal::Shutdown)
    /// exit signal, or it ended itself so, as a supervisor that gives up
    /// does (Erlang's `shutdown`). Abnormal for links, but not a failure
    /// for a supervisor: a transient child that shuts down is not
    /// restarted, and no crash report is made.
    Shutdown,
    /// It overflowed its stack. The process aborts instead where the
    /// overflow could not be contained (see the guide's chapter on
    /// failures).
    StackOverflow,
    /// It was stopped for holding more heap than its limit
    /// ([`Builder::max_heap_size`](crate::Builder::max_heap_size), Erlang's
    /// `max_heap_size` kill).
    HeapLimit,
    /// It ended with a reason of its own, given to
    /// [`exit_with`](crate::exit_with) (or carried from another node).
    Custom(ExitReason),
}

/// A reason an actor gave for its end ([`exit_with`](crate::exit_with)):
/// text, cheap to clone, compared by content.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ExitReason(std::sync::Arc<String>);

impl ExitReason {
    /// A reason saying `text`.
    pub fn new(text: impl Into<String>) -> Self {
        ExitReason(std::sync::Arc::new(text.into()))
    }

    /// The reason's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for ExitReason {
    fn from(text: &str) -> Self {
        ExitReason::new(text)
    }
}

impl From<String> for ExitReason {
    fn from(text: String) -> Self {
        ExitReason::new(text)
    }
}

impl std::fmt::Debug for ExitReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl From<ExitReason> for DownReason {
    /// A reason of the program's own: [`DownReason::Custom`].
    fn from(reason: ExitReason) -> Self {
        DownReason::Custom(reason)
    }
}

impl From<&str> for DownReason {
    /// A reason of the program's own: [`DownReason::Custom`].
    fn from(text: &str) -> Self {
        DownReason::Custom(ExitReason::new(text))
    }
}

impl From<String> for DownReason {
    /// A reason of the program's own: [`DownReason::Custom`].
    fn from(text: String) -> Self {
        DownReason::Custom(ExitReason::new(text))
    }
}

impl std::fmt::Display for ExitReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl DownReason {
    pub(crate) fn of(outcome: &Outcome) -> DownReason {
        match outcome {
            Outcome::Exit(_) => DownReason::Exit,
            Outcome::Panic(_) => DownReason::Panic,
            Outcome::Stopped => DownReason::Stopped,
            Outcome::Ended(reason) => reason.clone(),
        }
    }

    /// Whether this exit stops linked actors that do not trap exits (every
    /// reason but a normal exit, as in Erlang).
    pub fn is_abnormal(&self) -> bool {
        *self != DownReason::Exit
    }

    /// The reason at the end of a chain of link exits: for
    /// [`Linked`](DownReason::Linked), the reason of the actor whose exit
    /// started the chain; any other reason is its own root.
    pub fn root_cause(&self) -> &DownReason {
        match self {
            DownReason::Linked(link) => link.reason.root_cause(),
            other => other,
        }
    }
}

/// What ended an actor stopped through a link
/// ([`DownReason::Linked`]): the linked actor whose exit stopped it, and
/// why that one ended.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LinkedExit {
    /// The linked actor whose exit stopped it.
    pub by: Pid,
    /// Why `by` ended.
    pub reason: DownReason,
}

impl DownReason {
    /// [`Linked`](DownReason::Linked): stopped by the exit of linked actor
    /// `by`, which ended for `reason`.
    pub fn linked(by: Pid, reason: DownReason) -> DownReason {
        DownReason::Linked(Box::new(LinkedExit { by, reason }))
    }
}

impl std::fmt::Display for DownReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DownReason::Exit => write!(f, "exited normally"),
            DownReason::Panic => write!(f, "panicked"),
            DownReason::Stopped => write!(f, "was stopped"),
            DownReason::NoProc => write!(f, "did not exist"),
            DownReason::Linked(link) => write!(
                f,
                "was stopped by the exit of linked actor {}, which {}",
                link.by, link.reason
            ),
            DownReason::Killed => write!(f, "was killed (an untrappable kill signal)"),
            DownReason::Shutdown => write!(f, "shut down"),
            DownReason::StackOverflow => write!(f, "overflowed its stack"),
            DownReason::HeapLimit => write!(f, "exceeded its heap limit"),
            DownReason::Custom(reason) => write!(f, "exited: {reason}"),
        }
    }
}
