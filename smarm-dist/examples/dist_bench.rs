//! The distribution benchmark's smarm side (`benches/dist.sh` runs it
//! against smarm and Erlang peers on loopback).
//!
//! ```sh
//! dist_bench server NAME EPMD_PORT            # registers `echo` and `sink`
//! dist_bench client NAME PEER EPMD_PORT N     # N sends, then N round trips
//! ```
//!
//! The protocol, which `benches/dist.sh`'s Erlang processes speak too:
//! `sink` counts messages and answers `{done, From}` with `{count, N}` to
//! `From`; `echo` answers `{From, T}` with `T` to `From`; the server node
//! answers `erpc:call(Node, erlang, abs, [X])` (an Erlang node has it, a
//! smarm server exports it). The client prints
//! `RESULT peer=<client>-<server> workload=dist_send value=<msgs/s>`,
//! `workload=dist_roundtrip value=<us per round trip>` and
//! `workload=erpc_roundtrip value=<us per call>` (N/100 calls).
//!
//! With `DIST_BENCH_TLS=DIR` (built with `--features tls`) the node speaks
//! TLS with `DIR/node.pem`, `DIR/node.key` and `DIR/ca.pem`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark fails loudly
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

use smarm::dist::term::{FixInteger, Term, atom, tuple};
use smarm::dist::{Node, Pid};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("server") => server(&args[1], args[2].parse().unwrap()),
        Some("client") => client(
            &args[1],
            &args[2],
            args[3].parse().unwrap(),
            args[4].parse().unwrap(),
        ),
        _ => {
            eprintln!("usage: dist_bench server NAME EPMD_PORT | client NAME PEER EPMD_PORT N");
            std::process::exit(2);
        }
    }
}

fn start(name: &str, epmd: u16) -> Node {
    let builder = Node::builder(name).cookie("bench").epmd_port(epmd);
    #[cfg(feature = "tls")]
    let builder = match std::env::var_os("DIST_BENCH_TLS") {
        Some(dir) => {
            let dir = std::path::PathBuf::from(dir);
            let tls = smarm::dist::TlsConfig::from_pem_files(
                dir.join("node.pem"),
                dir.join("node.key"),
                dir.join("ca.pem"),
            )
            .unwrap();
            builder.tls(tls)
        }
        None => builder,
    };
    builder.start().unwrap()
}

fn server(name: &str, epmd: u16) {
    let (name, epmd) = (name.to_string(), epmd);
    smarm::run(move || {
        let node = start(&name, epmd);
        node.export_typed("erlang", "abs", |(x,): (i64,)| {
            Ok::<_, smarm::dist::Raise>(x.abs())
        });
        let sink = node.register("sink").unwrap();
        let echo = node.register("echo").unwrap();
        println!("READY");
        smarm::spawn(move || {
            loop {
                let msg = echo.recv().unwrap();
                if msg.term == atom("stop") {
                    return;
                }
                let Term::Tuple(t) = &msg.term else { continue };
                let from = Pid::from_term(&t.elements[0]).unwrap();
                echo.send(&from, t.elements[1].clone()).unwrap();
            }
        });
        let mut count = 0i32;
        loop {
            let msg = sink.recv().unwrap();
            match &msg.term {
                Term::Tuple(t) if t.elements.first() == Some(&atom("done")) => {
                    let from = Pid::from_term(&t.elements[1]).unwrap();
                    sink.send(
                        &from,
                        tuple(vec![atom("count"), Term::from(FixInteger::from(count))]),
                    )
                    .unwrap();
                    count = 0;
                }
                t if *t == atom("stop") => break,
                _ => count += 1,
            }
        }
        node.send(("echo", node.name()), atom("stop")).unwrap();
        node.stop();
    });
}

fn client(name: &str, peer: &str, epmd: u16, n: usize) {
    let (name, peer) = (name.to_string(), peer.to_string());
    smarm::run(move || {
        let node = start(&name, epmd);
        let me = node.mailbox();
        let label = std::env::var("DIST_BENCH_LABEL").unwrap_or_else(|_| "smarm".into());
        // Warm the connection.
        me.send(
            ("echo", peer.as_str()),
            tuple(vec![me.pid().to_term(), atom("warm")]),
        )
        .unwrap();
        me.recv_timeout(Duration::from_secs(30)).unwrap();

        let payload = tuple(vec![atom("msg"), Term::from(FixInteger::from(42))]);
        let t0 = Instant::now();
        for _ in 0..n {
            me.send(("sink", peer.as_str()), payload.clone()).unwrap();
        }
        me.send(
            ("sink", peer.as_str()),
            tuple(vec![atom("done"), me.pid().to_term()]),
        )
        .unwrap();
        let counted = me.recv_timeout(Duration::from_secs(120)).unwrap().term;
        let secs = t0.elapsed().as_secs_f64();
        assert_eq!(
            counted,
            tuple(vec![atom("count"), Term::from(FixInteger::from(n as i32))])
        );
        println!(
            "RESULT peer={label} workload=dist_send value={:.0} unit=msgs/s",
            n as f64 / secs
        );

        let rounds = n / 10;
        let t0 = Instant::now();
        for _ in 0..rounds {
            me.send(
                ("echo", peer.as_str()),
                tuple(vec![me.pid().to_term(), payload.clone()]),
            )
            .unwrap();
            me.recv_timeout(Duration::from_secs(30)).unwrap();
        }
        let us = t0.elapsed().as_secs_f64() * 1e6 / rounds as f64;
        println!("RESULT peer={label} workload=dist_roundtrip value={us:.1} unit=us");

        let calls = (n / 100).max(1);
        let arg = vec![Term::from(FixInteger::from(-42))];
        let t0 = Instant::now();
        for _ in 0..calls {
            let r = node.erpc_call(&peer, "erlang", "abs", arg.clone(), Duration::from_secs(30));
            assert_eq!(r, Ok(Term::from(FixInteger::from(42))));
        }
        let us = t0.elapsed().as_secs_f64() * 1e6 / calls as f64;
        println!("RESULT peer={label} workload=erpc_roundtrip value={us:.1} unit=us");
        node.stop();
    });
}
