//! gen_server with a bounded mailbox: casts and infos wait for room,
//! `try_cast` hands the message back, calls wait within their timeout,
//! and exits, `Down`s and timer messages never wait.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::gen_server::{
    Builder, CallError, Ctx, Flow, GenServer, GenServerRef, InitError, Reply, TryCastError,
};
use smarm::{Down, Exit, Receiver, Sender, channel};
use std::time::Duration;
use support::{THREADS, run_with};

/// Records what it handles; `Block` makes it wait on its gate.
struct Log {
    seen: Vec<String>,
    gate: Receiver<()>,
}

enum Call {
    /// Reply, then wait for the gate to open (the server is busy).
    Block,
    Seen,
    Monitor(smarm::Pid),
    Timer(Duration),
}

impl GenServer for Log {
    type Args = (Receiver<()>, bool);
    type Call = Call;
    type Reply = Vec<String>;
    type Cast = u32;
    type Info = &'static str;

    fn init((gate, trap): Self::Args, ctx: &mut Ctx<Self>) -> Result<Self, InitError> {
        if trap {
            ctx.trap_exits();
        }
        Ok(Log {
            seen: Vec::new(),
            gate,
        })
    }

    fn handle_call(&mut self, call: Call, reply: Reply<Vec<String>>, ctx: &mut Ctx<Self>) -> Flow {
        match call {
            Call::Monitor(pid) => {
                ctx.monitor(pid);
                reply.reply(Vec::new());
            }
            Call::Timer(after) => {
                ctx.send_after(after, "tick");
                reply.reply(Vec::new());
            }
            Call::Block => {
                reply.reply(Vec::new());
                let _ = self.gate.recv();
            }
            Call::Seen => {
                reply.reply(self.seen.clone());
            }
        }
        Flow::Continue
    }

    fn handle_cast(&mut self, n: u32, _: &mut Ctx<Self>) -> Flow {
        self.seen.push(format!("cast {n}"));
        smarm::yield_now(); // slower than its client
        Flow::Continue
    }

    fn handle_info(&mut self, info: &'static str, _: &mut Ctx<Self>) -> Flow {
        self.seen.push(format!("info {info}"));
        Flow::Continue
    }

    fn handle_exit(&mut self, _: Exit, _: &mut Ctx<Self>) -> Flow {
        self.seen.push("exit".into());
        Flow::Continue
    }

    fn handle_down(&mut self, _: Down, _: &mut Ctx<Self>) -> Flow {
        self.seen.push("down".into());
        Flow::Continue
    }
}

/// A `Log` with a mailbox of `cap`, and the sender that opens its gate.
fn start_log(cap: usize, trap: bool) -> (GenServerRef<Log>, Sender<()>) {
    let (open, gate) = channel();
    let server = Builder::<Log>::new()
        .mailbox_capacity(cap)
        .start((gate, trap))
        .unwrap();
    (server, open)
}

#[test]
fn a_bounded_mailbox_slows_a_fast_client_to_the_servers_pace() {
    for threads in THREADS {
        run_with(threads, || {
            let (server, _open) = start_log(4, false);
            for n in 0..5_000 {
                server.cast(n).unwrap();
                assert!(server.mailbox_len() <= 4, "past capacity");
            }
            let seen = server.call(Call::Seen).unwrap();
            assert_eq!(seen.len(), 5_000);
            assert_eq!(seen[4_999], "cast 4999", "in order");
            server.shutdown().unwrap();
        });
    }
}

#[test]
fn try_cast_hands_the_message_back_when_the_mailbox_is_full() {
    run_with(2, || {
        let (server, open) = start_log(2, false);
        server.call(Call::Block).unwrap(); // busy until the gate opens
        server.try_cast(1).unwrap();
        server.try_cast(2).unwrap();
        assert_eq!(server.try_cast(3), Err(TryCastError::Full(3)));
        assert_eq!(server.try_info("x"), Err(TryCastError::Full("x")));
        open.send(()).unwrap();
        let seen = server.call(Call::Seen).unwrap();
        assert_eq!(seen, ["cast 1", "cast 2"]);
        server.shutdown().unwrap();
        assert_eq!(server.try_cast(4), Err(TryCastError::Down(4)));
    });
}

#[test]
fn a_parked_cast_goes_in_when_the_server_catches_up() {
    run_with(2, || {
        let (server, open) = start_log(1, false);
        server.call(Call::Block).unwrap();
        server.cast(1).unwrap();
        let client = server.clone();
        let parked = smarm::spawn(move || client.cast(2).unwrap());
        smarm::sleep(Duration::from_millis(20));
        assert!(smarm::is_alive(parked.pid()), "the cast waits for room");
        open.send(()).unwrap();
        parked.join().unwrap();
        assert_eq!(server.call(Call::Seen).unwrap(), ["cast 1", "cast 2"]);
        server.shutdown().unwrap();
    });
}

#[test]
fn a_call_to_a_mailbox_that_stays_full_times_out() {
    run_with(2, || {
        let (server, open) = start_log(1, false);
        server.call(Call::Block).unwrap();
        server.cast(1).unwrap();
        let err = server.call_timeout(Call::Seen, Duration::from_millis(20));
        assert_eq!(err, Err(CallError::Timeout(Duration::from_millis(20))));
        open.send(()).unwrap();
        // The timed-out call never reached the mailbox.
        assert_eq!(server.call(Call::Seen).unwrap(), ["cast 1"]);
        server.shutdown().unwrap();
    });
}

#[test]
fn exits_downs_and_timer_messages_go_past_a_full_mailbox() {
    run_with(2, || {
        let (server, open) = start_log(1, true);
        let (end_linked, linked_rx) = channel::<()>();
        let (end_monitored, monitored_rx) = channel::<()>();
        let (linked_tx, linked_up) = channel::<()>();
        let s = server.pid();
        let linked = smarm::spawn(move || {
            smarm::link(s);
            linked_tx.send(()).unwrap();
            let _ = linked_rx.recv();
        });
        let monitored = smarm::spawn(move || {
            let _ = monitored_rx.recv();
        });
        linked_up.recv().unwrap();
        server.call(Call::Monitor(monitored.pid())).unwrap();
        server.call(Call::Timer(Duration::from_millis(1))).unwrap();
        server.call(Call::Block).unwrap(); // busy until the gate opens
        server.cast(1).unwrap(); // the mailbox is full
        assert_eq!(server.try_cast(2), Err(TryCastError::Full(2)));
        drop(end_linked);
        linked.join().unwrap();
        drop(end_monitored);
        monitored.join().unwrap();
        // The cast, the exit, the down and the timer's wake-up, past the
        // capacity of 1.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while server.mailbox_len() < 4 {
            assert!(
                std::time::Instant::now() < deadline,
                "a signal never arrived"
            );
            smarm::sleep(Duration::from_millis(1));
        }
        open.send(()).unwrap();
        let mut seen = server.call(Call::Seen).unwrap();
        seen.sort();
        assert_eq!(seen, ["cast 1", "down", "exit", "info tick"]);
        server.shutdown().unwrap();
    });
}
