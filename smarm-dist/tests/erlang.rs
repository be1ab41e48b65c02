//! A smarm node and a real Erlang node on loopback: the smarm node serves
//! EPMD on a private port (the Erlang node registers with it and starts
//! none), and messages go both ways, by name and by pid, with every kind
//! of term surviving the round trip. A wrong cookie gets no connection on
//! either side; a killed Erlang node is reported down.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

mod support;

use smarm::dist::term::{atom, tuple, BigInteger, Binary, FixInteger, Float, List, Map, Term};
use smarm::dist::{Node, NodeEvent, Pid};
use std::sync::mpsc;
use std::time::Duration;
use support::{free_port, require_erl, Erl};

const LONG: Duration = Duration::from_secs(30);

/// Run `body` in a smarm runtime on its own thread; returns its join
/// handle.
fn in_runtime(body: impl FnOnce() + Send + 'static) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || smarm::run(body))
}

fn elements(t: &Term) -> &[Term] {
    match t {
        Term::Tuple(t) => &t.elements,
        other => panic!("expected a tuple, got {other:?}"),
    }
}

#[test]
fn erlang_sends_by_name_and_smarm_answers_by_pid() {
    require_erl();
    let epmd = free_port();
    let (ready_tx, ready) = mpsc::channel();
    let smarm = in_runtime(move || {
        let node = Node::builder("smarm1@localhost")
            .cookie("c1")
            .epmd_port(epmd)
            .start()
            .unwrap();
        assert!(
            node.serves_epmd(),
            "no EPMD ran on the private port: the node serves it"
        );
        let echo = node.register("echo").unwrap();
        ready_tx.send(()).unwrap();
        let msg = echo.recv_timeout(LONG).unwrap();
        let [from, what] = elements(&msg.term) else {
            panic!("{:?}", msg.term)
        };
        let from = Pid::from_term(from).unwrap();
        assert_eq!(from.node(), "erl1@localhost");
        assert_eq!(msg.from.as_ref(), Some(&from), "REG_SEND names its sender");
        echo.send(&from, tuple(vec![atom("reply"), what.clone()]))
            .unwrap();
        assert_eq!(echo.recv_timeout(LONG).unwrap().term, atom("done"));
        node.stop();
    });
    ready.recv_timeout(LONG).unwrap();
    let erl = Erl::start(
        "erl1@localhost",
        "c1",
        epmd,
        "{echo, 'smarm1@localhost'} ! {self(), hello}, \
         receive {reply, X} -> io:format(\"GOT ~p~n\", [X]) after 20000 -> io:format(\"GOT timeout~n\") end, \
         {echo, 'smarm1@localhost'} ! done, \
         timer:sleep(200), halt().",
    );
    assert_eq!(erl.expect("GOT ", LONG), "hello");
    smarm.join().unwrap();
}

/// Every term kind the codec has, sent by name to an Erlang process that
/// echoes it back to the sender's pid.
fn samples(me: &Pid) -> Vec<Term> {
    vec![
        atom("an_atom"),
        atom("ünïcode"),
        Term::from(FixInteger::from(0)),
        Term::from(FixInteger::from(255)),
        Term::from(FixInteger::from(-70_000)),
        Term::from(BigInteger::from(1_i64 << 60)),
        Term::from(BigInteger::from(-(1_i64 << 62))),
        Term::from(Float::try_from(3.25).unwrap()),
        Term::from(Binary::from(b"bytes\x00\xff".to_vec())),
        Term::from(Binary::from(Vec::new())),
        Term::from(List::nil()),
        Term::from(List::from(vec![atom("a"), Term::from(FixInteger::from(1))])),
        tuple(vec![]),
        tuple(vec![
            atom("nested"),
            tuple(vec![atom("deep"), Term::from(List::nil())]),
        ]),
        Term::from(Map::from([
            (atom("k"), atom("v")),
            (Term::from(FixInteger::from(1)), atom("one")),
        ])),
        me.to_term(),
    ]
}

#[test]
fn smarm_sends_by_name_and_every_term_kind_round_trips() {
    require_erl();
    let epmd = free_port();
    let (ready_tx, ready) = mpsc::channel();
    let (done_tx, done) = mpsc::channel();
    let smarm = in_runtime(move || {
        let node = Node::builder("smarm2@localhost")
            .cookie("c2")
            .epmd_port(epmd)
            .start()
            .unwrap();
        let inbox = node.register("inbox").unwrap();
        ready_tx.send(()).unwrap();
        // The Erlang side says when its echo process is registered.
        let hello = inbox.recv_timeout(LONG).unwrap();
        assert_eq!(hello.term, atom("ready"));
        let terms = samples(inbox.pid());
        for t in &terms {
            inbox
                .send(
                    ("echo", "erl2@localhost"),
                    tuple(vec![inbox.pid().to_term(), t.clone()]),
                )
                .unwrap();
        }
        for t in &terms {
            let back = inbox.recv_timeout(LONG).unwrap().term;
            assert_eq!(elements(&back), [atom("echo"), t.clone()]);
        }
        assert!(node.nodes().contains(&"erl2@localhost".to_string()));
        inbox
            .send(("echo", "erl2@localhost"), atom("stop"))
            .unwrap();
        done_tx.send(()).unwrap();
        let _ = inbox.recv_timeout(Duration::from_secs(2)); // until erl is gone
        node.stop();
    });
    ready.recv_timeout(LONG).unwrap();
    let mut erl = Erl::start(
        "erl2@localhost",
        "c2",
        epmd,
        "register(echo, self()), \
         {inbox, 'smarm2@localhost'} ! ready, \
         Loop = fun L() -> receive {From, T} -> From ! {echo, T}, L(); stop -> ok end end, \
         Loop(), io:format(\"STOPPED~n\"), halt().",
    );
    done.recv_timeout(LONG).unwrap();
    assert_eq!(erl.expect("STOPPED", LONG), "");
    assert!(erl.wait(LONG));
    smarm.join().unwrap();
}

#[test]
fn a_wrong_cookie_gets_no_connection_on_either_side() {
    require_erl();
    let epmd = free_port();
    let (ready_tx, ready) = mpsc::channel();
    let (erl_up_tx, erl_up) = mpsc::channel::<()>();
    let (checked_tx, checked) = mpsc::channel();
    let smarm = in_runtime(move || {
        let node = Node::builder("smarm3@localhost")
            .cookie("right")
            .epmd_port(epmd)
            .start()
            .unwrap();
        let inbox = node.register("inbox").unwrap();
        ready_tx.send(()).unwrap();
        let (tx, rx) = smarm::channel::<()>();
        // Wait (on a plain thread) for the Erlang node's ping to fail.
        std::thread::spawn(move || {
            erl_up.recv().unwrap();
            tx.send(()).unwrap();
        });
        rx.recv().unwrap();
        // smarm -> Erlang with the wrong cookie: refused, a clear error.
        let err = inbox
            .send(("shell", "erl3@localhost"), atom("hi"))
            .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("cookie"), "{text}");
        assert!(node.nodes().is_empty());
        assert!(
            node.stats()
                .failed_handshakes
                .load(std::sync::atomic::Ordering::Relaxed)
                >= 2
        );
        checked_tx.send(()).unwrap();
        node.stop();
    });
    ready.recv_timeout(LONG).unwrap();
    let erl = Erl::start(
        "erl3@localhost",
        "wrong",
        epmd,
        "io:format(\"PING ~p~n\", [net_adm:ping('smarm3@localhost')]), timer:sleep(60000).",
    );
    assert_eq!(erl.expect("PING ", LONG), "pang");
    erl_up_tx.send(()).unwrap();
    checked.recv_timeout(LONG).unwrap();
    drop(erl);
    smarm.join().unwrap();
}

#[test]
fn a_killed_erlang_node_is_reported_down() {
    require_erl();
    let epmd = free_port();
    let (ready_tx, ready) = mpsc::channel();
    let (up_tx, up) = mpsc::channel();
    let (down_tx, down) = mpsc::channel();
    let smarm = in_runtime(move || {
        let node = Node::builder("smarm4@localhost")
            .cookie("c4")
            .epmd_port(epmd)
            .start()
            .unwrap();
        let events = node.monitor_nodes();
        let inbox = node.register("inbox").unwrap();
        ready_tx.send(()).unwrap();
        assert_eq!(inbox.recv_timeout(LONG).unwrap().term, atom("hi"));
        assert_eq!(
            events.recv().unwrap(),
            NodeEvent::Up("erl4@localhost".into())
        );
        up_tx.send(()).unwrap();
        assert_eq!(
            events.recv_timeout(LONG).unwrap(),
            NodeEvent::Down("erl4@localhost".into())
        );
        assert!(node.nodes().is_empty());
        down_tx.send(()).unwrap();
        node.stop();
    });
    ready.recv_timeout(LONG).unwrap();
    let mut erl = Erl::start(
        "erl4@localhost",
        "c4",
        epmd,
        "{inbox, 'smarm4@localhost'} ! hi, timer:sleep(60000).",
    );
    up.recv_timeout(LONG).unwrap();
    erl.kill();
    down.recv_timeout(LONG).unwrap();
    smarm.join().unwrap();
}
