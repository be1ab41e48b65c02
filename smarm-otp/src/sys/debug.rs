//! A behaviour's debug options and what they record: the events
//! ([`SysEvent`]), the status and statistics a process reports, and the
//! requests that reach it ([`Request`]), answered by [`Debug::handle`].

use crate::behaviour::Reply;
use smarm_core::Pid;
use std::any::Any;
use std::collections::VecDeque;
use std::fmt;
use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// One event of a process, as [`log`](super::log) keeps it and
/// [`trace`](super::trace) and [`install`](super::install)ed functions see
/// it; its `Display` is the `*DBG*` line OTP's `sys` prints:
///
/// ```text
/// *DBG* counter got cast 5
/// *DBG* code-lock receive cast 1 in state Locked
/// *DBG* code-lock consume cast 3 in state Locked => Open
/// *DBG* code-lock postpone cast 1 in state Open
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SysEvent {
    /// The process.
    pub pid: Pid,
    /// Its registered name, if it had one when debugging was turned on.
    pub name: Option<&'static str>,
    /// When it happened.
    pub at: SystemTime,
    /// What happened to the message: `got` (a gen_server, supervisor or
    /// typed actor handled it), and for a gen_statem `receive` (it took
    /// it from its mailbox), `postpone` or `consume` (what its callback
    /// did with it), `enter` (a state enter call).
    pub action: &'static str,
    /// What kind of message: `call`, `cast`, `info`, `exit`, `down`, and
    /// for a gen_statem also `internal`, `timeout`, `state_timeout`,
    /// `{timeout, Name}`.
    pub kind: &'static str,
    /// The message as text, by the behaviour's `format_message` hook (its
    /// type's name unless the behaviour shows more; a derived actor's
    /// message by its `Debug`, or its variant).
    pub message: String,
    /// For a gen_statem: the state it was handled in.
    pub state: Option<String>,
    /// For a gen_statem's `consume`: the state it moved to, if another.
    pub next_state: Option<String>,
}

impl SysEvent {
    /// An event of the calling process (`pid`), now: `action` on a
    /// message of `kind`, shown as `message`.
    pub(crate) fn now(pid: Pid, action: &'static str, kind: &'static str, message: String) -> Self {
        SysEvent {
            pid,
            name: None,
            at: smarm_core::time::system_now(),
            action,
            kind,
            message,
            state: None,
            next_state: None,
        }
    }

    /// The event, in `state`.
    pub(crate) fn in_state(mut self, state: String) -> Self {
        self.state = Some(state);
        self
    }

    /// Whether it is a message coming in (counted by
    /// [`statistics`](super::statistics) once, as OTP's `messages_in`).
    fn is_in(&self) -> bool {
        matches!(self.action, "got" | "receive")
    }
}

impl fmt::Display for SysEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "*DBG* ")?;
        match self.name {
            Some(name) => write!(f, "{name}")?,
            None => write!(f, "{}", self.pid)?,
        }
        if self.action == "enter" {
            write!(f, " enter")?;
        } else {
            write!(f, " {} {} {}", self.action, self.kind, self.message)?;
        }
        if let Some(state) = &self.state {
            write!(f, " in state {state}")?;
            if let Some(next) = &self.next_state {
                write!(f, " => {next}")?;
            }
        }
        Ok(())
    }
}

/// What [`get_status`](super::get_status) reports.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Status {
    /// The process.
    pub pid: Pid,
    /// `gen_server`, `gen_statem`, `supervisor`, or `actor` (a typed actor's own loop).
    pub behaviour: &'static str,
    /// Its callback type.
    pub module: &'static str,
    /// Its state, as the behaviour's `format_status` shows it.
    pub state: String,
    /// Whether it is suspended.
    pub suspended: bool,
    /// Messages waiting in its mailbox.
    pub mailbox_len: usize,
    /// Events logged ([`log`](super::log)), if logging.
    pub log_size: Option<usize>,
    /// Whether [`trace`](super::trace) is on.
    pub trace: bool,
    /// The file [`log_to_file`](super::log_to_file) writes to, if any.
    pub log_file: Option<std::path::PathBuf>,
    /// Names of the [`install`](super::install)ed functions.
    pub installed: Vec<&'static str>,
}

/// What [`statistics`](super::statistics) counted, since it was turned on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Statistics {
    /// When counting started.
    pub since: SystemTime,
    /// How long ago that was.
    pub elapsed: Duration,
    /// Events handled since (calls, casts, infos, ...).
    pub messages_in: u64,
    /// Of those, calls.
    pub calls_in: u64,
    /// Replies sent to calls received since (by a gen_server or
    /// gen_statem; a reply sent later, from another callback, counts when
    /// it is sent).
    pub messages_out: u64,
    /// Timeslice-clock ticks the process has run for in all (feature
    /// `budget-accounting`), as introspection reports it.
    pub budget_cycles: Option<u64>,
}

/// What [`statistics`](super::statistics) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stats {
    /// Start counting (from zero).
    On,
    /// Stop counting.
    Off,
    /// What was counted, if counting.
    Get,
}

/// What [`log`](super::log) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Log {
    /// Keep the last `n` events (Erlang's default is 10).
    On(usize),
    /// Stop keeping them (and forget them).
    Off,
    /// The events kept, oldest first.
    Get,
    /// Print the events kept, oldest first, to standard error as `*DBG*`
    /// lines (as [`trace`](super::trace) prints them), and return them.
    Print,
}

/// A system request, as a behaviour's mailbox carries it (made by this
/// module's functions).
#[doc(hidden)]
pub enum Request {
    Suspend(Reply<()>),
    Resume(Reply<()>),
    Status(Reply<Status>),
    Statistics(Stats, Reply<Option<Statistics>>),
    Log(Log, Reply<Vec<SysEvent>>),
    Trace(bool, Reply<()>),
    LogToFile(Option<(std::path::PathBuf, std::fs::File)>, Reply<()>),
    Install(&'static str, EventFn, Reply<()>),
    Remove(&'static str, Reply<bool>),
    NoDebug(Reply<()>),
    State(StateFn),
    Terminate(crate::behaviour::StopReason, Reply<()>),
}

/// What a process does after [`Debug::handle`] answered a request.
#[must_use]
pub(crate) enum Answered {
    /// Go on (suspended or not, as `Debug::suspended` says).
    GoOn,
    /// Stop for this reason through `terminate`, then acknowledge with
    /// the reply (`sys::terminate`, OTP's `system_terminate`).
    Terminate(crate::behaviour::StopReason, Reply<()>),
}

/// A function [`install`](super::install)ed to see each event.
pub(super) type EventFn = Box<dyn FnMut(&SysEvent) + Send>;

/// A request for the state by its type ([`get_state_of`](super::get_state_of)): called with
/// the state and the name of its type.
type StateFn = Box<dyn FnOnce(&mut dyn Any, &'static str) + Send>;

/// What a behaviour's status holds besides its debug options: for
/// [`Debug::handle`].
pub(crate) struct About {
    pub(crate) pid: Pid,
    pub(crate) behaviour: &'static str,
    pub(crate) module: &'static str,
    pub(crate) state: String,
    pub(crate) mailbox_len: usize,
}

/// A state as [`get_state_of`](super::get_state_of) reaches it: itself, by its own type.
pub(crate) fn itself<S: 'static>(state: &mut S) -> (&mut dyn Any, &'static str) {
    (state, std::any::type_name::<S>())
}

/// What [`statistics`](super::statistics) counts, from when it started.
struct Counts {
    since: SystemTime,
    at: Instant,
    messages_in: u64,
    calls_in: u64,
    /// Replies sent: counted by the replies themselves, which may be sent
    /// later, from the callbacks or not ([`Debug::count_reply`]).
    messages_out: Arc<AtomicU64>,
}

/// A behaviour's debug options and suspension: what its loop keeps for
/// sys.
#[derive(Default)]
pub(crate) struct Debug {
    /// Any event hook on (checked per message: one load).
    pub(crate) on: bool,
    pub(crate) suspended: bool,
    log: Option<(usize, VecDeque<SysEvent>)>,
    trace: bool,
    installed: Vec<(&'static str, EventFn)>,
    stats: Option<Counts>,
    /// [`log_to_file`](super::log_to_file)'s file: each event a line.
    file: Option<(std::path::PathBuf, std::io::LineWriter<std::fs::File>)>,
    /// The process's registered name, looked up when a request was last
    /// answered (its events show it).
    name: Option<&'static str>,
}

impl Debug {
    /// Note an event (only called while `on`).
    #[cold]
    pub(crate) fn event(&mut self, mut event: SysEvent) {
        event.name = self.name;
        if let Some(counts) = &mut self.stats
            && event.is_in()
        {
            counts.messages_in += 1;
            if event.kind == "call" {
                counts.calls_in += 1;
            }
        }
        if self.trace {
            eprintln!("{event}");
        }
        if let Some((path, file)) = &mut self.file
            && let Err(error) = writeln!(file, "{event}")
        {
            eprintln!(
                "*DBG* {} sys::log_to_file: writing {} failed ({error}): stopped",
                event.pid,
                path.display()
            );
            self.file = None;
        }
        let mut panicked = Vec::new();
        for (name, f) in &mut self.installed {
            if catch_unwind(AssertUnwindSafe(|| f(&event))).is_err() {
                panicked.push(*name);
            }
        }
        for name in panicked {
            eprintln!(
                "*DBG* {} installed function {name:?} panicked: removed",
                event.pid
            );
            self.installed.retain(|(n, _)| *n != name); // (D2)
        }
        if let Some((size, events)) = &mut self.log {
            if events.len() == *size {
                events.pop_front();
            }
            events.push_back(event);
        }
        self.refresh();
    }

    /// Have a call's reply slot counted as a message out when it is sent,
    /// if statistics are on (only called while `on`).
    #[cold]
    pub(crate) fn count_reply<T: Send>(&self, reply: &mut Reply<T>) {
        if let Some(counts) = &self.stats {
            reply.count_in(counts.messages_out.clone());
        }
    }

    fn refresh(&mut self) {
        self.on = self.log.is_some()
            || self.trace
            || !self.installed.is_empty()
            || self.stats.is_some()
            || self.file.is_some();
    }

    /// Handle a system request on the process whose state is `state`:
    /// `by_type` gives what [`get_state_of`](super::get_state_of) reaches of it (the state
    /// itself, [`itself`], or a part) and that type's name; `about` builds
    /// the status, if asked.
    #[cold]
    pub(crate) fn handle<S>(
        &mut self,
        request: Request,
        state: &mut S,
        by_type: impl FnOnce(&mut S) -> (&mut dyn Any, &'static str),
        about: impl FnOnce(&S) -> About,
    ) -> Answered {
        match request {
            Request::Terminate(reason, ack) => return Answered::Terminate(reason, ack),
            Request::Suspend(reply) => {
                self.suspended = true;
                let _ = reply.reply(());
            }
            Request::Resume(reply) => {
                self.suspended = false;
                let _ = reply.reply(());
            }
            Request::State(f) => {
                let (reached, type_name) = by_type(state);
                f(reached, type_name)
            }
            Request::Status(reply) => {
                let about = about(state);
                let _ = reply.reply(Status {
                    pid: about.pid,
                    behaviour: about.behaviour,
                    module: about.module,
                    state: about.state,
                    suspended: self.suspended,
                    mailbox_len: about.mailbox_len,
                    log_size: self.log.as_ref().map(|(n, _)| *n),
                    trace: self.trace,
                    log_file: self.file.as_ref().map(|(path, _)| path.clone()),
                    installed: self.installed.iter().map(|(n, _)| *n).collect(),
                });
            }
            Request::Statistics(what, reply) => {
                let pid = about(state).pid;
                let counted = match what {
                    Stats::On => {
                        self.stats = Some(Counts {
                            since: smarm_core::time::system_now(),
                            at: smarm_core::time::now(),
                            messages_in: 0,
                            calls_in: 0,
                            messages_out: Arc::default(),
                        });
                        None
                    }
                    Stats::Off => {
                        self.stats = None;
                        None
                    }
                    Stats::Get => self.stats.as_ref().map(|counts| Statistics {
                        since: counts.since,
                        elapsed: counts.at.elapsed(),
                        messages_in: counts.messages_in,
                        calls_in: counts.calls_in,
                        messages_out: counts.messages_out.load(Ordering::Relaxed),
                        budget_cycles: smarm_core::introspect::actor_info(pid)
                            .and_then(|i| i.budget_cycles),
                    }),
                };
                let _ = reply.reply(counted);
            }
            Request::Log(what, reply) => {
                let events = match what {
                    Log::On(n) => {
                        self.log = Some((n.max(1), VecDeque::new()));
                        Vec::new()
                    }
                    Log::Off => self.log.take().map(|(_, e)| e.into()).unwrap_or_default(),
                    Log::Get | Log::Print => self
                        .log
                        .as_ref()
                        .map(|(_, e)| e.iter().cloned().collect())
                        .unwrap_or_default(),
                };
                if what == Log::Print {
                    for event in &events {
                        eprintln!("{event}");
                    }
                }
                let _ = reply.reply(events);
            }
            Request::Trace(on, reply) => {
                self.trace = on;
                let _ = reply.reply(());
            }
            Request::LogToFile(file, reply) => {
                self.file = file.map(|(path, file)| (path, std::io::LineWriter::new(file)));
                let _ = reply.reply(());
            }
            Request::Install(name, f, reply) => {
                self.installed.retain(|(n, _)| *n != name);
                self.installed.push((name, f));
                let _ = reply.reply(());
            }
            Request::Remove(name, reply) => {
                let before = self.installed.len();
                self.installed.retain(|(n, _)| *n != name);
                let _ = reply.reply(self.installed.len() != before);
            }
            Request::NoDebug(reply) => {
                let suspended = self.suspended;
                *self = Debug {
                    suspended,
                    ..Debug::default()
                };
                let _ = reply.reply(());
            }
        }
        self.refresh();
        if self.on {
            self.name = crate::registry::name_of(smarm_core::self_pid());
        }
        Answered::GoOn
    }
}
