//! Synchronous starts, shared by every behaviour: spawn the actor (linked
//! to the caller, or not), let it report that it is ready (or why not) on a
//! `Started` channel, and return only then, as Erlang's `proc_lib` starts
//! do. So a started server has run its `init`, a named one is registered,
//! and a supervisor's children are up.

use super::{InitError, StartError};
use crate::registry::Name;
use smarm_core::Pid;
use smarm_core::actor::Hibernation;
use smarm_core::channel::{
    BoundedReceiver, Receiver, RecvError, RecvTimeoutError, Selectable, Sender, bounded, channel,
};
use std::time::Duration;

/// Where a starting actor reports `Ok(())` once ready, or its error. If it
/// drops this without reporting (it panicked), the start fails with
/// [`StartError::InitPanicked`].
pub(crate) type Started = Sender<Result<(), StartError>>;

/// Spawn `body` as `builder` says (linked, labelled, limited), hand it
/// its `Started` channel, and wait for its report. What `body` returns is
/// the actor's value (a gen_server's is its `Hibernation`).
pub(crate) fn start<T: Send + 'static>(
    builder: smarm_core::Builder,
    body: impl FnOnce(Started) -> T + Send + 'static,
) -> Result<Pid, StartError> {
    let (started_tx, started) = channel::<Result<(), StartError>>();
    let body = move || body(started_tx);
    let handle = builder.spawn(body)?;
    let pid = handle.pid();
    drop(handle); // detached: its life is its own
    match await_start(&started, pid) {
        Ok(Ok(())) => Ok(pid),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(StartError::InitPanicked),
    }
}

/// Wait for `child`'s start report. A start slow to report is noted as the
/// starter waiting on the child (`behaviour::cycle`), so a child whose
/// init calls its starter (a supervisor) finds the cycle instead of both
/// waiting out the call's timeout.
fn await_start(
    started: &Receiver<Result<(), StartError>>,
    child: Pid,
) -> Result<Result<(), StartError>, RecvError> {
    let mut gap = smarm_core::channel::FIRST_WATCH;
    let mut noted = None;
    // Older than any call the child makes: the child's call is the one
    // that closes a cycle through this wait.
    let began = 0;
    loop {
        match started.recv_timeout(gap) {
            Ok(report) => return Ok(report),
            Err(RecvTimeoutError::Disconnected) => return Err(RecvError),
            Err(RecvTimeoutError::Timeout) => {
                let me = smarm_core::self_pid();
                let _ = super::cycle::look(me, child, 0, began, &mut noted);
                gap = gap.saturating_mul(2);
            }
        }
    }
}

/// How a behaviour's actor is spawned and what its mailbox is, as its
/// builder (gen_server's, gen_statem's) was told; `what` names the
/// builder in the misuse panics. Public only because `Starts::launch`
/// takes it: this module is private.
#[derive(Default)]
pub struct Options {
    pub(crate) link: bool,
    pub(crate) label: Option<String>,
    pub(crate) mailbox_capacity: Option<usize>,
    pub(crate) hibernate_after: Option<Duration>,
    pub(crate) max_heap_size: usize,
}

impl Options {
    /// Bound the mailbox. Panics on 0, naming `what`.
    pub(crate) fn set_mailbox_capacity(&mut self, what: &str, capacity: usize) {
        assert!(
            capacity > 0,
            "smarm: {what}::mailbox_capacity(0): a mailbox needs room for at least one request"
        );
        self.mailbox_capacity = Some(capacity);
    }

    /// Limit the heap. Panics, naming `what`, without the accounting
    /// allocator.
    pub(crate) fn set_max_heap_size(&mut self, what: &str, bytes: usize) {
        assert!(
            bytes == 0 || smarm_core::introspect::heap_accounting(),
            "smarm: {what}::max_heap_size: heap limits need the accounting allocator; install \
             `#[global_allocator] static ALLOC: smarm::PreemptingAlloc = \
             smarm::PreemptingAlloc::system().with_heap_accounting();` in the binary"
        );
        self.max_heap_size = bytes;
    }

    /// The core builder for the actor: linked, labelled, heap-limited as
    /// asked.
    pub(crate) fn builder(&mut self) -> smarm_core::Builder {
        let mut builder = smarm_core::Builder::new().max_heap_size(self.max_heap_size);
        if self.link {
            builder = builder.link();
        }
        if let Some(label) = self.label.take() {
            builder = builder.name(label);
        }
        builder
    }
}

/// A behaviour's mailbox: the receiving end of an unbounded or a bounded
/// channel. A type parameter of a behaviour's loop rather than a branch in
/// it, so an unbounded server's receive stays core's tight loop. It is a
/// `select` arm too: what a hibernating server waits on.
pub(crate) trait Inbox<T>: Selectable + Send + 'static {
    fn recv(&self) -> Result<T, RecvError>;
    fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError>;

    /// `recv`, for a suspended loop: a wait with no deadline (a timeout
    /// too long to be an instant is none), through `recv_timeout` so that
    /// `recv` keeps one call site, inlined into the serving loop.
    fn recv_while_suspended(&self) -> Result<T, RecvError> {
        loop {
            match self.recv_timeout(Duration::MAX) {
                Ok(msg) => return Ok(msg),
                Err(RecvTimeoutError::Timeout) => continue, // none: no deadline
                Err(RecvTimeoutError::Disconnected) => return Err(RecvError),
            }
        }
    }
}

impl<T: Send + 'static> Inbox<T> for Receiver<T> {
    #[inline]
    fn recv(&self) -> Result<T, RecvError> {
        Receiver::recv(self)
    }
    fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        Receiver::recv_timeout(self, timeout)
    }
}

impl<T: Send + 'static> Inbox<T> for BoundedReceiver<T> {
    #[inline]
    fn recv(&self) -> Result<T, RecvError> {
        BoundedReceiver::recv(self)
    }
    fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        BoundedReceiver::recv_timeout(self, timeout)
    }
}

/// What a behaviour's actor starts with: its arguments, a sender to its
/// own mailbox, its name, its parent, its idle time before hibernating,
/// and where to report that it is ready.
pub(crate) struct Launch<E, A> {
    pub(crate) args: A,
    pub(crate) me: Sender<E>,
    pub(crate) name: Option<Name<E>>,
    pub(crate) parent: Option<Pid>,
    pub(crate) hibernate_after: Option<Duration>,
    pub(crate) started: Started,
}

/// A behaviour's actor body, over a mailbox of either kind (bounded or
/// not; a type parameter so an unbounded receive stays core's tight loop).
pub(crate) trait Behaviour: 'static {
    type Envelope: Send + 'static;
    type Args: Send + 'static;
    fn serve<I: Inbox<Self::Envelope>>(
        launch: Launch<Self::Envelope, Self::Args>,
        inbox: I,
    ) -> Hibernation;
}

/// Start a `B` as `options` say (linked, labelled, bounded, ...), named
/// `name`, and wait for its init: its pid and a sender to its mailbox.
pub(crate) fn launch<B: Behaviour>(
    mut options: Options,
    name: Option<Name<B::Envelope>>,
    args: B::Args,
) -> Result<(Pid, Sender<B::Envelope>), StartError> {
    let parent = options.link.then(smarm_core::self_pid);
    let hibernate_after = options.hibernate_after;
    let builder = options.builder();
    let body = move |me: Sender<B::Envelope>, started| Launch {
        args,
        me,
        name,
        parent,
        hibernate_after,
        started,
    };
    match options.mailbox_capacity {
        Some(capacity) => {
            let (tx, rx) = bounded::<B::Envelope>(capacity);
            let me = tx.clone();
            let pid = start(builder, move |started| B::serve(body(me, started), rx))?;
            Ok((pid, tx))
        }
        None => {
            let (tx, rx) = channel::<B::Envelope>();
            let me = tx.clone();
            let pid = start(builder, move |started| B::serve(body(me, started), rx))?;
            Ok((pid, tx))
        }
    }
}

impl<E: Send + 'static, A> Launch<E, A> {
    /// In the new actor: register its name (if any), run `init`, and
    /// report the outcome to the starter. `None` if it did not start (the
    /// name is released again).
    pub(crate) fn init<T>(self, init: impl FnOnce(A) -> Result<T, InitError>) -> Option<T> {
        let Launch {
            args,
            me,
            name,
            started,
            ..
        } = self;
        if let Some(name) = name
            && let Err(e) = crate::registry::register(name, me)
        {
            let _ = started.send(Err(e.into()));
            return None;
        }
        match init(args) {
            Ok(value) => {
                let _ = started.send(Ok(()));
                Some(value)
            }
            Err(e) => {
                if let Some(name) = name {
                    crate::registry::unregister(name.as_str());
                }
                // A supervisor whose child did not start says so itself.
                let e = match e.downcast::<StartError>() {
                    Ok(e) => *e,
                    Err(e) => StartError::Init(e),
                };
                let _ = started.send(Err(e));
                None
            }
        }
    }
}
