//! smarm nodes among themselves, with no Erlang anywhere: two OS processes
//! form a cluster through the EPMD one of them serves; a peer speaking the
//! protocol badly (malformed or oversize frames, unknown control
//! messages, no ticks) loses its connection and nothing else; a full
//! bounded mailbox drops a remote message instead of stalling the reader.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::dist::control::Control;
use smarm::dist::epmd;
use smarm::dist::flags::Flags;
use smarm::dist::handshake::{self, Local};
use smarm::dist::term::{self, FixInteger, Term, atom, tuple};
use smarm::dist::{Node, NodeEvent};
use smarm::net::TcpStream;
use std::io::{Read, Write};
use std::net::Ipv4Addr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use support::{eventually, free_port};

const LONG: Duration = Duration::from_secs(30);
const CHILD: &str = "SMARM_DIST_CHILD_EPMD_PORT";

/// A connection to `node` made by hand: the handshake done as the raw
/// node `name`, then frames written as the test likes.
fn raw_peer(node: &Node, name: &str, cookie: &str) -> TcpStream {
    let mut s = TcpStream::connect((Ipv4Addr::LOCALHOST, node.port())).unwrap();
    let local = Local {
        name: name.into(),
        cookie: cookie.into(),
        flags: Flags::offered(),
        creation: 7,
    };
    handshake::initiate(&mut s, &local, node.name(), LONG, || true).unwrap();
    s
}

/// A frame: length, pass-through, control, message.
fn frame(control: &Term, message: &Term) -> Vec<u8> {
    let mut body = vec![112];
    term::encode_into(control, &mut body);
    term::encode_into(message, &mut body);
    let mut f = (body.len() as u32).to_be_bytes().to_vec();
    f.extend(body);
    f
}

fn reg_send(from: &str, name: &str, message: &Term) -> Vec<u8> {
    let from = smarm::dist::Pid::new(from, 1, 0, 7);
    frame(
        &Control::RegSend {
            from,
            name: name.into(),
        }
        .to_term(),
        message,
    )
}

/// Read until the node closes the connection (ticks are skipped).
fn closed_by_node(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(LONG)).unwrap();
    let mut buf = [0u8; 64];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) => return e.kind() == std::io::ErrorKind::ConnectionReset,
        }
    }
}

#[test]
fn malformed_and_oversize_frames_close_only_their_connection() {
    let epmd = free_port();
    smarm::run(move || {
        let node = Node::builder("m@localhost")
            .cookie("c")
            .epmd_port(epmd)
            .max_frame(1 << 16)
            .start()
            .unwrap();
        let inbox = node.register("inbox").unwrap();
        // A list claiming 2^32 elements: refused before anything is allocated.
        let mut bad = raw_peer(&node, "bad1@localhost", "c");
        bad.write_all(&[0, 0, 0, 7, 112, 131, 108, 255, 255, 255, 255])
            .unwrap();
        assert!(closed_by_node(&mut bad));
        // A frame longer than max_frame: refused before it is read.
        let mut big = raw_peer(&node, "bad2@localhost", "c");
        big.write_all(&[0x7f, 0xff, 0xff, 0xff]).unwrap();
        assert!(closed_by_node(&mut big));
        assert_eq!(node.stats().malformed.load(Ordering::Relaxed), 2);
        // An unknown control message is ignored, and the connection stays.
        let mut good = raw_peer(&node, "good@localhost", "c");
        let unknown = tuple(vec![Term::from(FixInteger::from(99)), atom("x")]);
        good.write_all(&frame(&unknown, &atom("ignored"))).unwrap();
        good.write_all(&reg_send("good@localhost", "inbox", &atom("after")))
            .unwrap();
        assert_eq!(inbox.recv_timeout(LONG).unwrap().term, atom("after"));
        assert_eq!(node.stats().ignored_controls.load(Ordering::Relaxed), 1);
        assert_eq!(node.nodes(), vec!["good@localhost".to_string()]);
        node.stop();
    });
}

#[test]
fn a_peer_that_stops_ticking_is_declared_down_within_the_tick_time() {
    let epmd = free_port();
    smarm::run(move || {
        let ticktime = Duration::from_millis(800);
        let node = Node::builder("t@localhost")
            .cookie("c")
            .epmd_port(epmd)
            .ticktime(ticktime)
            .start()
            .unwrap();
        let events = node.monitor_nodes();
        let inbox = node.register("inbox").unwrap();
        let mut quiet = raw_peer(&node, "quiet@localhost", "c");
        quiet
            .write_all(&reg_send("quiet@localhost", "inbox", &atom("hi")))
            .unwrap();
        assert_eq!(inbox.recv_timeout(LONG).unwrap().term, atom("hi"));
        assert_eq!(
            events.recv().unwrap(),
            NodeEvent::Up("quiet@localhost".into())
        );
        let t0 = Instant::now();
        // The node ticks us; we never answer.
        assert_eq!(
            events.recv_timeout(LONG).unwrap(),
            NodeEvent::Down("quiet@localhost".into())
        );
        let waited = t0.elapsed();
        assert!(
            waited >= ticktime / 2,
            "declared down after {waited:?}, before the tick time"
        );
        assert!(closed_by_node(&mut quiet));
        node.stop();
    });
}

#[test]
fn a_full_bounded_mailbox_drops_remote_messages_and_the_reader_goes_on() {
    let epmd = free_port();
    smarm::run(move || {
        let node = Node::builder("b@localhost")
            .cookie("c")
            .epmd_port(epmd)
            .start()
            .unwrap();
        let small = node.register_bounded("small", 2).unwrap();
        let other = node.register("other").unwrap();
        let mut peer = raw_peer(&node, "fast@localhost", "c");
        for i in 0..10 {
            peer.write_all(&reg_send(
                "fast@localhost",
                "small",
                &Term::from(FixInteger::from(i)),
            ))
            .unwrap();
        }
        peer.write_all(&reg_send("fast@localhost", "other", &atom("through")))
            .unwrap();
        // The reader passed the full mailbox by: the next message arrives.
        assert_eq!(other.recv_timeout(LONG).unwrap().term, atom("through"));
        assert_eq!(small.len(), 2);
        assert_eq!(node.stats().dropped_full.load(Ordering::Relaxed), 8);
        assert_eq!(small.recv().unwrap().term, Term::from(FixInteger::from(0)));
        node.stop();
    });
}

/// The other process of `two_processes_form_a_cluster_through_the_built_in_epmd`:
/// a node that echoes `{From, T}` as `{echo, T}` until `stop`.
#[test]
fn child_echo_node() {
    let Some(port) = std::env::var(CHILD)
        .ok()
        .and_then(|p| p.parse::<u16>().ok())
    else {
        return; // run as the child only
    };
    smarm::run(move || {
        let node = Node::builder("child@localhost")
            .cookie("pair")
            .epmd_port(port)
            .start()
            .unwrap();
        assert!(!node.serves_epmd(), "the parent serves EPMD");
        let echo = node.register("echo").unwrap();
        println!("CHILD READY");
        loop {
            let msg = echo.recv_timeout(LONG).unwrap();
            if msg.term == atom("stop") {
                break;
            }
            let Term::Tuple(t) = &msg.term else {
                panic!("{:?}", msg.term)
            };
            let from = smarm::dist::Pid::from_term(&t.elements[0]).unwrap();
            echo.send(&from, tuple(vec![atom("echo"), t.elements[1].clone()]))
                .unwrap();
        }
        node.stop();
    });
}

#[test]
fn two_processes_form_a_cluster_through_the_built_in_epmd() {
    let port = free_port();
    // Nothing answers on the EPMD port, and no Erlang is on the child's PATH.
    assert!(std::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err());
    smarm::run(move || {
        let node = Node::builder("parent@localhost")
            .cookie("pair")
            .epmd_port(port)
            .start()
            .unwrap();
        assert!(node.serves_epmd());
        let exe = std::env::current_exe().unwrap();
        let mut child = std::process::Command::new(exe)
            .args([
                "--exact",
                "child_echo_node",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(CHILD, port.to_string())
            .env("PATH", "")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = child.stdout.take().unwrap();
        let ready = smarm::io::block_on_io(move || {
            let mut seen = String::new();
            let mut byte = [0u8; 1];
            while !seen.contains("CHILD READY") {
                if out.read(&mut byte).unwrap_or(0) == 0 {
                    break;
                }
                seen.push(byte[0] as char);
            }
            // Keep draining: the child's harness prints more.
            std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
            seen
        });
        assert!(ready.contains("CHILD READY"), "child output: {ready}");
        // The built-in EPMD answered the child's registration.
        let names = epmd::names(Ipv4Addr::LOCALHOST, port).unwrap();
        assert!(names.iter().any(|(n, _)| n == "child"), "{names:?}");
        assert!(names.iter().any(|(n, _)| n == "parent"), "{names:?}");
        let inbox = node.mailbox();
        let sent: Vec<Term> = (0..100).map(|i| Term::from(FixInteger::from(i))).collect();
        for t in &sent {
            inbox
                .send(
                    ("echo", "child@localhost"),
                    tuple(vec![inbox.pid().to_term(), t.clone()]),
                )
                .unwrap();
        }
        for t in &sent {
            assert_eq!(
                inbox.recv_timeout(LONG).unwrap().term,
                tuple(vec![atom("echo"), t.clone()])
            );
        }
        inbox
            .send(("echo", "child@localhost"), atom("stop"))
            .unwrap();
        let status = smarm::io::block_on_io(move || child.wait().unwrap());
        assert!(status.success(), "the child failed: {status}");
        node.stop();
    });
}

/// Two nodes that first send to each other at the same moment both
/// connect: each handshake meets the other's, one wins by name order, and
/// both messages travel over the one connection that remains.
#[test]
fn simultaneous_connects_end_in_one_connection_and_lose_no_message() {
    let epmd = free_port();
    smarm::run(move || {
        for round in 0..20 {
            let a = cluster_node(&format!("sa{round}@localhost"), epmd);
            let b = cluster_node(&format!("sb{round}@localhost"), epmd);
            let (ia, ib) = (a.register("in").unwrap(), b.register("in").unwrap());
            let (a2, b2) = (a.clone(), b.clone());
            let (an, bn) = (a.name().to_string(), b.name().to_string());
            let x = smarm::spawn(move || a2.send(("in", bn.as_str()), atom("from_a")).unwrap());
            let y = smarm::spawn(move || b2.send(("in", an.as_str()), atom("from_b")).unwrap());
            x.join().unwrap();
            y.join().unwrap();
            assert_eq!(ib.recv_timeout(LONG).unwrap().term, atom("from_a"));
            assert_eq!(ia.recv_timeout(LONG).unwrap().term, atom("from_b"));
            assert_eq!(a.nodes(), vec![b.name().to_string()]);
            assert_eq!(b.nodes(), vec![a.name().to_string()]);
            b.stop();
            a.stop();
        }
    });
}

/// `Node::ping` is `net_adm:ping`: the peer's `net_kernel` answers
/// `yes`, and the connection stays; a node that is not there, or that
/// refuses the cookie, is `pang`. The kernel's name is the node's own.
#[test]
fn ping_answers_pong_from_a_node_and_pang_without_one() {
    let epmd = free_port();
    smarm::run(move || {
        let start = |name: &str, cookie: &str| {
            Node::builder(name)
                .cookie(cookie)
                .epmd_port(epmd)
                .start()
                .unwrap()
        };
        let a = start("pa@localhost", "c");
        let b = start("pb@localhost", "c");
        let stranger = start("pc@localhost", "other");
        assert!(a.nodes().is_empty());
        assert!(
            a.ping("pb@localhost"),
            "a live node with our cookie is pong"
        );
        assert_eq!(a.nodes(), ["pb@localhost"]);
        assert_eq!(b.nodes(), ["pa@localhost"]);
        assert!(
            b.ping("pa@localhost"),
            "and the other way, on that connection"
        );
        assert!(!a.ping("nobody@localhost"), "no such node is pang");
        assert!(
            !a.ping("pc@localhost"),
            "a node with another cookie is pang"
        );
        assert_eq!(a.nodes(), ["pb@localhost"]);
        assert!(
            a.register("net_kernel").is_err(),
            "net_kernel is the node's own name"
        );
        stranger.stop();
        b.stop();
        a.stop();
    });
}

/// Senders that pause now and then write their frames themselves (the
/// connection idle), and in bursts through the writer: each sender's
/// messages still arrive in the order it sent them, and none is lost.
#[test]
fn each_senders_messages_arrive_in_order_across_direct_and_queued_writes() {
    const SENDERS: u32 = 8;
    const EACH: u32 = 2_000;
    for round in 0..4 {
        in_order_round(round, SENDERS, EACH);
    }
}

fn in_order_round(round: u32, senders: u32, each: u32) {
    let epmd = free_port();
    let (outcome_tx, outcome) = std::sync::mpsc::channel();
    smarm::run(move || {
        let (a, b, bn) = node_pair("o", round, epmd);
        let inbox = b.register("in").unwrap();
        let actors: Vec<_> = (0..senders)
            .map(|id| {
                let (a, bn) = (a.clone(), bn.clone());
                smarm::spawn(move || {
                    for seq in 0..each {
                        a.send(("in", bn.as_str()), (id, seq)).unwrap();
                        if seq % (50 + id) == 0 {
                            // Idle past the burst window: the next frame
                            // may be written directly.
                            smarm::sleep(Duration::from_micros(200));
                        }
                    }
                })
            })
            .collect();
        // Checked after the nodes stop: a failure fails the test rather
        // than leave the runtime waiting on the nodes' actors.
        let mut next = vec![0u32; senders as usize];
        let mut outcome = Ok(());
        for _ in 0..senders * each {
            let msg = match inbox.recv_timeout(LONG) {
                Ok(msg) => msg,
                Err(e) => {
                    outcome = Err(format!("a message is missing: {e:?}"));
                    break;
                }
            };
            let (id, seq): (u32, u32) = msg.decode().unwrap();
            if seq != next[id as usize] {
                outcome = Err(format!(
                    "sender {id} out of order: {seq} after {}",
                    next[id as usize]
                ));
                break;
            }
            next[id as usize] += 1;
        }
        b.stop();
        a.stop();
        for s in actors {
            let _ = s.join(); // a sender cut off by the stop fails its send
        }
        outcome_tx.send(outcome).unwrap();
    });
    outcome.recv().unwrap().unwrap();
}

#[test]
fn a_stopping_node_writes_what_was_sent_before_the_stop() {
    // A burst goes to the connection's writer (frames closer together
    // than the burst window are queued, not written by the sender): the
    // stop right after it must not cut the queue off.
    const BURST: u32 = 500;
    for round in 0..5 {
        let epmd = free_port();
        let (outcome_tx, outcome) = std::sync::mpsc::channel();
        smarm::run(move || {
            let (a, b, bn) = node_pair("f", round, epmd);
            let inbox = b.register("in").unwrap();
            a.send(("in", bn.as_str()), 0u32).unwrap();
            assert_eq!(
                inbox.recv_timeout(LONG).unwrap().decode::<u32>().unwrap(),
                0
            );
            for n in 1..=BURST {
                a.send(("in", bn.as_str()), n).unwrap();
            }
            a.stop();
            let mut got = 0;
            while let Ok(msg) = inbox.recv_timeout(Duration::from_secs(2)) {
                got = msg.decode::<u32>().unwrap();
                if got == BURST {
                    break;
                }
            }
            b.stop();
            outcome_tx.send(got).unwrap();
        });
        assert_eq!(
            outcome.recv().unwrap(),
            BURST,
            "round {round}: the last message sent"
        );
    }
}

#[test]
fn a_call_to_a_mailbox_the_caller_owns_fails_at_once() {
    let epmd = free_port();
    smarm::run(move || {
        let node = Node::builder("selfish@localhost")
            .cookie("c")
            .epmd_port(epmd)
            .start()
            .unwrap();
        let mine = node.register("mine").unwrap();
        let t0 = Instant::now();
        // By name and by pid: both are this actor's own mailbox.
        let by_name = node.call(("mine", "selfish@localhost"), atom("hi"), LONG);
        assert!(
            matches!(by_name, Err(smarm::dist::CallError::CallingSelf)),
            "{by_name:?}"
        );
        let by_pid = node.call(mine.pid().clone(), atom("hi"), LONG);
        assert!(
            matches!(by_pid, Err(smarm::dist::CallError::CallingSelf)),
            "{by_pid:?}"
        );
        assert!(t0.elapsed() < Duration::from_secs(1));
        // Another actor's mailbox is no such call: it waits for an answer.
        let other = smarm::spawn({
            let node = node.clone();
            move || {
                node.call(
                    ("mine", "selfish@localhost"),
                    atom("hi"),
                    Duration::from_millis(50),
                )
            }
        });
        assert!(matches!(
            other.join().unwrap(),
            Err(smarm::dist::CallError::Timeout(_))
        ));
        drop(mine);
        node.stop();
    });
}

/// One smarm node calls another's exported functions with `erpc`: the
/// value, each exception class as its `ErpcError`, `undef` for a function
/// not exported, a panic raised as an error, a timeout, and a refusal of
/// arguments that do not decode.
#[test]
fn erpc_between_smarm_nodes_answers_with_erlangs_shapes() {
    use smarm::dist::{ErpcError, Raise};
    let epmd = free_port();
    smarm::run(move || {
        let start = |name: &str| {
            Node::builder(name)
                .cookie("c")
                .epmd_port(epmd)
                .start()
                .unwrap()
        };
        let a = start("ea@localhost");
        let b = start("eb@localhost");
        b.export_typed("shop", "price", |(item, qty): (String, u32)| {
            match item.as_str() {
                "apple" => Ok(qty * 3),
                _ => Err(Raise::throw(item)),
            }
        });
        b.export("shop", "fail", |args| match &args[..] {
            [how] if *how == atom("error") => Err(Raise::error(atom("boom"))),
            [how] if *how == atom("exit") => Err(Raise::exit(atom("bye"))),
            _ => panic!("no way to fail like {args:?}"),
        });
        b.export("shop", "slow", |_| {
            smarm::sleep(Duration::from_secs(5));
            Ok(atom("done"))
        });
        let n = |v: i32| Term::from(FixInteger::from(v));
        let call = |f: &str, args: Vec<Term>| a.erpc_call("eb@localhost", "shop", f, args, LONG);
        let apple = term::ToTerm::to_term(&"apple".to_string());
        let pear = term::ToTerm::to_term(&"pear".to_string());
        assert_eq!(call("price", vec![apple.clone(), n(2)]), Ok(n(6)));
        assert_eq!(
            call("price", vec![pear.clone(), n(1)]),
            Err(ErpcError::Throw(pear))
        );
        // As it comes off the wire (a list of bytes reads as a string).
        let stack = |f: &str, arity: Term| {
            let stack = Term::from(term::List::from(vec![tuple(vec![
                atom("shop"),
                atom(f),
                arity,
                Term::from(term::List::nil()),
            ])]));
            term::decode(&term::encode(&stack)).unwrap()
        };
        assert_eq!(
            call("fail", vec![atom("error")]),
            Err(ErpcError::Error {
                reason: atom("boom"),
                stack: stack("fail", n(1)),
            })
        );
        assert_eq!(
            call("fail", vec![atom("exit")]),
            Err(ErpcError::Exit(atom("bye")))
        );
        match call("fail", vec![atom("other")]) {
            Err(ErpcError::Error { reason, .. }) => {
                let Term::Tuple(t) = reason else {
                    panic!("{reason:?}")
                };
                assert_eq!(t.elements[0], atom("panic"));
            }
            other => panic!("a panic is an error: {other:?}"),
        }
        assert_eq!(
            call("nope", vec![n(1)]),
            Err(ErpcError::Error {
                reason: atom("undef"),
                stack: stack("nope", term::List::from(vec![n(1)]).into()),
            })
        );
        assert_eq!(
            call("price", vec![apple.clone(), atom("many")]),
            Err(ErpcError::Error {
                reason: atom("function_clause"),
                stack: stack("price", n(2)),
            })
        );
        let short = Duration::from_millis(50);
        assert_eq!(
            a.erpc_call("eb@localhost", "shop", "slow", vec![], short),
            Err(ErpcError::Timeout(short))
        );
        assert!(b.unexport("shop", "price"));
        assert!(matches!(
            call("price", vec![apple, n(1)]),
            Err(ErpcError::Error { reason, .. }) if reason == atom("undef")
        ));
        b.stop();
        a.stop();
    });
}

/// A peer that connects and dribbles its first handshake message a byte
/// at a time (each read sees a byte, so no read's own timeout fires) is
/// cut off at the deadline of the handshake as a whole.
#[test]
fn a_peer_that_never_finishes_the_handshake_is_cut_off_at_its_deadline() {
    let epmd = free_port();
    smarm::run(move || {
        let node = Node::builder("slowhs@localhost")
            .cookie("c")
            .epmd_port(epmd)
            .handshake_timeout(Duration::from_secs(1))
            .start()
            .unwrap();
        let mut s = TcpStream::connect((Ipv4Addr::LOCALHOST, node.port())).unwrap();
        let mut dribble = s.try_clone().unwrap();
        // 2 + 100 bytes at one per 200 ms: 20 s to finish the message.
        let t0 = Instant::now();
        smarm::spawn(move || {
            let _ = dribble.write_all(&[0, 100]);
            for _ in 0..100 {
                smarm::sleep(Duration::from_millis(200));
                if dribble.write_all(b"x").is_err() {
                    return;
                }
            }
        });
        assert!(closed_by_node(&mut s));
        let took = t0.elapsed();
        assert!(
            took < Duration::from_secs(10),
            "cut off after {took:?}, the deadline is 1 s"
        );
        assert_eq!(node.stats().failed_handshakes.load(Ordering::Relaxed), 1);
        node.stop();
    });
}

/// Connections beyond the cap on handshakes under way are closed at once,
/// unread; once the silent ones are gone, a real node connects.
#[test]
fn connections_beyond_the_handshake_cap_are_closed_at_once() {
    let epmd = free_port();
    smarm::run(move || {
        let node = Node::builder("caphs@localhost")
            .cookie("c")
            .epmd_port(epmd)
            .max_handshakes(2)
            .start()
            .unwrap();
        let addr = (Ipv4Addr::LOCALHOST, node.port());
        let silent: Vec<TcpStream> = (0..2).map(|_| TcpStream::connect(addr).unwrap()).collect();
        // Both are in their handshake once the acceptor has taken them.
        let deadline = Instant::now() + LONG;
        let mut third = loop {
            let mut s = TcpStream::connect(addr).unwrap();
            if closed_by_node(&mut s) {
                break s;
            }
            assert!(Instant::now() < deadline, "the third was never refused");
        };
        let _ = third.write_all(b"late");
        assert_eq!(node.stats().busy_handshakes.load(Ordering::Relaxed), 1);
        drop(silent);
        let other = Node::builder("caphs2@localhost")
            .cookie("c")
            .epmd_port(epmd)
            .start()
            .unwrap();
        let deadline = Instant::now() + LONG;
        while !other.ping("caphs@localhost") {
            assert!(Instant::now() < deadline, "no handshake room came back");
            smarm::sleep(Duration::from_millis(50));
        }
        other.stop();
        node.stop();
    });
}

/// Nodes `{tag}a{round}` and `{tag}b{round}` on the EPMD at `epmd`, and
/// the second's name.
fn node_pair(tag: &str, round: u32, epmd: u16) -> (Node, Node, String) {
    let name = |side| format!("{tag}{side}{round}@localhost");
    let bn = name("b");
    (cluster_node(&name("a"), epmd), cluster_node(&bn, epmd), bn)
}

/// A node named `name` with cookie `c`, on the EPMD at `epmd`.
fn cluster_node(name: &str, epmd: u16) -> Node {
    Node::builder(name)
        .cookie("c")
        .epmd_port(epmd)
        .start()
        .unwrap()
}

/// Three smarm nodes share a `pg` group: members joined on each are seen
/// from all, a leave and a member that ends are seen everywhere, and a
/// node that stops takes its members with it; a scope of another name
/// shares nothing.
#[test]
fn pg_groups_span_smarm_nodes() {
    use smarm::dist::Pid;
    let epmd = free_port();
    smarm::run(move || {
        let start = |name: &str| cluster_node(name, epmd);
        let (a, b, c) = (
            start("ga@localhost"),
            start("gb@localhost"),
            start("gc@localhost"),
        );
        let (pa, pb, pc) = (a.pg().unwrap(), b.pg().unwrap(), c.pg().unwrap());
        let g = || atom("g");
        let (ma, mb, mc) = (a.mailbox(), b.mailbox(), c.mailbox());
        pa.join(g(), ma.pid()).unwrap();
        pb.join(g(), mb.pid()).unwrap();
        // Joined before its node connects: found by discovery.
        pc.join(g(), mc.pid()).unwrap();
        assert!(a.ping("gb@localhost") && a.ping("gc@localhost") && b.ping("gc@localhost"));
        let sorted = |mut v: Vec<Pid>| {
            v.sort_by_key(|p| (p.node().to_string(), p.id()));
            v
        };
        let all = sorted(vec![ma.pid().clone(), mb.pid().clone(), mc.pid().clone()]);
        for p in [&pa, &pb, &pc] {
            eventually("every node sees three", LONG, &|| {
                sorted(p.members(g())) == all
            });
        }
        assert!(matches!(
            pa.join(g(), mb.pid()),
            Err(smarm::dist::PgError::NotLocal { .. })
        ));
        // A second join needs a second leave.
        pb.join(g(), mb.pid()).unwrap();
        eventually("a sees b's second join", LONG, &|| {
            pa.members(g()).len() == 4
        });
        assert!(pb.leave(g(), mb.pid()));
        assert!(pb.leave(g(), mb.pid()));
        assert!(!pb.leave(g(), mb.pid()), "not joined any more");
        eventually("a and c see b's member leave", LONG, &|| {
            pa.members(g()).len() == 2 && pc.members(g()).len() == 2
        });
        drop(mc);
        eventually("a member that ends leaves everywhere", LONG, &|| {
            pa.members(g()) == vec![ma.pid().clone()] && pb.members(g()) == vec![ma.pid().clone()]
        });
        let other = b.pg_scope("other").unwrap();
        assert!(other.members(g()).is_empty(), "scopes share nothing");
        pb.join(g(), mb.pid()).unwrap();
        eventually("a sees b's member back", LONG, &|| {
            pa.members(g()).len() == 2
        });
        b.stop();
        eventually("a node that stops takes its members", LONG, &|| {
            pa.members(g()) == vec![ma.pid().clone()]
        });
        c.stop();
        a.stop();
    });
}

#[test]
fn global_names_span_smarm_nodes_and_a_conflict_leaves_one_holder() {
    use smarm::dist::{GlobalError, Resolve};
    let epmd = free_port();
    smarm::run(move || {
        let start = |name: &str| cluster_node(name, epmd);
        let (a, b) = (start("gla@localhost"), start("glb@localhost"));
        let (ga, gb) = (a.global().unwrap(), b.global().unwrap());
        assert!(a.ping("glb@localhost"));
        eventually("the two sync", LONG, &|| {
            ga.known_nodes() == ["glb@localhost"] && gb.known_nodes() == ["gla@localhost"]
        });
        // Registered on a, found on b; a call through the name.
        let cashier = a.mailbox();
        ga.register_name(atom("cashier"), cashier.pid()).unwrap();
        assert_eq!(
            gb.whereis_name(atom("cashier")).as_ref(),
            Some(cashier.pid())
        );
        assert_eq!(
            gb.register_name(atom("cashier"), b.mailbox().pid()),
            Err(GlobalError::Taken("cashier".into()))
        );
        // One global name per process, as OTP's global.
        assert_eq!(
            gb.register_name(atom("teller"), cashier.pid()),
            Err(GlobalError::AlreadyNamed {
                pid: cashier.pid().to_string(),
                name: "cashier".into()
            })
        );
        assert_eq!(ga.whereis_name(atom("teller")), None);
        let answer = smarm::spawn(move || {
            let m = cashier.recv_timeout(LONG).unwrap();
            let call = m.gen_call().unwrap();
            cashier.reply(&call.reply_to, atom("paid")).unwrap();
            drop(cashier); // its end removes the name everywhere
        });
        assert_eq!(
            gb.call(atom("cashier"), atom("pay"), LONG).unwrap(),
            atom("paid")
        );
        answer.join().unwrap();
        eventually("an ended holder's name goes", LONG, &|| {
            ga.whereis_name(atom("cashier")).is_none() && gb.whereis_name(atom("cashier")).is_none()
        });
        // Unregister.
        let clerk = b.mailbox();
        gb.register_name(atom("clerk"), clerk.pid()).unwrap();
        assert_eq!(ga.whereis_name(atom("clerk")).as_ref(), Some(clerk.pid()));
        assert_eq!(gb.unregister_name(atom("clerk")), Ok(true));
        assert_eq!(ga.whereis_name(atom("clerk")), None);
        assert_eq!(gb.unregister_name(atom("clerk")), Ok(false));
        // A partition: each side registers the same name; when they meet
        // again the pid on the smaller node name keeps it and the other
        // is told.
        assert!(a.disconnect("glb@localhost"));
        eventually("both see the partition", LONG, &|| {
            ga.known_nodes().is_empty() && gb.known_nodes().is_empty()
        });
        let (on_a, on_b) = (a.mailbox(), b.mailbox());
        ga.register_name_with(atom("leader"), on_a.pid(), Resolve::Notify)
            .unwrap();
        gb.register_name_with(atom("leader"), on_b.pid(), Resolve::Notify)
            .unwrap();
        assert!(b.ping("gla@localhost"));
        eventually("one holder on both sides", LONG, &|| {
            ga.whereis_name(atom("leader")).as_ref() == Some(on_a.pid())
                && gb.whereis_name(atom("leader")).as_ref() == Some(on_a.pid())
        });
        let told = on_b.recv_timeout(LONG).unwrap();
        assert_eq!(
            told.term,
            tuple(vec![atom("global_name_conflict"), atom("leader")])
        );
        assert!(on_a.try_recv().unwrap().is_none(), "the winner is not told");
        a.stop();
        b.stop();
    });
}
