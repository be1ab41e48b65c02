//! Distribution over TLS (feature `tls`): smarm nodes among themselves,
//! and with Erlang nodes running OTP's `inet_tls_dist`. Certificates are
//! made by the tests (`support::certs`): a CA that signs every good node's
//! certificate, and a second CA nobody trusts.
//!
//! The Erlang tests are ignored without `erl` (and its `ssl` application,
//! Debian's erlang-ssl): `cargo test -p smarm-dist --features tls --test
//! tls -- --ignored`, as `.ci/run` does.
#![cfg(feature = "tls")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::dist::handshake::HandshakeError;
use smarm::dist::term::{Term, atom, tuple};
use smarm::dist::{Node, NodeEvent, Pid, SendError, ToTerm};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::Duration;
use support::certs::{self, Ca, Identity};
use support::{Erl, free_port, require_erl};

const LONG: Duration = Duration::from_secs(30);

fn tls_node(name: &str, id: &Identity, epmd: u16) -> Node {
    Node::builder(name)
        .cookie("tls")
        .epmd_port(epmd)
        .handshake_timeout(Duration::from_secs(10))
        .tls(id.config())
        .start()
        .unwrap()
}

/// An actor on `node` serving the registered name `echo`: a call is
/// answered `{pong, Request}`, `stop` ends it, anything else goes back to
/// its sender; it ends with its node.
fn serve_echo(node: &Node) -> smarm::JoinHandle<()> {
    let echo = node.register("echo").unwrap();
    smarm::spawn(move || {
        loop {
            let Ok(m) = echo.recv_timeout(LONG) else {
                return; // its node stopped
            };
            if let Some(call) = m.gen_call() {
                let answer = tuple(vec![atom("pong"), call.request]);
                echo.reply(&call.reply_to, answer).unwrap();
            } else if m.term == atom("stop") {
                return;
            } else if let Some(from) = &m.from {
                echo.send(from, m.term.clone()).unwrap();
            }
        }
    })
}

/// The connect error of a send to `peer`, which must fail.
fn connect_error(node: &Node, peer: &str) -> HandshakeError {
    match node.send(("echo", peer), atom("hello")) {
        Err(SendError::Connect { error, .. }) => error,
        other => panic!("a send to {peer} should fail to connect: {other:?}"),
    }
}

#[test]
fn smarm_nodes_send_call_and_link_over_tls() {
    let dir = certs::dir("talk");
    let ca = Ca::new("smarm test CA");
    let (ia, ib) = (
        ca.identity(&dir, "a", "localhost", &ca),
        ca.identity(&dir, "b", "localhost", &ca),
    );
    let epmd = free_port();
    smarm::run(move || {
        smarm::report::set_handler(|_| {}); // the panic below is on purpose
        let a = tls_node("ta@localhost", &ia, epmd);
        let b = tls_node("tb@localhost", &ib, epmd);
        let echo = serve_echo(&b);
        // Send, and the answer back by pid.
        let me = a.mailbox();
        me.send(("echo", "tb@localhost"), atom("hello")).unwrap();
        assert_eq!(me.recv_timeout(LONG).unwrap().term, atom("hello"));
        // A large message crosses in many records.
        let big = Term::from(smarm::dist::term::Binary::from(vec![7u8; 300_000]));
        me.send(("echo", "tb@localhost"), big.clone()).unwrap();
        assert_eq!(me.recv_timeout(LONG).unwrap().term, big);
        // A gen_server call.
        let reply = a
            .call(("echo", "tb@localhost"), atom("ping"), LONG)
            .unwrap();
        assert_eq!(reply, tuple(vec![atom("pong"), atom("ping")]));
        // A link: an actor on b that panics reaches its partner on a.
        let inbox = b.register("linker").unwrap();
        let bn = b.clone();
        let linker = smarm::spawn(move || {
            let partner = Pid::from_term(&inbox.recv_timeout(LONG).unwrap().term).unwrap();
            bn.link(&partner);
            inbox.send(&partner, atom("linked")).unwrap();
            assert_eq!(inbox.recv_timeout(LONG).unwrap().term, atom("die"));
            panic!("the linked actor fails");
        });
        let an = a.clone();
        let partner = smarm::spawn(move || {
            let exits = smarm::trap_exit(true).unwrap();
            let me = an.mailbox();
            me.send(("linker", "tb@localhost"), me.pid().to_term())
                .unwrap();
            assert_eq!(me.recv_timeout(LONG).unwrap().term, atom("linked"));
            me.send(("linker", "tb@localhost"), atom("die")).unwrap();
            exits.recv_timeout(LONG).unwrap().reason
        });
        assert!(linker.join().is_err());
        assert_eq!(
            partner.join().unwrap(),
            smarm::DownReason::Custom("panic".into())
        );
        a.send(("echo", "tb@localhost"), atom("stop")).unwrap();
        echo.join().unwrap();
        assert_eq!(a.stats().failed_handshakes.load(Ordering::Relaxed), 0);
        assert_eq!(b.stats().failed_handshakes.load(Ordering::Relaxed), 0);
        a.stop();
        b.stop();
        smarm::report::reset_handler();
    });
}

/// An idle TLS connection: the reader's read times out every quarter of
/// the tick time while ticks keep the peer up; messages still pass
/// afterwards, on the same connection.
#[test]
fn an_idle_tls_connection_ticks_and_still_carries_messages() {
    let dir = certs::dir("idle");
    let ca = Ca::new("smarm test CA");
    let (ia, ib) = (
        ca.identity(&dir, "a", "localhost", &ca),
        ca.identity(&dir, "b", "localhost", &ca),
    );
    let epmd = free_port();
    smarm::run(move || {
        let start = |name: &str, id: &Identity| {
            Node::builder(name)
                .cookie("tls")
                .epmd_port(epmd)
                .ticktime(Duration::from_millis(400))
                .tls(id.config())
                .start()
                .unwrap()
        };
        let (a, b) = (start("ia@localhost", &ia), start("ib@localhost", &ib));
        let events = a.monitor_nodes();
        let echo = serve_echo(&b);
        let me = a.mailbox();
        for round in 0..5 {
            me.send(("echo", "ib@localhost"), round).unwrap();
            assert_eq!(me.recv_timeout(LONG).unwrap().term, round.to_term());
            // Idle for several read timeouts and ticks.
            smarm::sleep(Duration::from_millis(500));
        }
        // One connection all along: up once, never down.
        let mut seen = vec![];
        while let Ok(Some(e)) = events.try_recv() {
            seen.push(e);
        }
        assert_eq!(seen, [NodeEvent::Up("ib@localhost".into())]);
        a.send(("echo", "ib@localhost"), atom("stop")).unwrap();
        echo.join().unwrap();
        a.stop();
        b.stop();
    });
}

#[test]
fn a_certificate_from_an_untrusted_ca_is_refused_both_ways() {
    let dir = certs::dir("untrusted");
    let (ca, rogue) = (Ca::new("smarm test CA"), Ca::new("rogue CA"));
    // The rogue node trusts the real CA, so only its own certificate is
    // wrong: each refusal below is the good side's.
    let good = ca.identity(&dir, "good", "localhost", &ca);
    let bad = rogue.identity(&dir, "bad", "localhost", &ca);
    let epmd = free_port();
    smarm::run(move || {
        let g = tls_node("tgood@localhost", &good, epmd);
        let r = tls_node("trogue@localhost", &bad, epmd);
        // The rogue connects: the good node refuses its client
        // certificate, and its alert tells the rogue why.
        let e = connect_error(&r, "tgood@localhost");
        assert!(
            matches!(&e, HandshakeError::Tls(why) if why.contains("alert")),
            "{e}"
        );
        // The good node connects: it refuses the rogue's server certificate.
        let e = connect_error(&g, "trogue@localhost");
        assert!(
            matches!(&e, HandshakeError::Tls(why) if why.contains("UnknownIssuer")),
            "{e}"
        );
        assert!(g.nodes().is_empty() && r.nodes().is_empty());
        // The refusal of the rogue's connection is counted by the good
        // node's acceptor after its alert went out: maybe after the rogue
        // heard it.
        support::eventually("both handshakes counted as failed", LONG, &|| {
            g.stats().failed_handshakes.load(Ordering::Relaxed) == 2
        });
        assert_eq!(g.stats().failed_handshakes.load(Ordering::Relaxed), 2);
        g.stop();
        r.stop();
    });
}

#[test]
fn a_certificate_for_another_host_is_refused_both_ways() {
    let dir = certs::dir("host");
    let ca = Ca::new("smarm test CA");
    let good = ca.identity(&dir, "good", "localhost", &ca);
    // Signed by the trusted CA, but for another host than its node's.
    let elsewhere = ca.identity(&dir, "elsewhere", "db.example", &ca);
    let epmd = free_port();
    smarm::run(move || {
        let g = tls_node("hgood@localhost", &good, epmd);
        let o = tls_node("hother@localhost", &elsewhere, epmd);
        // It connects as hother@localhost: its certificate does not name
        // localhost, so the good node answers not_allowed.
        let e = connect_error(&o, "hgood@localhost");
        assert!(
            matches!(&e, HandshakeError::Refused { status, .. } if status == "not_allowed"),
            "{e}"
        );
        // The good node connects to it: the name check (SNI) fails.
        let e = connect_error(&g, "hother@localhost");
        assert!(
            matches!(&e, HandshakeError::Tls(why) if why.contains("not valid for name")),
            "{e}"
        );
        assert!(g.nodes().is_empty() && o.nodes().is_empty());
        g.stop();
        o.stop();
    });
}

#[test]
fn a_plain_node_and_a_tls_node_do_not_connect() {
    let dir = certs::dir("plain");
    let ca = Ca::new("smarm test CA");
    let id = ca.identity(&dir, "t", "localhost", &ca);
    let epmd = free_port();
    smarm::run(move || {
        let t = tls_node("ptls@localhost", &id, epmd);
        let p = Node::builder("pplain@localhost")
            .cookie("tls")
            .epmd_port(epmd)
            .start()
            .unwrap();
        let started = std::time::Instant::now();
        assert!(!p.ping("ptls@localhost"));
        assert!(!t.ping("pplain@localhost"));
        assert!(
            started.elapsed() < LONG,
            "refused at once, not at a deadline"
        );
        assert!(t.nodes().is_empty() && p.nodes().is_empty());
        t.stop();
        p.stop();
    });
}

/// An Erlang node on TLS with `id`.
fn tls_erl(name: &str, epmd: u16, id: &Identity, dir: &std::path::Path, eval: &str) -> Erl {
    let optfile = id.erlang_optfile(dir, &format!("{name}.conf"));
    Erl::start_with(
        name,
        "tls",
        epmd,
        &[
            "-proto_dist",
            "inet_tls",
            "-ssl_dist_optfile",
            optfile.to_str().unwrap(),
        ],
        eval,
    )
}

/// Erlang reaches smarm over TLS (send, call, link), and a second smarm
/// node reaches Erlang over a TLS connection it opens.
#[test]
#[ignore = "needs erl with ssl on the PATH (apt-get install erlang-base erlang-ssl); run: cargo test -p smarm-dist --features tls --test tls -- --ignored"]
fn erlang_and_smarm_talk_over_tls_both_ways() {
    require_erl();
    let dir = certs::dir("erlang");
    let ca = Ca::new("smarm test CA");
    let ours = ca.identity(&dir, "smarm", "localhost", &ca);
    let second = ca.identity(&dir, "smarm2", "localhost", &ca);
    let theirs = ca.identity(&dir, "erl", "localhost", &ca);
    let epmd = free_port();
    let (ready_tx, ready) = mpsc::channel();
    let smarm = std::thread::spawn(move || {
        smarm::run(move || {
            smarm::report::set_handler(|_| {}); // the panic below is on purpose
            let node = tls_node("stls@localhost", &ours, epmd);
            let echo = serve_echo(&node);
            let inbox = node.register("inbox").unwrap();
            ready_tx.send(()).unwrap();
            // Erlang connected, sent and called; it names a partner.
            let done = inbox.recv_timeout(LONG).unwrap().term;
            let Term::Tuple(t) = &done else {
                panic!("{done:?}")
            };
            assert_eq!(t.elements[0], atom("done"));
            let partner = Pid::from_term(&t.elements[1]).unwrap();
            let n = node.clone();
            let linked = smarm::spawn(move || {
                n.link(&partner);
                smarm::sleep(Duration::from_millis(100));
                panic!("the linked actor fails");
            });
            assert!(linked.join().is_err());
            // Another smarm node opens a TLS connection to Erlang.
            let other = tls_node("stls2@localhost", &second, epmd);
            let reply = other
                .call(("responder", "etls@localhost"), atom("ask"), LONG)
                .unwrap();
            assert_eq!(reply, atom("answered"));
            other
                .send(("responder", "etls@localhost"), atom("bye"))
                .unwrap();
            assert_eq!(other.stats().failed_handshakes.load(Ordering::Relaxed), 0);
            assert_eq!(node.stats().failed_handshakes.load(Ordering::Relaxed), 0);
            smarm::sleep(Duration::from_millis(300));
            node.send(("echo", "stls@localhost"), atom("stop")).unwrap();
            echo.join().unwrap();
            other.stop();
            node.stop();
            smarm::report::reset_handler();
        });
    });
    ready.recv_timeout(LONG).unwrap();
    let erl = tls_erl(
        "etls@localhost",
        epmd,
        &theirs,
        &dir,
        "S = 'stls@localhost', \
         {echo, S} ! {self(), hi}, \
         Echoed = receive M -> M =:= {self(), hi} after 10000 -> timeout end, \
         io:format(\"GOT echo ~p~n\", [Echoed]), \
         io:format(\"GOT call ~p~n\", [gen_server:call({echo, S}, ping, 10000)]), \
         Partner = spawn(fun() -> process_flag(trap_exit, true), \
             receive {'EXIT', _, Why} -> io:format(\"GOT exit ~p~n\", [Why]) \
             after 20000 -> io:format(\"GOT exit none~n\") end end), \
         register(responder, spawn(fun Loop() -> \
             receive {'$gen_call', From, ask} -> gen_server:reply(From, answered), Loop(); \
                     bye -> io:format(\"GOT bye~n\") \
             after 20000 -> io:format(\"GOT no bye~n\") end end)), \
         {inbox, S} ! {done, Partner}, \
         timer:sleep(30000).",
    );
    assert_eq!(erl.expect("GOT ", LONG), "echo true");
    assert_eq!(erl.expect("GOT ", LONG), "call {pong,ping}");
    assert_eq!(erl.expect("GOT ", LONG), "exit panic");
    assert_eq!(erl.expect("GOT ", LONG), "bye");
    smarm.join().unwrap();
}

/// A smarm node whose certificate Erlang does not trust is refused both
/// ways: Erlang's ping is `pang`, and smarm's connection attempt ends in
/// Erlang's TLS alert.
#[test]
#[ignore = "needs erl with ssl on the PATH (apt-get install erlang-base erlang-ssl); run: cargo test -p smarm-dist --features tls --test tls -- --ignored"]
fn erlang_and_smarm_refuse_an_untrusted_certificate_both_ways() {
    require_erl();
    let dir = certs::dir("erlang-rogue");
    let (ca, rogue) = (Ca::new("smarm test CA"), Ca::new("rogue CA"));
    let bad = rogue.identity(&dir, "smarm", "localhost", &ca);
    let theirs = ca.identity(&dir, "erl", "localhost", &ca);
    let epmd = free_port();
    let (ready_tx, ready) = mpsc::channel();
    let (pinged_tx, pinged) = mpsc::channel();
    let smarm = std::thread::spawn(move || {
        smarm::run(move || {
            let node = tls_node("srogue@localhost", &bad, epmd);
            ready_tx.send(()).unwrap();
            // Erlang's attempt: refused by Erlang itself (our certificate).
            pinged.recv_timeout(LONG).unwrap();
            assert!(node.stats().failed_handshakes.load(Ordering::Relaxed) >= 1);
            let e = connect_error(&node, "erogue@localhost");
            assert!(matches!(&e, HandshakeError::Tls(_)), "{e}");
            assert!(node.nodes().is_empty());
            node.stop();
        });
    });
    ready.recv_timeout(LONG).unwrap();
    let erl = tls_erl(
        "erogue@localhost",
        epmd,
        &theirs,
        &dir,
        "register(echo, self()), \
         io:format(\"GOT ~p~n\", [net_adm:ping('srogue@localhost')]), \
         timer:sleep(30000).",
    );
    assert_eq!(erl.expect("GOT ", LONG), "pang");
    pinged_tx.send(()).unwrap();
    smarm.join().unwrap();
}
