//! A smarm node and a real Erlang node on loopback: the smarm node serves
//! EPMD on a private port (the Erlang node registers with it and starts
//! none), and messages go both ways, by name and by pid, with every kind
//! of term surviving the round trip. A wrong cookie gets no connection on
//! either side; a killed Erlang node is reported down; `net_adm:ping`
//! from Erlang answers `pong`.
//!
//! Ignored without `erl`, which they need and must not pass without:
//! `cargo test -p smarm-dist --test erlang -- --ignored` (as `.ci/run`
//! does, after installing Debian's erlang-base when it is missing).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::dist::term::{
    self, BigInteger, Binary, FixInteger, Float, List, Map, Term, atom, tuple,
};
use smarm::dist::{FromTerm, Node, NodeEvent, Pid, ToTerm};
use smarm::gen_server::{self, Ctx, Flow, GenServer, InitError, Reply};
use std::sync::mpsc;
use std::time::Duration;
use support::terms::*;
use support::{Erl, free_port, require_erl};

const LONG: Duration = Duration::from_secs(30);

/// Run `body` in a smarm runtime on its own thread; returns its join
/// handle.
fn in_runtime(body: impl FnOnce() + Send + 'static) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || smarm::run(body))
}

/// A node on the private EPMD port `epmd`.
fn start_node(name: &str, cookie: &str, epmd: u16) -> Node {
    Node::builder(name)
        .cookie(cookie)
        .epmd_port(epmd)
        .start()
        .unwrap()
}

fn elements(t: &Term) -> &[Term] {
    match t {
        Term::Tuple(t) => &t.elements,
        other => panic!("expected a tuple, got {other:?}"),
    }
}

#[test]
#[ignore = "needs erl on the PATH (apt-get install erlang-base); run: cargo test -p smarm-dist --test erlang -- --ignored"]
fn erlang_sends_by_name_and_smarm_answers_by_pid() {
    require_erl();
    let epmd = free_port();
    let (ready_tx, ready) = mpsc::channel();
    let smarm = in_runtime(move || {
        let node = start_node("smarm1@localhost", "c1", epmd);
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
#[ignore = "needs erl on the PATH (apt-get install erlang-base); run: cargo test -p smarm-dist --test erlang -- --ignored"]
fn smarm_sends_by_name_and_every_term_kind_round_trips() {
    require_erl();
    let epmd = free_port();
    let (ready_tx, ready) = mpsc::channel();
    let (done_tx, done) = mpsc::channel();
    let smarm = in_runtime(move || {
        let node = start_node("smarm2@localhost", "c2", epmd);
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

/// One Rust value of each mapping, beside the Erlang literal it must
/// equal (in the same order in the Erlang node's list below).
type Sample = (Term, Box<dyn Fn(&Term) -> bool + Send>);

fn sample<T: ToTerm + FromTerm + PartialEq + Clone + Send + 'static>(v: T) -> Sample {
    let t = v.to_term();
    (
        t,
        Box::new(move |back| T::from_term(back).as_ref() == Ok(&v)),
    )
}

fn derived_samples() -> Vec<Sample> {
    vec![
        sample(Command::Reset),
        sample(Command::Add(-5)),
        sample(Command::Swap(1, 2)),
        sample(Command::Move { x: 3, y: 4 }),
        sample(Command::Exit),
        sample(Point { x: 1, y: 2 }),
        sample(Span { from: 1, to: 9 }),
        sample(UserId(7)),
        sample(Ping),
        sample(Pair(1, "a".into())),
        sample(Wrapper { inner: vec![Ping] }),
        sample(Order {
            id: 7,
            items: vec!["tea".into(), "cake".into()],
            note: None,
            command: Command::Add(1),
        }),
        sample(Temperature(21.5)),
        sample(String::from("héllo")),
        sample(Ok::<(), String>(())),
        sample(Err::<(), String>("bad".into())),
        sample(u64::MAX),
        sample(vec![1i32, -2, 3]),
        sample((true, 1.5f64)),
        sample(std::collections::BTreeMap::from([(String::from("a"), 1u8)])),
    ]
}

const ERLANG_LITERALS: &str = "[reset, {add,-5}, {swap,1,2}, {move,3,4}, 'EXIT', {point,1,2}, {1,9}, 7, ping, {1,<<\"a\">>}, #{inner => [ping]}, \
     #{id => 7, items => [<<\"tea\">>, <<\"cake\">>], comment => undefined, command => {add,1}}, \
     {celsius,21.5}, unicode:characters_to_binary([104,233,108,108,111]), ok, {error,<<\"bad\">>}, \
     18446744073709551615, [1,-2,3], {true,1.5}, #{<<\"a\">> => 1}]";

#[test]
#[ignore = "needs erl on the PATH (apt-get install erlang-base); run: cargo test -p smarm-dist --test erlang -- --ignored"]
fn derived_terms_equal_erlang_literals_both_ways() {
    require_erl();
    let epmd = free_port();
    let (ready_tx, ready) = mpsc::channel();
    let smarm = in_runtime(move || {
        let node = start_node("smarm9@localhost", "c9", epmd);
        let inbox = node.register("inbox").unwrap();
        ready_tx.send(()).unwrap();
        assert_eq!(inbox.recv_timeout(LONG).unwrap().term, atom("ready"));
        let samples = derived_samples();
        for (i, (t, _)) in samples.iter().enumerate() {
            inbox
                .send(("judge", "erl9@localhost"), (inbox.pid(), i + 1, t))
                .unwrap();
        }
        for (i, (t, decodes)) in samples.iter().enumerate() {
            let (n, equal, literal): (usize, bool, Term) =
                inbox.recv_timeout(LONG).unwrap().decode().unwrap();
            assert_eq!(n, i + 1);
            assert!(
                equal,
                "sample {n}: smarm sent {} where Erlang's literal is {}",
                smarm::dist::term::display(t),
                smarm::dist::term::display(&literal)
            );
            assert!(
                decodes(&literal),
                "sample {n}: Erlang's {} does not decode back",
                smarm::dist::term::display(&literal)
            );
        }
        inbox
            .send(("judge", "erl9@localhost"), atom("stop"))
            .unwrap();
        let _ = inbox.recv_timeout(Duration::from_secs(2));
        node.stop();
    });
    ready.recv_timeout(LONG).unwrap();
    let mut erl = Erl::start(
        "erl9@localhost",
        "c9",
        epmd,
        &format!(
            "register(judge, self()), Expected = {ERLANG_LITERALS}, \
             {{inbox, 'smarm9@localhost'}} ! ready, \
             Loop = fun L() -> receive \
               {{From, I, T}} -> E = lists:nth(I, Expected), From ! {{I, T =:= E, E}}, L(); \
               stop -> ok end end, \
             Loop(), io:format(\"STOPPED~n\"), halt()."
        ),
    );
    assert_eq!(erl.expect("STOPPED", LONG), "");
    assert!(erl.wait(LONG));
    smarm.join().unwrap();
}

#[test]
#[ignore = "needs erl on the PATH (apt-get install erlang-base); run: cargo test -p smarm-dist --test erlang -- --ignored"]
fn a_wrong_cookie_gets_no_connection_on_either_side() {
    require_erl();
    let epmd = free_port();
    let (ready_tx, ready) = mpsc::channel();
    let (erl_up_tx, erl_up) = mpsc::channel::<()>();
    let (checked_tx, checked) = mpsc::channel();
    let smarm = in_runtime(move || {
        let node = start_node("smarm3@localhost", "right", epmd);
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
#[ignore = "needs erl on the PATH (apt-get install erlang-base); run: cargo test -p smarm-dist --test erlang -- --ignored"]
fn a_killed_erlang_node_is_reported_down() {
    require_erl();
    let epmd = free_port();
    let (ready_tx, ready) = mpsc::channel();
    let (up_tx, up) = mpsc::channel();
    let (down_tx, down) = mpsc::channel();
    let smarm = in_runtime(move || {
        let node = start_node("smarm4@localhost", "c4", epmd);
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

#[test]
#[ignore = "needs erl on the PATH (apt-get install erlang-base); run: cargo test -p smarm-dist --test erlang -- --ignored"]
fn erlang_gen_server_calls_and_casts_are_answered_by_a_smarm_mailbox() {
    require_erl();
    let epmd = free_port();
    let (ready_tx, ready) = mpsc::channel();
    let smarm = in_runtime(move || {
        let node = start_node("smarm5@localhost", "c5", epmd);
        let counter = node.register("counter").unwrap();
        ready_tx.send(()).unwrap();
        let mut count = 0i32;
        loop {
            let msg = counter.recv_timeout(LONG).unwrap();
            if let Some(call) = msg.gen_call() {
                let reply = match &call.request {
                    Term::Tuple(t) if t.elements.first() == Some(&atom("add")) => {
                        let Term::FixInteger(n) = &t.elements[1] else {
                            panic!("{t:?}")
                        };
                        count += n.value;
                        atom("ok")
                    }
                    r if *r == atom("get") => Term::from(FixInteger::from(count)),
                    other => panic!("unexpected call {other:?}"),
                };
                counter.reply(&call.reply_to, reply).unwrap();
            } else if msg.gen_cast() == Some(&atom("stop")) {
                break;
            } else {
                panic!("not a gen_server message: {:?}", msg.term);
            }
        }
        node.stop();
    });
    ready.recv_timeout(LONG).unwrap();
    let erl = Erl::start(
        "erl5@localhost",
        "c5",
        epmd,
        "S = {counter, 'smarm5@localhost'}, \
         io:format(\"ADD ~p~n\", [gen_server:call(S, {add, 5})]), \
         io:format(\"ADD ~p~n\", [gen_server:call(S, {add, 37})]), \
         io:format(\"GET ~p~n\", [gen_server:call(S, get)]), \
         io:format(\"MISSING ~p~n\", [catch gen_server:call({missing, 'smarm5@localhost'}, get, 10000)]), \
         gen_server:cast(S, stop), \
         timer:sleep(300), halt().",
    );
    assert_eq!(erl.expect("ADD ", LONG), "ok");
    assert_eq!(erl.expect("ADD ", LONG), "ok");
    assert_eq!(erl.expect("GET ", LONG), "42");
    // A call to a name that is not registered fails at once with noproc
    // (the monitor gen_server:call sets up is answered), not at its timeout.
    let missing = erl.expect("MISSING ", LONG);
    assert!(missing.starts_with("{'EXIT',{noproc,"), "{missing}");
    smarm.join().unwrap();
}

/// The gen_server served to Erlang: its calls, casts and infos are
/// derived terms.
struct Counter {
    count: i64,
    /// Deferred replies: answered once the count reaches their target.
    waiting: Vec<(i64, Reply<i64>)>,
}

#[derive(smarm::dist::Term, Debug)]
enum CounterCall {
    Get,
    Add(i64),
    WaitFor(i64),
    Crash,
}

#[derive(smarm::dist::Term, Debug)]
enum CounterCast {
    Add(i64),
}

#[derive(smarm::dist::Term, Debug)]
struct Bump;

impl Counter {
    fn changed(&mut self) {
        let count = self.count;
        let (done, left) = self.waiting.drain(..).partition(|(n, _)| *n <= count);
        self.waiting = left;
        for (_, reply) in done {
            reply.reply(count);
        }
    }
}

impl GenServer for Counter {
    type Args = ();
    type Call = CounterCall;
    type Reply = i64;
    type Cast = CounterCast;
    type Info = Bump;
    fn init(_: (), _: &mut Ctx<Self>) -> Result<Self, InitError> {
        Ok(Counter {
            count: 0,
            waiting: Vec::new(),
        })
    }
    fn handle_call(&mut self, call: CounterCall, reply: Reply<i64>, _: &mut Ctx<Self>) -> Flow {
        match call {
            CounterCall::Get => drop(reply.reply(self.count)),
            CounterCall::Add(n) => {
                self.count += n;
                reply.reply(self.count);
                self.changed();
            }
            CounterCall::WaitFor(n) => {
                self.waiting.push((n, reply));
                self.changed();
            }
            CounterCall::Crash => panic!("asked to crash"),
        }
        Flow::Continue
    }
    fn handle_cast(&mut self, CounterCast::Add(n): CounterCast, _: &mut Ctx<Self>) -> Flow {
        self.count += n;
        self.changed();
        Flow::Continue
    }
    fn handle_info(&mut self, Bump: Bump, _: &mut Ctx<Self>) -> Flow {
        self.count += 1;
        self.changed();
        Flow::Continue
    }
}

#[test]
#[ignore = "needs erl on the PATH (apt-get install erlang-base); run: cargo test -p smarm-dist --test erlang -- --ignored"]
fn erlang_calls_casts_and_messages_reach_a_served_smarm_gen_server() {
    require_erl();
    let epmd = free_port();
    let (ready_tx, ready) = mpsc::channel();
    let (done_tx, done) = smarm::channel::<()>();
    let smarm = in_runtime(move || {
        let node = start_node("smarm10@localhost", "c10", epmd);
        let counter = gen_server::start::<Counter>(()).unwrap();
        node.serve("counter", counter.clone()).unwrap();
        assert!(
            node.serve("counter", counter).is_err(),
            "a name is served once"
        );
        ready_tx.send(()).unwrap();
        done.recv().unwrap();
        node.stop();
    });
    ready.recv_timeout(LONG).unwrap();
    let mut erl = Erl::start(
        "erl10@localhost",
        "c10",
        epmd,
        "S = {counter, 'smarm10@localhost'}, Parent = self(), \
         spawn(fun() -> Parent ! {waited, gen_server:call(S, {wait_for, 3}, 20000)} end), \
         timer:sleep(100), \
         io:format(\"ADD ~p~n\", [gen_server:call(S, {add, 1})]), \
         gen_server:cast(S, {add, 1}), \
         S ! bump, \
         receive {waited, W} -> io:format(\"WAITED ~p~n\", [W]) after 20000 -> io:format(\"WAITED timeout~n\") end, \
         io:format(\"GET ~p~n\", [gen_server:call(S, get)]), \
         io:format(\"BAD ~p~n\", [gen_server:call(S, {add, not_a_number})]), \
         gen_server:cast(S, not_a_cast), S ! not_an_info, \
         io:format(\"STILL ~p~n\", [gen_server:call(S, get)]), \
         io:format(\"CRASH ~p~n\", [catch gen_server:call(S, crash)]), \
         io:format(\"AFTER ~p~n\", [catch gen_server:call(S, get, 10000)]), \
         halt().",
    );
    assert_eq!(erl.expect("ADD ", LONG), "1");
    // A deferred reply: the server kept the call's slot and answered it
    // when a cast and a plain message had brought the count to 3.
    assert_eq!(erl.expect("WAITED ", LONG), "3");
    assert_eq!(erl.expect("GET ", LONG), "3");
    let bad = erl.expect("BAD ", LONG);
    assert!(
        bad.starts_with("{error,{bad_request,<<\"CounterCall::Add.0: expected an integer"),
        "{bad}"
    );
    // Bad casts and infos are dropped; the server goes on.
    assert_eq!(erl.expect("STILL ", LONG), "3");
    // The server's panic reaches the caller's monitor as its reason, and
    // the name goes with the server.
    let crash = erl.expect("CRASH ", LONG);
    assert!(crash.starts_with("{'EXIT',{panic,"), "{crash}");
    let after = erl.expect("AFTER ", LONG);
    assert!(after.starts_with("{'EXIT',{noproc,"), "{after}");
    assert!(erl.wait(LONG));
    done_tx.send(()).unwrap();
    smarm.join().unwrap();
}

#[test]
#[ignore = "needs erl on the PATH (apt-get install erlang-base); run: cargo test -p smarm-dist --test erlang -- --ignored"]
fn smarm_calls_erlang_and_monitors_work_both_ways() {
    require_erl();
    let epmd = free_port();
    let (ready_tx, ready) = mpsc::channel();
    let (watched_gone_tx, watched_gone) = smarm::channel::<()>();
    let (killed_tx, killed) = smarm::channel::<()>();
    let (done_tx, done) = mpsc::channel();
    let smarm = in_runtime(move || {
        let node = start_node("smarm6@localhost", "c6", epmd);
        let inbox = node.register("inbox").unwrap();
        let watched = node.register("watched").unwrap();
        ready_tx.send(()).unwrap();
        // The Erlang side is up, and its watcher monitors `watched`.
        let mut heard = vec![
            inbox.recv_timeout(LONG).unwrap().term,
            inbox.recv_timeout(LONG).unwrap().term,
        ];
        heard.sort_by_key(|t| t.to_string());
        assert_eq!(heard, [atom("monitoring"), atom("ready")]);
        let erl = "erl6@localhost";

        // rpc through rex: a result, and a bad call.
        let five = node
            .rpc(
                erl,
                "erlang",
                "abs",
                vec![Term::from(FixInteger::from(-5))],
                LONG,
            )
            .unwrap();
        assert_eq!(five, Term::from(FixInteger::from(5)));
        let bad = node
            .rpc(erl, "erlang", "no_such_function", vec![], LONG)
            .unwrap_err();
        assert!(matches!(bad, smarm::dist::CallError::BadRpc(_)), "{bad}");
        // A call to a name nobody has: Down with noproc, well before the timeout.
        let t0 = std::time::Instant::now();
        match node.call(("nobody", erl), atom("hi"), LONG) {
            Err(smarm::dist::CallError::Down { reason }) => assert_eq!(reason, atom("noproc")),
            other => panic!("{other:?}"),
        }
        assert!(t0.elapsed() < LONG / 2);

        // smarm monitors an Erlang process, which exits with a reason.
        let r = inbox.monitor(("holder", erl));
        inbox
            .send(("holder", erl), tuple(vec![atom("die"), atom("boom")]))
            .unwrap();
        let down = inbox.recv_timeout(LONG).unwrap().term;
        assert_eq!(
            down,
            tuple(vec![
                atom("DOWN"),
                r,
                atom("process"),
                tuple(vec![atom("holder"), atom(erl)]),
                atom("boom")
            ])
        );
        // A monitor of a process that is not there fires at once.
        let r = inbox.monitor(("ghost", erl));
        let down = inbox.recv_timeout(LONG).unwrap().term;
        assert_eq!(elements(&down)[1], r);
        assert_eq!(elements(&down)[4], atom("noproc"));

        // Erlang monitors a smarm mailbox: dropping it tells the watcher.
        drop(watched);
        watched_gone.recv_timeout(LONG).unwrap(); // the Erlang watcher said so

        // The Erlang node is killed: a monitor on it fires with noconnection.
        let r = inbox.monitor(("sleeper", erl));
        killed.recv().unwrap();
        let down = inbox.recv_timeout(LONG).unwrap().term;
        assert_eq!(elements(&down)[1], r);
        assert_eq!(elements(&down)[4], atom("noconnection"));
        done_tx.send(()).unwrap();
        node.stop();
    });
    ready.recv_timeout(LONG).unwrap();
    let mut erl = Erl::start(
        "erl6@localhost",
        "c6",
        epmd,
        "register(holder, spawn(fun() -> receive {die, R} -> exit(R) end end)), \
         register(sleeper, spawn(fun() -> receive never -> ok end end)), \
         spawn(fun() -> \
             R = monitor(process, {watched, 'smarm6@localhost'}), \
             {inbox, 'smarm6@localhost'} ! monitoring, \
             receive {'DOWN', R, process, _, Why} -> io:format(\"WATCHED ~p~n\", [Why]) end \
         end), \
         {inbox, 'smarm6@localhost'} ! ready, \
         timer:sleep(60000).",
    );
    assert_eq!(erl.expect("WATCHED ", LONG), "normal");
    watched_gone_tx.send(()).unwrap();
    // Let the sleeper's monitor reach the Erlang node before it dies.
    std::thread::sleep(Duration::from_millis(300));
    erl.kill();
    killed_tx.send(()).unwrap();
    done.recv_timeout(LONG).unwrap();
    smarm.join().unwrap();
}

#[test]
#[ignore = "needs erl on the PATH (apt-get install erlang-base); run: cargo test -p smarm-dist --test erlang -- --ignored"]
fn links_carry_exits_both_ways_and_a_lost_node_kills_its_partners() {
    require_erl();
    let epmd = free_port();
    let (ready_tx, ready) = mpsc::channel();
    let (victim_seen_tx, victim_seen) = smarm::channel::<()>();
    let (kill_now_tx, kill_now) = mpsc::channel();
    let (killed_tx, killed) = smarm::channel::<()>();
    let (done_tx, done) = mpsc::channel();
    let smarm = in_runtime(move || {
        smarm::report::set_handler(|_| {}); // the panics below are on purpose
        let node = start_node("smarm7@localhost", "c7", epmd);
        let inbox = node.register("inbox").unwrap();
        ready_tx.send(()).unwrap();
        let hello = inbox.recv_timeout(LONG).unwrap().term;
        let [_, victim, killer, partner, sleeper] = elements(&hello) else {
            panic!("{hello:?}")
        };
        let pid = |t: &Term| Pid::from_term(t).unwrap();
        let (victim, killer, partner, sleeper) =
            (pid(victim), pid(killer), pid(partner), pid(sleeper));

        // A panicking smarm actor kills the Erlang process linked to it.
        let n = node.clone();
        let a = smarm::spawn(move || {
            n.link(&victim);
            panic!("the smarm side fails");
        });
        assert!(a.join().is_err());
        victim_seen.recv_timeout(LONG).unwrap(); // Erlang saw it die of `panic`

        // An Erlang process links to a smarm actor's mailbox and exits:
        // the actor, trapping exits, receives the reason.
        let n = node.clone();
        let b = smarm::spawn(move || {
            let exits = smarm::trap_exit(true).unwrap();
            let me = n.mailbox();
            me.send(&killer, tuple(vec![atom("link_to"), me.pid().to_term()]))
                .unwrap();
            assert_eq!(me.recv_timeout(LONG).unwrap().term, atom("linked"));
            me.send(&killer, atom("die")).unwrap();
            exits.recv_timeout(LONG).unwrap().reason
        });
        assert_eq!(b.join().unwrap(), smarm::DownReason::Custom("boom".into()));

        // A non-trapping actor linked to an Erlang process that exits is stopped.
        let n = node.clone();
        let c = smarm::spawn(move || {
            n.link(&partner);
            n.send(&partner, atom("die")).unwrap();
            smarm::sleep(LONG);
        });
        assert!(matches!(
            c.join().unwrap_err().reason(),
            smarm::DownReason::Linked(_)
        ));

        // The Erlang node goes away: a linked actor is stopped (noconnection).
        let n = node.clone();
        let d = smarm::spawn(move || {
            n.link(&sleeper);
            smarm::sleep(LONG);
        });
        smarm::sleep(Duration::from_millis(200)); // the LINK is out
        kill_now_tx.send(()).unwrap();
        killed.recv_timeout(LONG).unwrap();
        assert!(matches!(
            d.join().unwrap_err().reason(),
            smarm::DownReason::Linked(_)
        ));
        done_tx.send(()).unwrap();
        node.stop();
        smarm::report::reset_handler();
    });
    ready.recv_timeout(LONG).unwrap();
    let mut erl = Erl::start(
        "erl7@localhost",
        "c7",
        epmd,
        "Victim = spawn(fun() -> receive never -> ok end end), \
         spawn(fun() -> R = monitor(process, Victim), \
             receive {'DOWN', R, _, _, Why} -> io:format(\"VICTIM ~p~n\", [Why]) end end), \
         Killer = spawn(fun() -> receive {link_to, P} -> link(P), P ! linked end, \
             receive die -> exit(boom) end end), \
         Partner = spawn(fun() -> receive die -> exit(boom) end end), \
         Sleeper = spawn(fun() -> receive never -> ok end end), \
         {inbox, 'smarm7@localhost'} ! {ready, Victim, Killer, Partner, Sleeper}, \
         timer:sleep(60000).",
    );
    assert_eq!(erl.expect("VICTIM ", LONG), "panic");
    victim_seen_tx.send(()).unwrap();
    kill_now.recv_timeout(LONG).unwrap();
    erl.kill();
    killed_tx.send(()).unwrap();
    done.recv_timeout(LONG).unwrap();
    smarm.join().unwrap();
}

#[test]
#[ignore = "needs erl on the PATH (apt-get install erlang-base); run: cargo test -p smarm-dist --test erlang -- --ignored"]
fn unlink_and_exit_signals_from_smarm_reach_erlang() {
    require_erl();
    let epmd = free_port();
    let (ready_tx, ready) = mpsc::channel();
    let (done_tx, done) = smarm::channel::<()>();
    let smarm = in_runtime(move || {
        let node = start_node("smarm11@localhost", "c11", epmd);
        let inbox = node.register("inbox").unwrap();
        ready_tx.send(()).unwrap();
        let (p, q): (Pid, Pid) = {
            let (_, p, q): (term::Atom, Pid, Pid) =
                inbox.recv_timeout(LONG).unwrap().decode().unwrap();
            (p, q)
        };

        // Linked, then unlinked (UNLINK_ID): the Erlang side's links are
        // gone, and its exit no longer reaches the smarm actor.
        let n = node.clone();
        let a = smarm::spawn(move || {
            let me = n.mailbox();
            n.link(&p);
            me.send(&p, (atom("check"), me.pid())).unwrap();
            assert_eq!(me.recv_timeout(LONG).unwrap().term, atom("checked"));
            n.unlink(&p);
            n.unlink(&p); // unlinking twice does nothing
            let watch = me.monitor(&p);
            me.send(&p, atom("go")).unwrap();
            let down = me.recv_timeout(LONG).unwrap().term;
            assert_eq!(elements(&down)[1], watch);
            assert_eq!(elements(&down)[4], atom("boom"));
            smarm::sleep(Duration::from_millis(200)); // no exit is on its way
            42
        });
        assert_eq!(
            a.join().unwrap(),
            42,
            "the unlinked actor outlived its partner"
        );

        // exit/2 from a mailbox ends a process that does not trap exits.
        inbox.exit(&q, atom("stop_now")).unwrap();
        done.recv().unwrap();
        node.stop();
    });
    ready.recv_timeout(LONG).unwrap();
    let erl = Erl::start(
        "erl11@localhost",
        "c11",
        epmd,
        "Links = fun() -> {links, L} = process_info(self(), links), length(L) end, \
         P = spawn(fun() -> \
             receive {check, From} -> io:format(\"LINKS1 ~p~n\", [Links()]), From ! checked end, \
             receive go -> io:format(\"LINKS2 ~p~n\", [Links()]) end, \
             exit(boom) end), \
         Q = spawn(fun() -> receive never -> ok end end), \
         spawn(fun() -> R = monitor(process, Q), \
             receive {'DOWN', R, _, _, Why} -> io:format(\"Q ~p~n\", [Why]) end end), \
         {inbox, 'smarm11@localhost'} ! {ready, P, Q}, \
         timer:sleep(60000).",
    );
    assert_eq!(erl.expect("LINKS1 ", LONG), "1");
    assert_eq!(erl.expect("LINKS2 ", LONG), "0");
    assert_eq!(erl.expect("Q ", LONG), "stop_now");
    done_tx.send(()).unwrap();
    smarm.join().unwrap();
}

#[test]
#[ignore = "needs erl on the PATH (apt-get install erlang-base); run: cargo test -p smarm-dist --test erlang -- --ignored"]
fn a_supervisor_restarts_a_child_whose_erlang_partner_dies() {
    use smarm::supervisor::{self, ChildSpec, Strategy, SupFlags};
    require_erl();
    let epmd = free_port();
    let (ready_tx, ready) = mpsc::channel();
    let smarm = in_runtime(move || {
        smarm::report::set_handler(|_| {}); // the child's kills are on purpose
        let node = start_node("smarm12@localhost", "c12", epmd);
        let inbox = node.register("inbox").unwrap();
        ready_tx.send(()).unwrap();
        assert_eq!(inbox.recv_timeout(LONG).unwrap().term, atom("ready"));
        let (started_tx, started) = smarm::channel::<Pid>();
        let n = node.clone();
        let child = move || {
            // Each start asks the Erlang pool for a worker and links to it.
            let me = n.mailbox();
            me.send(("pool", "erl12@localhost"), (atom("give"), me.pid()))
                .unwrap();
            let worker: Pid = me.recv_timeout(LONG).unwrap().decode().unwrap();
            n.link(&worker);
            started_tx.send(worker).unwrap();
            smarm::sleep(LONG);
        };
        let flags = SupFlags::new(Strategy::OneForOne).intensity(5, Duration::from_secs(60));
        let sup = supervisor::start(flags, vec![ChildSpec::actor("partnered", child)]).unwrap();
        let first = started.recv_timeout(LONG).unwrap();
        let child_pid = sup.which_children().unwrap()[0].pid;
        // The Erlang worker dies: the link kills the child, and the
        // supervisor restarts it, which links to a new worker.
        inbox.send(&first, atom("die")).unwrap();
        let second = started.recv_timeout(LONG).unwrap();
        assert_ne!(first, second);
        let restarted = sup.which_children().unwrap()[0].pid;
        assert_ne!(restarted, child_pid, "a new child");
        sup.shutdown().unwrap();
        inbox
            .send(("pool", "erl12@localhost"), atom("stop"))
            .unwrap();
        let _ = inbox.recv_timeout(Duration::from_secs(2));
        node.stop();
        smarm::report::reset_handler();
    });
    ready.recv_timeout(LONG).unwrap();
    let mut erl = Erl::start(
        "erl12@localhost",
        "c12",
        epmd,
        "register(pool, self()), {inbox, 'smarm12@localhost'} ! ready, \
         Loop = fun L(N) -> receive \
             {give, To} -> W = spawn(fun() -> receive die -> exit(boom) end end), \
                 To ! W, L(N + 1); \
             stop -> N end end, \
         io:format(\"GAVE ~p~n\", [Loop(0)]), halt().",
    );
    assert_eq!(erl.expect("GAVE ", LONG), "2");
    assert!(erl.wait(LONG));
    smarm.join().unwrap();
}

#[test]
#[ignore = "needs erl on the PATH (apt-get install erlang-base); run: cargo test -p smarm-dist --test erlang -- --ignored"]
fn a_long_named_smarm_node_talks_with_a_long_named_erlang_node() {
    require_erl();
    let epmd = free_port();
    let (ready_tx, ready) = mpsc::channel();
    let (go_tx, go) = smarm::channel::<()>();
    let smarm = in_runtime(move || {
        let node = start_node("smarm13@127.0.0.1", "c13", epmd);
        assert_eq!(node.name(), "smarm13@127.0.0.1");
        let inbox = node.register("inbox").unwrap();
        ready_tx.send(()).unwrap();
        go.recv().unwrap();
        // This node connects (the Erlang node has not talked to it).
        inbox
            .send(("echo", "erl13@127.0.0.1"), (inbox.pid(), atom("ping")))
            .unwrap();
        assert_eq!(inbox.recv_timeout(LONG).unwrap().term, atom("ping"));
        assert_eq!(node.nodes(), ["erl13@127.0.0.1"]);
        inbox
            .send(("echo", "erl13@127.0.0.1"), atom("stop"))
            .unwrap();
        let _ = inbox.recv_timeout(Duration::from_secs(2));
        node.stop();
    });
    ready.recv_timeout(LONG).unwrap();
    let mut erl = Erl::start_long(
        "erl13@127.0.0.1",
        "c13",
        epmd,
        "register(echo, self()), io:format(\"READY~n\"), \
         Loop = fun L() -> receive {From, T} -> From ! T, L(); stop -> ok end end, \
         Loop(), io:format(\"NODES ~p~n\", [nodes()]), halt().",
    );
    assert_eq!(erl.expect("READY", LONG), "");
    go_tx.send(()).unwrap();
    assert_eq!(erl.expect("NODES ", LONG), "['smarm13@127.0.0.1']");
    assert!(erl.wait(LONG));
    smarm.join().unwrap();
}

#[test]
#[ignore = "needs erl on the PATH (apt-get install erlang-base); run: cargo test -p smarm-dist --test erlang -- --ignored"]
fn net_adm_ping_from_erlang_is_pong_and_the_node_stays_connected() {
    require_erl();
    let epmd = free_port();
    let (ready_tx, ready) = mpsc::channel();
    let (done_tx, done) = smarm::channel::<()>();
    let smarm = in_runtime(move || {
        let node = start_node("smarm14@localhost", "c14", epmd);
        ready_tx.send(()).unwrap();
        done.recv().unwrap();
        // And the other way: smarm pings the Erlang node.
        assert!(node.ping("erl14@localhost"), "erl14 answered pang");
        node.stop();
    });
    ready.recv_timeout(LONG).unwrap();
    let mut erl = Erl::start(
        "erl14@localhost",
        "c14",
        epmd,
        "io:format(\"PING ~p~n\", [net_adm:ping('smarm14@localhost')]), \
         io:format(\"NODES ~p~n\", [nodes()]), \
         receive stop -> ok after 30000 -> ok end, halt().",
    );
    assert_eq!(erl.expect("PING ", LONG), "pong");
    assert_eq!(erl.expect("NODES ", LONG), "[smarm14@localhost]");
    // Ping answered, the connection stays: no disconnect followed.
    done_tx.send(()).unwrap();
    smarm.join().unwrap();
    erl.kill();
}

/// A process with a `seq_trace` token sends with the `_TT` control
/// messages (REG_SEND_TT by name, SEND_SENDER_TT by pid): both arrive,
/// carrying the token, whose label is the one Erlang set. (Receiving the
/// untraced reply clears the Erlang process's token, as `seq_trace`
/// does, so it sets it again before the second send.)
#[test]
#[ignore = "needs erl on the PATH (apt-get install erlang-base); run: cargo test -p smarm-dist --test erlang -- --ignored"]
fn messages_sent_with_a_seq_trace_token_arrive_with_it() {
    require_erl();
    let epmd = free_port();
    let (ready_tx, ready) = mpsc::channel();
    let smarm = in_runtime(move || {
        let node = start_node("smarm_tt@localhost", "ctt", epmd);
        let echo = node.register("echo").unwrap();
        ready_tx.send(()).unwrap();
        let label = |m: &smarm::dist::Message| {
            let token = m
                .trace_token
                .as_deref()
                .expect("the message keeps its token");
            // {Flags, Label, Serial, From, LastCnt}
            elements(token)[1].clone()
        };
        let by_name = echo.recv_timeout(LONG).unwrap();
        assert_eq!(label(&by_name), Term::from(FixInteger::from(17)));
        let [from, what] = elements(&by_name.term) else {
            panic!("{:?}", by_name.term)
        };
        assert_eq!(what, &atom("by_name"));
        let from = Pid::from_term(from).unwrap();
        echo.send(&from, tuple(vec![atom("me"), echo.pid().to_term()]))
            .unwrap();
        let by_pid = echo.recv_timeout(LONG).unwrap();
        assert_eq!(by_pid.term, atom("by_pid"));
        assert_eq!(
            by_pid.from.as_ref(),
            Some(&from),
            "SEND_SENDER_TT names its sender"
        );
        assert_eq!(label(&by_pid), Term::from(FixInteger::from(17)));
        echo.send(&from, atom("ok")).unwrap();
        assert_eq!(
            node.stats()
                .ignored_controls
                .load(std::sync::atomic::Ordering::Relaxed),
            0
        );
        node.stop();
    });
    ready.recv_timeout(LONG).unwrap();
    let erl = Erl::start(
        "erl_tt@localhost",
        "ctt",
        epmd,
        "seq_trace:set_token(label, 17), \
         {echo, 'smarm_tt@localhost'} ! {self(), by_name}, \
         receive {me, P} -> seq_trace:set_token(label, 17), P ! by_pid after 20000 -> io:format(\"GOT timeout~n\") end, \
         receive ok -> io:format(\"GOT ok~n\") after 20000 -> io:format(\"GOT lost~n\") end, \
         timer:sleep(200), halt().",
    );
    assert_eq!(erl.expect("GOT ", LONG), "ok");
    smarm.join().unwrap();
}

/// Exports `shop:price/2` (typed), `shop:fail/1`, `shop:slow/1`,
/// `shop:note/1` and `shop:notes/0` on `node`.
fn export_shop(node: &Node) {
    use smarm::dist::Raise;
    use std::sync::{Arc, Mutex};
    node.export_typed(
        "shop",
        "price",
        |(item, qty): (term::Atom, u32)| match item.name.as_str() {
            "apple" => Ok(qty * 3),
            _ => Err(Raise::throw((atom("unknown_item"), Term::from(item)))),
        },
    );
    node.export("shop", "fail", |args| match &args[..] {
        [how] if *how == atom("error") => Err(Raise::error(atom("boom"))),
        [how] if *how == atom("exit") => Err(Raise::exit(atom("bye"))),
        _ => panic!("asked to fail with {args:?}"),
    });
    node.export_typed("shop", "slow", |(ms,): (u64,)| {
        smarm::sleep(Duration::from_millis(ms));
        Ok(atom("done"))
    });
    let notes = Arc::new(Mutex::new(Vec::<Term>::new()));
    let kept = notes.clone();
    node.export("shop", "note", move |args| {
        kept.lock().unwrap().extend(args);
        Ok(atom("ok"))
    });
    node.export("shop", "notes", move |_| {
        Ok(Term::from(List::from(notes.lock().unwrap().clone())))
    });
}

/// `erpc` and `rpc` from Erlang into a smarm node's exported functions,
/// with Erlang's shapes for values, each exception class, `undef`, a
/// panic and a timeout; casts both ways in; multicalls; a `spawn/4` of a
/// function nobody exported, which exits `undef` as on BEAM; and a
/// `spawn_link` whose link carries the function's exact exit reason; and
/// `rpc:call(N, erlang, node, [])`, which every node answers.
#[test]
#[ignore = "needs erl on the PATH (apt-get install erlang-base); run: cargo test -p smarm-dist --test erlang -- --ignored"]
fn erpc_and_rpc_from_erlang_run_exported_functions() {
    require_erl();
    let epmd = free_port();
    let (ready_tx, ready) = mpsc::channel();
    let smarm = in_runtime(move || {
        let node = start_node("smarm_rpc@localhost", "crpc", epmd);
        export_shop(&node);
        let done = node.register("done").unwrap();
        ready_tx.send(()).unwrap();
        assert_eq!(done.recv_timeout(LONG * 2).unwrap().term, atom("done"));
        node.stop();
    });
    ready.recv_timeout(LONG).unwrap();
    let erl = Erl::start(
        "erl_rpc@localhost",
        "crpc",
        epmd,
        "N = 'smarm_rpc@localhost', \
         T = fun(F) -> try F() catch C:E -> {C, E} end end, \
         R1 = erpc:call(N, shop, price, [apple, 2]), \
         R2 = T(fun() -> erpc:call(N, shop, price, [pear, 1]) end), \
         R3 = T(fun() -> erpc:call(N, shop, fail, [error]) end), \
         R4 = T(fun() -> erpc:call(N, shop, fail, [exit]) end), \
         R5 = T(fun() -> erpc:call(N, shop, nope, [1]) end), \
         R6 = T(fun() -> erpc:call(N, shop, slow, [3000], 100) end), \
         {error, {exception, {panic, _}, [{shop, fail, 1, []}]}} = T(fun() -> erpc:call(N, shop, fail, [panic]) end), \
         R7 = rpc:call(N, shop, price, [apple, 3]), \
         R8 = rpc:call(N, shop, price, [pear, 1]), \
         R9 = rpc:call(N, shop, fail, [error]), \
         R10 = rpc:call(N, shop, nope, []), \
         R11 = rpc:call(N, shop, slow, [3000], 100), \
         R12 = T(fun() -> erpc:call(N, shop, price, [apple, many]) end), \
         ok = erpc:cast(N, shop, note, [one]), \
         true = rpc:cast(N, shop, note, [two]), \
         R13 = erpc:multicall([N, N], shop, price, [apple, 1]), \
         R14 = rpc:multicall([N], shop, price, [apple, 4]), \
         Poll = fun P(0) -> timeout; P(K) -> case lists:sort(erpc:call(N, shop, notes, [])) of [one, two] = L -> L; _ -> timer:sleep(100), P(K - 1) end end, \
         R15 = Poll(100), \
         {Pid, M} = spawn_monitor(N, shop, nope, [x]), \
         R16 = receive {'DOWN', M, process, Pid, Why} -> Why after 10000 -> no_down end, \
         process_flag(trap_exit, true), \
         L = spawn_link(N, shop, fail, [exit]), \
         R17 = receive {'EXIT', L, LR} -> LR after 10000 -> no_exit end, \
         R18 = rpc:call(N, erlang, node, []), \
         io:format(\"GOT ~w~n\", [[R1, R2, R3, R4, R5, R6, R7, R8, R9, R10, R11, R12, R13, R14, R15, R16, R17, R18]]), \
         {done, N} ! done, \
         timer:sleep(200), halt().",
    );
    let got = erl.expect("GOT ", LONG * 2);
    let expected = [
        "6",
        "{throw,{unknown_item,pear}}",
        "{error,{exception,boom,[{shop,fail,1,[]}]}}",
        "{exit,{exception,bye}}",
        "{error,{exception,undef,[{shop,nope,[1],[]}]}}",
        "{error,{erpc,timeout}}",
        "9",
        "{unknown_item,pear}",
        "{badrpc,{'EXIT',{boom,[{shop,fail,1,[]}]}}}",
        "{badrpc,{'EXIT',{undef,[{shop,nope,[],[]}]}}}",
        "{badrpc,timeout}",
        "{error,{exception,function_clause,[{shop,price,2,[]}]}}",
        "[{ok,3},{ok,3}]",
        "{[12],[]}",
        "[one,two]",
        "{undef,[{shop,nope,[x],[]}]}",
        "bye",
        "smarm_rpc@localhost",
    ];
    assert_eq!(got, format!("[{}]", expected.join(",")));
    smarm.join().unwrap();
}

/// A smarm node calls Erlang functions with `erpc`: a value, each
/// exception class, `undef`, and a timeout.
#[test]
#[ignore = "needs erl on the PATH (apt-get install erlang-base); run: cargo test -p smarm-dist --test erlang -- --ignored"]
fn smarm_calls_erlang_with_erpc() {
    use smarm::dist::ErpcError;
    require_erl();
    let epmd = free_port();
    let (ready_tx, ready) = mpsc::channel();
    let smarm = in_runtime(move || {
        let node = start_node("smarm_erpc@localhost", "cerpc", epmd);
        let inbox = node.register("inbox").unwrap();
        ready_tx.send(()).unwrap();
        assert_eq!(inbox.recv_timeout(LONG).unwrap().term, atom("up"));
        let erl = "erl_erpc@localhost";
        let n = |v: i32| Term::from(FixInteger::from(v));
        let list = |v: Vec<Term>| Term::from(List::from(v));
        let call = |m: &str, f: &str, args: Vec<Term>| node.erpc_call(erl, m, f, args, LONG);
        assert_eq!(
            call("lists", "sum", vec![list(vec![n(1), n(2), n(3)])]),
            Ok(n(6))
        );
        assert_eq!(
            call("erlang", "throw", vec![atom("x")]),
            Err(ErpcError::Throw(atom("x")))
        );
        assert_eq!(
            call("erlang", "exit", vec![atom("bye")]),
            Err(ErpcError::Exit(atom("bye")))
        );
        match call("erlang", "error", vec![atom("boom")]) {
            Err(ErpcError::Error { reason, .. }) => assert_eq!(reason, atom("boom")),
            other => panic!("{other:?}"),
        }
        match call("no_such_module", "f", vec![]) {
            Err(ErpcError::Error { reason, .. }) => assert_eq!(reason, atom("undef")),
            other => panic!("{other:?}"),
        }
        let slow = node.erpc_call(
            erl,
            "timer",
            "sleep",
            vec![n(3000)],
            Duration::from_millis(100),
        );
        assert_eq!(slow, Err(ErpcError::Timeout(Duration::from_millis(100))));
        // A node that is not there.
        assert_eq!(
            node.erpc_call("nobody@localhost", "lists", "sum", vec![], LONG),
            Err(ErpcError::Noconnection)
        );
        node.send(("inbox", erl), atom("done")).unwrap();
        node.stop();
    });
    ready.recv_timeout(LONG).unwrap();
    let erl = Erl::start(
        "erl_erpc@localhost",
        "cerpc",
        epmd,
        "register(inbox, self()), \
         {inbox, 'smarm_erpc@localhost'} ! up, \
         receive done -> io:format(\"GOT done~n\") after 30000 -> io:format(\"GOT timeout~n\") end, \
         halt().",
    );
    assert_eq!(erl.expect("GOT ", LONG * 2), "done");
    smarm.join().unwrap();
}

/// Polls `cond` every 10 ms until it holds, failing after [`LONG`] with
/// `what`.
fn eventually(what: &str, cond: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + LONG;
    while !cond() {
        assert!(std::time::Instant::now() < deadline, "never: {what}");
        smarm::sleep(Duration::from_millis(10));
    }
}

/// One `pg` group with a member on an Erlang node and one on each of two
/// smarm nodes: all three see the three, a smarm node that stops takes
/// its member off Erlang's view, and a killed Erlang node's member goes
/// from the smarm node's.
#[test]
#[ignore = "needs erl on the PATH (apt-get install erlang-base); run: cargo test -p smarm-dist --test erlang -- --ignored"]
fn a_pg_group_spans_erlang_and_smarm_nodes() {
    require_erl();
    let epmd = free_port();
    let (ready_tx, ready) = mpsc::channel();
    let (kill_tx, kill) = mpsc::channel();
    let smarm = in_runtime(move || {
        let a = start_node("pga@localhost", "cpg", epmd);
        let b = start_node("pgb@localhost", "cpg", epmd);
        let (pa, pb) = (a.pg().unwrap(), b.pg().unwrap());
        let inbox = a.register("inbox").unwrap();
        let (ma, mb) = (a.mailbox(), b.mailbox());
        pa.join(atom("g"), ma.pid()).unwrap();
        pb.join(atom("g"), mb.pid()).unwrap();
        ready_tx.send(()).unwrap();
        let up = inbox.recv_timeout(LONG).unwrap();
        assert_eq!(up.term, atom("up"));
        assert!(b.ping("erl_pg@localhost"), "b reaches the Erlang node");
        assert!(a.ping("pgb@localhost"), "a reaches b");
        let mine = |p: &Pid| p.node() != "erl_pg@localhost";
        for (name, scope) in [("a", &pa), ("b", &pb)] {
            eventually(&format!("{name} sees the Erlang member"), || {
                let m = scope.members(atom("g"));
                m.len() == 3 && m.iter().filter(|p| !mine(p)).count() == 1
            });
        }
        inbox.send(up.from.as_ref().unwrap(), atom("go")).unwrap();
        assert_eq!(inbox.recv_timeout(LONG).unwrap().term, atom("saw_three"));
        b.stop();
        assert_eq!(inbox.recv_timeout(LONG).unwrap().term, atom("saw_two"));
        kill_tx.send(()).unwrap();
        eventually("a killed Erlang node's member leaves", || {
            pa.members(atom("g")) == vec![ma.pid().clone()]
        });
        a.stop();
    });
    ready.recv_timeout(LONG).unwrap();
    let mut erl = Erl::start(
        "erl_pg@localhost",
        "cpg",
        epmd,
        "{ok, _} = pg:start_link(), ok = pg:join(g, self()), \
         register(me, self()), \
         {inbox, 'pga@localhost'} ! up, \
         Wait = fun W(N, 0) -> io:format(\"GOT ~p~n\", [pg:get_members(g)]); \
                    W(N, T) -> case length(pg:get_members(g)) of N -> ok; _ -> timer:sleep(20), W(N, T - 1) end end, \
         receive go -> ok after 30000 -> io:format(\"GOT no go~n\") end, \
         Wait(3, 1500), io:format(\"GOT 3~n\"), {inbox, 'pga@localhost'} ! saw_three, \
         Wait(2, 1500), io:format(\"GOT 2~n\"), {inbox, 'pga@localhost'} ! saw_two, \
         receive never -> ok end.",
    );
    assert_eq!(erl.expect("GOT ", LONG * 2), "3");
    assert_eq!(erl.expect("GOT ", LONG * 2), "2");
    kill.recv_timeout(LONG * 2).unwrap();
    erl.kill();
    smarm.join().unwrap();
}

/// Global names across an Erlang node and a smarm node: each finds the
/// other's name and calls through `{global, Name}`; then a partition in
/// which both register `leader` (with `random_notify_name`), healed by a
/// ping. The pid on the smaller node name keeps the name on both sides
/// and the other holder is told. `smarm_name` sorts before the Erlang
/// node's name (smarm resolves and wins) or after it (Erlang does).
fn global_names_with_erlang(smarm_name: &'static str, erl_name: &'static str) {
    use smarm::dist::Resolve;
    require_erl();
    let epmd = free_port();
    let smarm_wins = smarm_name < erl_name;
    let (ready_tx, ready) = mpsc::channel();
    let (parted_tx, parted) = mpsc::channel::<()>();
    let smarm = in_runtime(move || {
        let node = start_node(smarm_name, "cglobal", epmd);
        let global = node.global().unwrap();
        let inbox = node.register("inbox").unwrap();
        ready_tx.send(()).unwrap();
        let up = inbox.recv_timeout(LONG).unwrap();
        let erl = up.from.clone().unwrap();
        eventually("the two sync", || global.known_nodes() == [erl_name]);
        // A name of ours, answering calls.
        let server = node.mailbox();
        global
            .register_name(atom("smarm_name"), server.pid())
            .unwrap();
        let serving = smarm::spawn(move || {
            let m = server.recv_timeout(LONG).unwrap();
            let call = m.gen_call().unwrap();
            server.reply(&call.reply_to, atom("pong")).unwrap();
            server
        });
        // Erlang's name, and a call through it.
        eventually("Erlang's name arrives", || {
            global.whereis_name(atom("erl_name")).as_ref() == Some(&erl)
        });
        assert_eq!(
            global.call(atom("erl_name"), atom("ask"), LONG).unwrap(),
            atom("answered")
        );
        inbox.send(&erl, atom("go")).unwrap();
        let _server = serving.join().unwrap();
        // Erlang parts and registers `leader`; so do we.
        parted.recv_timeout(LONG).unwrap();
        eventually("the partition", || global.known_nodes().is_empty());
        let ours = node.mailbox();
        global
            .register_name_with(atom("leader"), ours.pid(), Resolve::Notify)
            .unwrap();
        assert!(node.ping(erl_name));
        eventually("one holder after the heal", || {
            let holder = global.whereis_name(atom("leader"));
            if smarm_wins {
                holder.as_ref() == Some(ours.pid())
            } else {
                holder.is_some_and(|p| p.node() == erl_name)
            }
        });
        if !smarm_wins {
            let told = ours.recv_timeout(LONG).unwrap();
            assert_eq!(
                told.term,
                tuple(vec![atom("global_name_conflict"), atom("leader")])
            );
        }
        assert_eq!(inbox.recv_timeout(LONG).unwrap().term, atom("done"));
        node.stop();
    });
    ready.recv_timeout(LONG).unwrap();
    let erl = Erl::start(
        erl_name,
        "cglobal",
        epmd,
        &format!(
            "S = '{smarm_name}', \
             yes = global:register_name(erl_name, self()), \
             {{inbox, S}} ! up, \
             receive {{'$gen_call', From, ask}} -> gen_server:reply(From, answered) after 30000 -> ok end, \
             receive go -> ok after 30000 -> ok end, \
             Found = global:whereis_name(smarm_name), \
             io:format(\"GOT ~p~n\", [is_pid(Found) andalso node(Found) =:= S]), \
             io:format(\"GOT ~p~n\", [gen_server:call({{global, smarm_name}}, ping, 10000)]), \
             erlang:disconnect_node(S), \
             Leader = spawn(fun() -> receive {{global_name_conflict, leader}} -> \
                     receive {{check, P}} -> P ! {{told, told}} end; \
                 {{check, P}} -> P ! {{told, not_told}} end, \
                 receive stop -> ok end end), \
             yes = global:register_name(leader, Leader, fun global:random_notify_name/3), \
             io:format(\"GOT parted~n\"), \
             Wait = fun W(0) -> io:format(\"GOT never reconnected~n\"); \
                        W(N) -> case lists:member(S, nodes()) of \
                                  true -> ok; false -> timer:sleep(50), W(N - 1) end end, \
             Wait(600), \
             ok = global:sync(), \
             L = global:whereis_name(leader), \
             io:format(\"GOT ~p~n\", [L =:= Leader orelse node(L)]), \
             Leader ! {{check, self()}}, \
             receive {{told, T}} -> io:format(\"GOT ~p~n\", [T]) end, \
             {{inbox, S}} ! done, \
             timer:sleep(1000), Leader ! stop."
        ),
    );
    assert_eq!(
        erl.expect("GOT ", LONG),
        "true",
        "Erlang finds smarm's name"
    );
    assert_eq!(
        erl.expect("GOT ", LONG),
        "pong",
        "a call to {{global, smarm_name}}"
    );
    assert_eq!(erl.expect("GOT ", LONG), "parted");
    parted_tx.send(()).unwrap();
    let (holder, told) = (erl.expect("GOT ", LONG), erl.expect("GOT ", LONG));
    if smarm_wins {
        assert_eq!((holder.as_str(), told.as_str()), (smarm_name, "told"));
    } else {
        assert_eq!((holder.as_str(), told.as_str()), ("true", "not_told"));
    }
    smarm.join().unwrap();
}

#[test]
#[ignore = "needs erl on the PATH (apt-get install erlang-base); run: cargo test -p smarm-dist --test erlang -- --ignored"]
fn global_names_cross_and_smarm_wins_a_conflict() {
    global_names_with_erlang("aglob@localhost", "eglob@localhost");
}

#[test]
#[ignore = "needs erl on the PATH (apt-get install erlang-base); run: cargo test -p smarm-dist --test erlang -- --ignored"]
fn global_names_cross_and_erlang_wins_a_conflict() {
    global_names_with_erlang("zglob@localhost", "eglob2@localhost");
}
