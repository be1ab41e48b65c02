//! The process's node and the free functions that use it
//! (`smarm::dist::{node, nodes, send, call}`), in a test binary of their
//! own: the node is process-wide.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

mod support;

use smarm::dist::{self, Node, SendError, Term, term::atom};
use smarm::gen_server::{self, Ctx, Flow, GenServer, InitError, Reply};
use std::time::Duration;
use support::free_port;

struct Doubler;

impl GenServer for Doubler {
    type Args = ();
    type Call = i64;
    type Reply = i64;
    type Cast = ();
    type Info = ();
    fn init(_: (), _: &mut Ctx<Self>) -> Result<Self, InitError> {
        Ok(Doubler)
    }
    fn handle_call(&mut self, n: i64, reply: Reply<i64>, _: &mut Ctx<Self>) -> Flow {
        reply.reply(n * 2);
        Flow::Continue
    }
}

#[test]
fn the_free_functions_use_the_first_node_started_until_it_stops() {
    smarm::run(|| {
        assert!(dist::node().is_none());
        assert!(matches!(
            dist::send(("echo", "b@localhost"), atom("hi")),
            Err(SendError::NotAlive)
        ));
        let epmd = free_port();
        let start = |name| {
            Node::builder(name)
                .cookie("c")
                .epmd_port(epmd)
                .start()
                .unwrap()
        };
        let a = start("a@localhost");
        let b = start("b@localhost");
        assert_eq!(dist::node().unwrap().name(), "a@localhost", "the first");

        let echo = b.register("echo").unwrap();
        dist::send(("echo", "b@localhost"), atom("hi")).unwrap();
        let msg = echo.recv_timeout(Duration::from_secs(30)).unwrap();
        assert_eq!(msg.term, atom("hi"));
        assert_eq!(msg.from.unwrap().node(), "a@localhost");
        assert_eq!(dist::nodes(), ["b@localhost"]);

        // A smarm gen_server served on b, called from a as Erlang would.
        let doubler = gen_server::start::<Doubler>(()).unwrap();
        b.serve("doubler", doubler).unwrap();
        let reply = dist::call(("doubler", "b@localhost"), 21i64, Duration::from_secs(30));
        assert_eq!(reply.unwrap(), Term::from(dist::term::FixInteger::from(42)));

        a.stop();
        assert!(dist::node().is_none(), "a stopped; b started while a ran");
        assert!(matches!(
            dist::send(("echo", "b@localhost"), atom("hi")),
            Err(SendError::NotAlive)
        ));
        let c = start("c@localhost");
        assert_eq!(
            dist::node().unwrap().name(),
            "c@localhost",
            "the next start"
        );
        c.stop();
        b.stop();
    });
}
