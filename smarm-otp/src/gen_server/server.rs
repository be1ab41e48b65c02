//! The server loop: init, then take the system channel first and the
//! mailbox second, dispatch each message to its callback, and on the way
//! out run `terminate`, whatever the way out is.
//!
//! # Invariants
//!
//! - (S1) `terminate` runs exactly once, outside any unwind: a stop request
//!   or a callback's panic is caught at the loop, `terminate` runs, and the
//!   unwind is re-raised so the actor still ends as stopped or panicked.
//! - (S2) The server holds a sender to its own mailbox (in its `Ctx`), so
//!   the mailbox never reads as closed while it runs; when the loop ends,
//!   the mailbox is dropped before the actor exits, dropping every queued
//!   request's reply slot (their callers fail at once).

use super::{Flow, GenServer, GenServerRef, Reply, ServerName, StartError, StopReason};
use smarm_core::channel::{channel, select, Receiver, Sender};
use smarm_core::time::{cancel_timer, send_after_to, TimerId};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::time::Duration;

/// A message for a server of type `G` (what its mailbox carries). Opaque:
/// send through a [`GenServerRef`] or a [`ServerName`].
pub struct Envelope<G: GenServer>(pub(super) Msg<G>);

pub(super) enum Msg<G: GenServer> {
    Call(G::Call, Reply<G::Reply>),
    Cast(G::Cast),
    Info(G::Info),
    /// Run a closure on the state between callbacks (`get_state`,
    /// `inspect`).
    Inspect(Box<dyn FnOnce(&G) + Send>),
    /// Stop with [`StopReason::Shutdown`]; acknowledged after `terminate`.
    Shutdown(Reply<()>),
}

/// What a callback can do besides changing the state: reach its own
/// address, and arm timers that deliver to its own `handle_info`.
pub struct Ctx<G: GenServer> {
    me: GenServerRef<G>,
    sys: Sender<G::Info>,
}

impl<G: GenServer> Ctx<G> {
    /// This server's address.
    pub fn me(&self) -> &GenServerRef<G> {
        &self.me
    }

    /// Deliver `info` to this server's `handle_info` after `after`, ahead
    /// of its mailbox. Cancel with [`Ctx::cancel_timer`].
    pub fn send_after(&self, after: Duration, info: G::Info) -> TimerId {
        send_after_to(after, &self.sys, info)
    }

    /// Call off a timer armed by [`Ctx::send_after`]: `true` if it had not
    /// fired yet (its info will not arrive).
    pub fn cancel_timer(&self, id: TimerId) -> bool {
        cancel_timer(id)
    }
}

/// The server actor's body (spawned by `Builder::start`).
pub(super) fn serve<G: GenServer>(
    args: G::Args,
    inbox: Receiver<Envelope<G>>,
    me: Sender<Envelope<G>>,
    name: Option<ServerName<G>>,
    started: Sender<Result<(), StartError>>,
) {
    let (sys_tx, sys) = channel::<G::Info>();
    let mut ctx = Ctx {
        me: GenServerRef::new(smarm_core::self_pid(), me),
        sys: sys_tx,
    };
    if let Some(name) = name {
        if let Err(e) = super::handle::register_server(name, &ctx.me) {
            let _ = started.send(Err(e));
            return;
        }
    }
    let mut state = match G::init(args, &mut ctx) {
        Ok(state) => state,
        Err(e) => {
            if let Some(name) = name {
                crate::registry::unregister(name.as_str());
            }
            let _ = started.send(Err(StartError::Init(e)));
            return;
        }
    };
    let _ = started.send(Ok(()));
    drop(started);

    let mut ack = None;
    let ended = catch_unwind(AssertUnwindSafe(|| {
        serve_loop(&mut state, &inbox, &sys, &mut ctx, &mut ack)
    }));
    let (reason, unwind) = match ended {
        Ok(reason) => (reason, None),
        Err(payload) if smarm_core::ext::is_stop(&*payload) => {
            smarm_core::ext::clear_stop(); // terminate may block
            (StopReason::Shutdown, Some(payload))
        }
        Err(payload) => (StopReason::Error(panic_message(&*payload)), Some(payload)),
    };
    state.terminate(&reason, &mut ctx); // (S1)
    drop(inbox); // (S2): queued callers fail now
    drop(state);
    if let Some(ack) = ack {
        let _ = ack.reply(());
    }
    match (unwind, reason) {
        (Some(payload), _) => resume_unwind(payload),
        (None, StopReason::Error(why)) => resume_unwind(Box::new(StopReason::Error(why))),
        (None, _) => {}
    }
}

/// Serve until a callback or a shutdown request stops the server.
fn serve_loop<G: GenServer>(
    state: &mut G,
    inbox: &Receiver<Envelope<G>>,
    sys: &Receiver<G::Info>,
    ctx: &mut Ctx<G>,
    ack: &mut Option<Reply<()>>,
) -> StopReason {
    loop {
        let flow = if let Ok(Some(info)) = sys.try_recv() {
            state.handle_info(info, ctx)
        } else if let Ok(Some(Envelope(msg))) = inbox.try_recv() {
            match msg {
                Msg::Call(request, reply) => state.handle_call(request, reply, ctx),
                Msg::Cast(msg) => state.handle_cast(msg, ctx),
                Msg::Info(msg) => state.handle_info(msg, ctx),
                Msg::Inspect(f) => {
                    f(state);
                    Flow::Continue
                }
                Msg::Shutdown(reply) => {
                    *ack = Some(reply);
                    Flow::Stop(StopReason::Shutdown)
                }
            }
        } else {
            // Both empty: wait for either (neither can close, S2).
            select(&[sys, inbox]);
            continue;
        };
        if let Flow::Stop(reason) = flow {
            return reason;
        }
    }
}

/// The text of a panic payload, for [`StopReason::Error`].
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(reason) = payload.downcast_ref::<StopReason>() {
        reason.to_string()
    } else {
        "panicked".to_string()
    }
}
