//! A smarm gen_server that Erlang processes call by name: `Node::serve`
//! registers a node-visible name and runs a bridge actor that turns
//! `gen_server:call` / `cast` / `!` into the server's calls, casts and
//! infos.
//!
//! # Design
//!
//! The bridge never waits for an answer: a call is put to the server with
//! `GenServerRef::send_request`, its reply slot forwarding the answer to
//! the caller's alias, so a server that defers a reply (keeps the slot
//! and answers after later messages) is served as locally, and the
//! requests of many callers are queued in the server's own mailbox in
//! the order they came. The bridge monitors the server: when it ends,
//! the name goes with the bridge, and the Erlang callers' monitors say
//! why (`normal`, `panic`, `shutdown`...).
//!
//! # Invariants
//!
//! - (S1) Every request reaches the server in the order its connection
//!   delivered it, or is answered with `{error, {bad_request, Why}}`
//!   when it does not decode as the server's type; a bad cast or info is
//!   dropped and logged. Nothing a remote sends can panic the server.
//! - (S2) The name is registered while the server lives, and only then.

use super::link::reason_term;
use super::{Mailbox, Message, Node, RegisterError, log};
use crate::term::{FromTerm, ToTerm, atom, tuple};
use smarm_core::{monitor, select, spawn};
use smarm_otp::gen_server::{GenServer, GenServerRef, Reply};

/// A gen_server whose messages cross the wire: its calls, casts and
/// infos decode from terms and its replies encode to them. Every such
/// server is one.
pub trait Servable:
    GenServer<Call: FromTerm, Reply: ToTerm, Cast: FromTerm, Info: FromTerm>
{
}

impl<G> Servable for G where
    G: GenServer<Call: FromTerm, Reply: ToTerm, Cast: FromTerm, Info: FromTerm>
{
}

impl Node {
    /// Serve the gen_server `server` to other nodes under the name
    /// `name`: an Erlang `gen_server:call({Name, Node}, Request)` decodes
    /// `Request` as the server's `Call` ([`FromTerm`]) and gets its
    /// `Reply` ([`ToTerm`]); `gen_server:cast` reaches `handle_cast`, a
    /// plain `{Name, Node} ! Msg` reaches `handle_info`. A request that
    /// does not decode is answered `{error, {bad_request, Why}}` (`Why` a
    /// binary saying what was wrong); a cast or message that does not
    /// decode is dropped and logged.
    ///
    /// The name lives as long as the server: when the server ends,
    /// callers monitoring it (as `gen_server:call` does) hear its reason.
    ///
    /// ```no_run
    /// use smarm::dist::Node;
    /// use smarm::gen_server::{self, Ctx, Flow, GenServer, InitError, Reply};
    ///
    /// struct Counter(i64);
    /// impl GenServer for Counter {
    ///     type Args = ();
    ///     type Call = ();    // gen_server:call(S, ok)
    ///     type Reply = i64;
    ///     type Cast = i64;   // gen_server:cast(S, 5)
    ///     type Info = ();
    ///     fn init(_: (), _: &mut Ctx<Self>) -> Result<Self, InitError> { Ok(Counter(0)) }
    ///     fn handle_call(&mut self, _: (), reply: Reply<i64>, _: &mut Ctx<Self>) -> Flow {
    ///         reply.reply(self.0);
    ///         Flow::Continue
    ///     }
    ///     fn handle_cast(&mut self, n: i64, _: &mut Ctx<Self>) -> Flow {
    ///         self.0 += n;
    ///         Flow::Continue
    ///     }
    /// }
    ///
    /// smarm::run(|| {
    ///     let node = Node::start("shop@localhost", "secret").unwrap();
    ///     let counter = gen_server::start::<Counter>(()).unwrap();
    ///     node.serve("counter", counter).unwrap();
    ///     // erl> gen_server:cast({counter, 'shop@localhost'}, 5).
    ///     // erl> gen_server:call({counter, 'shop@localhost'}, ok).  % 5
    /// #   node.stop();
    /// });
    /// ```
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn serve<G: Servable>(
        &self,
        name: &str,
        server: GenServerRef<G>,
    ) -> Result<(), RegisterError> {
        let mailbox = self.register(name)?;
        spawn(move || bridge(mailbox, server));
        Ok(())
    }
}

/// The bridge actor (module docs): until the server or the node ends.
fn bridge<G: Servable>(mailbox: Mailbox, server: GenServerRef<G>) {
    let down = monitor(server.pid());
    loop {
        if select(&[&down.rx, mailbox.selectable()]) == 0 {
            // S2: the server is gone, and the name with this mailbox.
            let reason = down
                .rx
                .try_recv()
                .ok()
                .flatten()
                .map_or_else(|| atom("noproc"), |d| reason_term(&d.reason));
            mailbox.close(reason);
            return;
        }
        match mailbox.try_recv() {
            Ok(Some(msg)) => {
                if !pass_on(&mailbox, &server, msg) {
                    mailbox.close(atom("noproc"));
                    return;
                }
            }
            Ok(None) => {}
            Err(_) => return, // the node stopped
        }
    }
}

/// Hand one message to the server (S1); `false` if the server is gone.
fn pass_on<G: Servable>(mailbox: &Mailbox, server: &GenServerRef<G>, msg: Message) -> bool {
    let name = mailbox.name().unwrap_or("?");
    if let Some(call) = msg.gen_call() {
        let request = match G::Call::from_term(&call.request) {
            Ok(request) => request,
            Err(e) => {
                log(&format!("a call to {name:?} does not decode: {e}"));
                let why = tuple(vec![atom("bad_request"), e.to_string().to_term()]);
                let _ = mailbox.reply(&call.reply_to, tuple(vec![atom("error"), why]));
                return true;
            }
        };
        let (node, to) = (mailbox.node.clone(), call.reply_to);
        let from = mailbox.pid.clone();
        // Runs in the server's actor: no reconnecting there (a caller
        // whose node went away is gone).
        let reply = Reply::forward(move |answer: G::Reply| {
            node.reply_from(&from, &to, answer.into_term(), false)
                .is_ok()
        });
        return server.send_request(request, reply).is_ok();
    }
    if let Some(cast) = msg.gen_cast() {
        return match G::Cast::from_term(cast) {
            Ok(cast) => server.cast(cast).is_ok(),
            Err(e) => {
                log(&format!("a cast to {name:?} does not decode, dropped: {e}"));
                true
            }
        };
    }
    match G::Info::from_term(&msg.term) {
        Ok(info) => server.info(info).is_ok(),
        Err(e) => {
            log(&format!(
                "a message to {name:?} does not decode, dropped: {e}"
            ));
            true
        }
    }
}
