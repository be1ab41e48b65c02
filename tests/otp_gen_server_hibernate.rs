//! gen_server hibernation: `Flow::Hibernate` and `hibernate_after` give
//! the server's stack back between messages; its state, timers, shutdown
//! and crash handling carry on as before.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::WaitingOn;
use smarm::gen_server::{Builder, Ctx, Flow, GenServer, InitError, Reply, StopReason};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{THREADS, parked_on, run_with};

/// Counts casts; hibernates after each when told to; reports terminate.
struct Sleeper {
    count: u64,
    hibernate: bool,
    ticks: u32,
    terminated: Arc<Mutex<Option<StopReason>>>,
}

enum Call {
    Count,
    Ticks,
    ArmTick(Duration),
    Crash,
}

impl GenServer for Sleeper {
    type Args = (bool, Arc<Mutex<Option<StopReason>>>);
    type Call = Call;
    type Reply = u64;
    type Cast = u64;
    type Info = ();

    fn init((hibernate, terminated): Self::Args, _: &mut Ctx<Self>) -> Result<Self, InitError> {
        Ok(Sleeper {
            count: 0,
            hibernate,
            ticks: 0,
            terminated,
        })
    }

    fn handle_call(&mut self, call: Call, reply: Reply<u64>, ctx: &mut Ctx<Self>) -> Flow {
        match call {
            Call::Count => reply.reply(self.count),
            Call::Ticks => reply.reply(u64::from(self.ticks)),
            Call::ArmTick(after) => {
                ctx.send_after(after, ());
                reply.reply(0)
            }
            Call::Crash => panic!("crash after a wake"),
        };
        self.flow()
    }

    fn handle_cast(&mut self, n: u64, _: &mut Ctx<Self>) -> Flow {
        self.count += n;
        self.flow()
    }

    fn handle_info(&mut self, _: (), _: &mut Ctx<Self>) -> Flow {
        self.ticks += 1;
        self.flow()
    }

    fn terminate(&mut self, reason: &StopReason, _: &mut Ctx<Self>) {
        *self.terminated.lock().unwrap() = Some(reason.clone());
    }
}

impl Sleeper {
    fn flow(&self) -> Flow {
        if self.hibernate {
            Flow::Hibernate
        } else {
            Flow::Continue
        }
    }
}

/// Wait (sleeping) until `pid` hibernates (after `hibernate_after`, it
/// first waits for a message with its stack).
fn hibernated(pid: smarm::Pid) -> bool {
    let give_up = Instant::now() + Duration::from_secs(10);
    while parked_on(pid) != Some(WaitingOn::Hibernating) {
        if Instant::now() > give_up {
            return false;
        }
        smarm::sleep(Duration::from_millis(1));
    }
    true
}

#[test]
fn a_server_that_hibernates_after_every_message_keeps_its_state() {
    for threads in THREADS {
        run_with(threads, || {
            let terminated = Arc::new(Mutex::new(None));
            let server = Builder::<Sleeper>::new()
                .start((true, terminated.clone()))
                .unwrap();
            for n in 1..=200 {
                server.cast(n).unwrap();
                if n % 50 == 0 {
                    assert_eq!(server.call(Call::Count), Ok(n * (n + 1) / 2));
                    assert_eq!(parked_on(server.pid()), Some(WaitingOn::Hibernating));
                }
            }
            server.shutdown().unwrap();
            assert_eq!(*terminated.lock().unwrap(), Some(StopReason::Shutdown));
        });
    }
}

#[test]
fn hibernate_after_idle_and_timers_still_fire() {
    run_with(2, || {
        let terminated = Arc::new(Mutex::new(None));
        let server = Builder::<Sleeper>::new()
            .hibernate_after(Duration::from_millis(5))
            .start((false, terminated))
            .unwrap();
        server.cast(2).unwrap();
        assert!(hibernated(server.pid()));
        // A timer armed before the hibernation wakes it with its info.
        server
            .call(Call::ArmTick(Duration::from_millis(20)))
            .unwrap();
        let give_up = Instant::now() + Duration::from_secs(10);
        while server.call(Call::Ticks).unwrap() == 0 {
            assert!(Instant::now() < give_up, "the timer's info never arrived");
            smarm::sleep(Duration::from_millis(5));
        }
        assert_eq!(server.call(Call::Count), Ok(2));
        assert!(hibernated(server.pid()));
        server.shutdown().unwrap();
    });
}

#[test]
fn a_hibernated_server_can_be_stopped_and_its_crash_is_still_a_crash() {
    run_with(2, || {
        let terminated = Arc::new(Mutex::new(None));
        let server = Builder::<Sleeper>::new()
            .start((true, terminated.clone()))
            .unwrap();
        server.cast(1).unwrap();
        assert_eq!(parked_on(server.pid()), Some(WaitingOn::Hibernating));
        let monitor = smarm::monitor(server.pid());
        smarm::request_stop(server.pid());
        assert_eq!(
            monitor.rx.recv().unwrap().reason,
            smarm::DownReason::Stopped
        );
        assert_eq!(*terminated.lock().unwrap(), Some(StopReason::Shutdown));

        let terminated = Arc::new(Mutex::new(None));
        let server = Builder::<Sleeper>::new()
            .start((true, terminated.clone()))
            .unwrap();
        server.cast(1).unwrap();
        assert_eq!(parked_on(server.pid()), Some(WaitingOn::Hibernating));
        let monitor = smarm::monitor(server.pid());
        assert!(server.call(Call::Crash).is_err());
        assert_eq!(monitor.rx.recv().unwrap().reason, smarm::DownReason::Panic);
        assert!(matches!(
            *terminated.lock().unwrap(),
            Some(StopReason::Error(_))
        ));
    });
}
