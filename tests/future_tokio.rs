//! The `tokio` feature: tokio timers, sockets and tasks used from actors
//! through `smarm::future::block_on`, on a tokio runtime smarm starts or
//! one handed in.
#![cfg(feature = "tokio")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::WaitingOn;
use smarm::future::block_on;
use smarm::runtime::{Config, Runtime};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use support::{HangGuard, parked_on, run_with};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[test]
fn ten_thousand_actors_await_tokio_timers_at_once_on_two_schedulers() {
    let _hang = HangGuard::new(Duration::from_secs(120), "10,000 tokio timers");
    let woken = Arc::new(AtomicUsize::new(0));
    let w = woken.clone();
    run_with(2, move || {
        // Every timer fires at one instant, far enough out that all of
        // them are armed first (spawning 10,000 takes well under it).
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        let awaiting = Arc::new(AtomicUsize::new(0));
        let sleepers: Vec<_> = (0..10_000u64)
            .map(|_| {
                let (w, awaiting) = (w.clone(), awaiting.clone());
                smarm::spawn(move || {
                    awaiting.fetch_add(1, Ordering::SeqCst);
                    block_on(tokio::time::sleep_until(deadline));
                    // Nobody woke before every one of them was waiting.
                    assert_eq!(awaiting.load(Ordering::SeqCst), 10_000);
                    w.fetch_add(1, Ordering::SeqCst);
                })
            })
            .collect();
        assert!(
            tokio::time::Instant::now() < deadline,
            "spawning took longer than the timers' wait: the test shows nothing"
        );
        let last = sleepers.last().unwrap().pid();
        assert_eq!(parked_on(last), Some(WaitingOn::Future));
        for s in sleepers {
            s.join().unwrap();
        }
        assert!(tokio::time::Instant::now() >= deadline);
    });
    assert_eq!(woken.load(Ordering::SeqCst), 10_000);
}

#[test]
fn an_actor_awaiting_a_tokio_timer_leaves_its_scheduler_to_others() {
    run_with(1, || {
        let sleeper = smarm::spawn(|| {
            let t0 = Instant::now();
            block_on(tokio::time::sleep(Duration::from_millis(100)));
            t0.elapsed()
        });
        // One scheduler: a 1 ms heartbeat keeps beating meanwhile.
        let worst = support::heartbeat_worst_lateness(30);
        assert!(
            worst < Duration::from_millis(50),
            "the heartbeat stalled {worst:?} behind an await"
        );
        assert!(sleeper.join().unwrap() >= Duration::from_millis(100));
    });
}

#[test]
fn tokio_sockets_between_actors() {
    run_with(2, || {
        let listener = block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        let server = smarm::spawn(move || {
            let mut served = 0;
            while served < 8 {
                let (mut conn, _) = block_on(listener.accept()).unwrap();
                smarm::spawn(move || {
                    let mut buf = [0u8; 64];
                    let n = block_on(conn.read(&mut buf)).unwrap();
                    block_on(conn.write_all(&buf[..n])).unwrap();
                });
                served += 1;
            }
        });
        let clients: Vec<_> = (0..8u8)
            .map(|i| {
                smarm::spawn(move || {
                    let mut s = block_on(tokio::net::TcpStream::connect(addr)).unwrap();
                    block_on(s.write_all(&[i; 16])).unwrap();
                    let mut back = [0u8; 16];
                    block_on(s.read_exact(&mut back)).unwrap();
                    back
                })
            })
            .collect();
        for (i, c) in clients.into_iter().enumerate() {
            assert_eq!(c.join().unwrap(), [i as u8; 16]);
        }
        server.join().unwrap();
    });
}

#[test]
fn tokio_spawn_from_an_actor_runs_on_the_tokio_threads() {
    run_with(2, || {
        let inside = block_on(async {
            tokio::spawn(async { std::thread::current().name().map(str::to_owned) })
                .await
                .unwrap()
        });
        assert_eq!(inside.as_deref(), Some("smarm-tokio"));
        // And from actor code outside any future.
        let task = tokio::spawn(async { std::thread::current().name().map(str::to_owned) });
        assert_eq!(block_on(task).unwrap().as_deref(), Some("smarm-tokio"));
    });
}

#[test]
fn a_handed_in_tokio_runtime_serves_the_awaits() {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("users-tokio")
        .enable_all()
        .build()
        .unwrap();
    let rt = Runtime::new(Config::exact(2))
        .unwrap()
        .with_tokio(tokio.handle().clone())
        .unwrap();
    let name = rt.run(|| {
        block_on(tokio::time::sleep(Duration::from_millis(1)));
        block_on(tokio::spawn(async {
            std::thread::current().name().map(str::to_owned)
        }))
        .unwrap()
    });
    assert_eq!(name.as_deref(), Some("users-tokio"));
    // Once a runtime has one, another is refused with a reason.
    let again = rt.with_tokio(tokio.handle().clone()).unwrap_err();
    assert!(
        again.to_string().contains("already has a tokio runtime"),
        "{again}"
    );
}

#[test]
fn the_tokio_thread_count_is_configurable_before_the_first_await() {
    let rt = Runtime::new(Config::exact(1))
        .unwrap()
        .with_tokio_threads(3)
        .unwrap();
    let names = rt.run(|| {
        block_on(async {
            let tasks: Vec<_> = (0..32)
                .map(|_| {
                    tokio::spawn(async {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        std::thread::current().id()
                    })
                })
                .collect();
            let mut ids = Vec::new();
            for t in tasks {
                ids.push(t.await.unwrap());
            }
            ids.sort_by_key(|id| format!("{id:?}"));
            ids.dedup();
            ids.len()
        })
    });
    assert!(
        (1..=3).contains(&names),
        "{names} tokio threads served 32 tasks"
    );
    assert!(rt.with_tokio_threads(2).is_err(), "started already");
}

#[test]
fn a_stop_drops_a_pending_tokio_future() {
    run_with(2, || {
        let sleeper = smarm::spawn(|| block_on(tokio::time::sleep(Duration::from_secs(3600))));
        assert_eq!(parked_on(sleeper.pid()), Some(WaitingOn::Future));
        let t0 = Instant::now();
        smarm::request_stop(sleeper.pid());
        sleeper.join().unwrap();
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the stop ended the wait at once"
        );
    });
}

#[test]
fn a_blocking_call_from_a_tokio_task_says_it_is_async_code_and_names_the_async_twin() {
    use smarm::gen_server::{self, Ctx, Flow, GenServer, InitError, Reply};
    struct Echo;
    impl GenServer for Echo {
        type Args = ();
        type Call = u32;
        type Reply = u32;
        type Cast = ();
        type Info = ();
        fn init(_: (), _: &mut Ctx<Self>) -> Result<Self, InitError> {
            Ok(Echo)
        }
        fn handle_call(&mut self, n: u32, reply: Reply<u32>, _: &mut Ctx<Self>) -> Flow {
            let _ = reply.reply(n);
            Flow::Continue
        }
    }
    let runtime = Runtime::new(Config::exact(1)).unwrap();
    let (out_tx, out) = std::sync::mpsc::channel();
    let (end_tx, end) = smarm::channel::<()>();
    let running = runtime.start(move || {
        out_tx.send(gen_server::start::<Echo>(()).unwrap()).unwrap();
        let _ = end.recv();
    });
    let echo = out.recv().unwrap();
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let message = tokio.block_on(async {
        let blocking = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| echo.call(1)));
        let payload = blocking.expect_err("a blocking call from a task panics");
        let message = payload.downcast::<String>().map(|s| *s).unwrap_or_default();
        // What it names works there.
        assert_eq!(echo.call_async(2).await, Ok(2));
        message
    });
    assert!(message.contains("`GenServerRef::call`"), "{message}");
    assert!(message.contains("a tokio runtime"), "{message}");
    assert!(
        message.contains("GenServerRef::call_async instead"),
        "{message}"
    );
    drop(end_tx);
    running.join();
}
