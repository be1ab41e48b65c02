//! Async code calling actors: `GenServerRef::call_async`, a `Receiver` as
//! a future and a stream, bounded `send_async`, an awaited `JoinHandle`,
//! from tokio tasks and plain threads, with no actor on the caller's side
//! and no `tokio` feature.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::gen_server::{self, CallError, Ctx, Flow, GenServer, GenServerRef, InitError, Reply};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

enum Req {
    Echo(u64),
    /// Sleep, then answer; records whether the caller still waited.
    Slow(Duration, u64),
    Crash,
}

struct Server {
    late_replies_taken: Arc<AtomicUsize>,
}

impl GenServer for Server {
    type Args = Arc<AtomicUsize>;
    type Call = Req;
    type Reply = u64;
    type Cast = ();
    type Info = ();

    fn init(late: Arc<AtomicUsize>, _: &mut Ctx<Self>) -> Result<Self, InitError> {
        Ok(Server {
            late_replies_taken: late,
        })
    }

    fn handle_call(&mut self, req: Req, reply: Reply<u64>, _: &mut Ctx<Self>) -> Flow {
        match req {
            Req::Echo(n) => {
                reply.reply(n);
            }
            Req::Slow(d, n) => {
                smarm::sleep(d);
                if reply.reply(n) {
                    self.late_replies_taken.fetch_add(1, Ordering::SeqCst);
                }
            }
            Req::Crash => panic!("the server failed mid-call"),
        }
        Flow::Continue
    }
}

/// A smarm runtime on its own thread serving one `Server` until the
/// returned guard is dropped; the server's address for outside callers.
struct Served {
    server: GenServerRef<Server>,
    late: Arc<AtomicUsize>,
    stop: Option<smarm::Sender<()>>,
    runtime: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.stop.take();
        self.runtime.take().unwrap().join().unwrap();
    }
}

fn serve() -> Served {
    let late = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel();
    let (stop_tx, stop_rx) = smarm::channel::<()>();
    let l = late.clone();
    let runtime = std::thread::spawn(move || {
        smarm::runtime::init(smarm::runtime::Config::exact(2)).run(move || {
            let server = gen_server::start::<Server>(l).unwrap();
            tx.send(server).unwrap();
            let _ = stop_rx.recv();
        })
    });
    Served {
        server: rx.recv().unwrap(),
        late,
        stop: Some(stop_tx),
        runtime: Some(runtime),
    }
}

fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn assert_send<T: Send>(t: T) -> T {
    t
}

#[test]
fn call_async_from_tokio_tasks_gets_the_replies() {
    let served = serve();
    let tokio = tokio_runtime();
    let sum = tokio.block_on(async {
        let tasks: Vec<_> = (0..1_000u64)
            .map(|i| {
                let server = served.server.clone();
                tokio::spawn(async move { server.call_async(Req::Echo(i)).await.unwrap() })
            })
            .collect();
        let mut sum = 0;
        for t in tasks {
            sum += t.await.unwrap();
        }
        sum
    });
    assert_eq!(sum, (0..1_000u64).sum::<u64>());
}

#[test]
fn call_async_times_out_and_a_late_reply_is_discarded() {
    let served = serve();
    let tokio = tokio_runtime();
    let t0 = Instant::now();
    let r = tokio.block_on(served.server.call_async_timeout(
        Req::Slow(Duration::from_millis(200), 1),
        Duration::from_millis(20),
    ));
    assert_eq!(r, Err(CallError::Timeout(Duration::from_millis(20))));
    assert!(
        t0.elapsed() < Duration::from_millis(200),
        "gave up at its timeout"
    );
    // The server answers later; nobody takes the reply.
    assert_eq!(
        tokio.block_on(served.server.call_async(Req::Echo(5))),
        Ok(5),
        "the next call gets its own answer, not the late one"
    );
    assert_eq!(
        served.late.load(Ordering::SeqCst),
        0,
        "the late reply reached no caller"
    );
    // Off tokio, the timeout works too (smarm's timer thread).
    let r = smarm::future::block_on(served.server.call_async_timeout(
        Req::Slow(Duration::from_millis(100), 2),
        Duration::from_millis(10),
    ));
    assert_eq!(r, Err(CallError::Timeout(Duration::from_millis(10))));
}

#[test]
fn call_async_to_a_server_that_dies_mid_call_is_server_down() {
    let served = serve();
    let tokio = tokio_runtime();
    let t0 = Instant::now();
    let r = tokio.block_on(served.server.call_async(Req::Crash));
    assert_eq!(r, Err(CallError::ServerDown));
    assert!(
        t0.elapsed() < Duration::from_secs(4),
        "failed fast, not at the 5 s timeout"
    );
    // And to one that is already down: at once.
    let r = tokio.block_on(served.server.call_async(Req::Echo(1)));
    assert_eq!(r, Err(CallError::ServerDown));
}

#[test]
fn the_async_futures_are_send() {
    let served = serve();
    let fut = assert_send(served.server.call_async(Req::Echo(3)));
    assert_eq!(smarm::future::block_on(fut), Ok(3));
    let (tx, mut rx) = smarm::channel::<u32>();
    tx.send(4).unwrap();
    assert_eq!(smarm::future::block_on(assert_send(rx.recv_async())), Ok(4));
    let (btx, _brx) = smarm::channel::bounded::<u32>(1);
    smarm::future::block_on(assert_send(btx.send_async(1))).unwrap();
}

#[test]
fn a_receiver_is_a_future_and_a_stream_for_tokio_tasks() {
    let tokio = tokio_runtime();
    let (tx, mut rx) = smarm::channel::<u64>();
    let (done_tx, done_rx) = mpsc::channel();
    // An actor sends; a tokio task receives.
    let runtime = std::thread::spawn(move || {
        smarm::run(move || {
            for i in 0..100 {
                tx.send(i).unwrap();
                if i % 10 == 0 {
                    smarm::sleep(Duration::from_millis(1));
                }
            }
        })
    });
    let received = tokio.block_on(async move {
        let first = rx.recv_async().await.unwrap();
        let mut rest = Vec::new();
        // The rest as a stream, until every sender is gone.
        while let Some(v) =
            std::future::poll_fn(|cx| futures_core::Stream::poll_next(Pin::new(&mut rx), cx)).await
        {
            rest.push(v);
        }
        done_tx.send(()).unwrap();
        (first, rest)
    });
    runtime.join().unwrap();
    done_rx.recv().unwrap();
    assert_eq!(received.0, 0);
    assert_eq!(received.1, (1..100).collect::<Vec<_>>());
}

#[test]
fn send_async_waits_for_room_and_a_dropped_send_takes_its_message_back() {
    let tokio = tokio_runtime();
    let (tx, rx) = smarm::channel::bounded::<u32>(2);
    let received = Arc::new(std::sync::Mutex::new(Vec::new()));
    let r = received.clone();
    let go = Arc::new(AtomicBool::new(false));
    let g = go.clone();
    let consumer = std::thread::spawn(move || {
        smarm::run(move || {
            while !g.load(Ordering::Acquire) {
                smarm::sleep(Duration::from_millis(1));
            }
            while let Ok(v) = rx.recv() {
                r.lock().unwrap().push(v);
            }
        })
    });
    tokio.block_on(async {
        tx.send_async(1).await.unwrap();
        tx.send_async(2).await.unwrap();
        // Full: a send that gives up takes its message back out.
        let gave_up = tokio::time::timeout(Duration::from_millis(20), tx.send_async(99)).await;
        assert!(gave_up.is_err(), "the channel was full");
        assert_eq!(tx.queued_len(), 2);
        // A send that waits goes in once the consumer makes room.
        let waiting = tokio::spawn({
            let tx = tx.clone();
            async move { tx.send_async(3).await }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        go.store(true, Ordering::Release);
        waiting.await.unwrap().unwrap();
    });
    drop(tx);
    consumer.join().unwrap();
    assert_eq!(
        *received.lock().unwrap(),
        vec![1, 2, 3],
        "99 was taken back"
    );
}

#[test]
fn a_join_handle_is_awaited_from_a_tokio_task() {
    let tokio = tokio_runtime();
    let (tx, rx) = mpsc::channel();
    let (go_tx, go_rx) = smarm::channel::<()>();
    let (stop_tx, stop_rx) = smarm::channel::<()>();
    let runtime = std::thread::spawn(move || {
        smarm::run(move || {
            let worker = smarm::spawn(move || {
                go_rx.recv().unwrap();
                6 * 7
            });
            let failing = smarm::spawn(|| -> u32 { panic!("no value") });
            tx.send((worker, failing)).unwrap();
            // Alive until the test is done: once the root exits, actors
            // waiting on messages from outside the runtime are swept.
            let _ = stop_rx.recv();
        })
    });
    let (worker, failing) = rx.recv().unwrap();
    let out = tokio.block_on(async move {
        let joined = tokio::spawn(async move { worker.await });
        tokio::time::sleep(Duration::from_millis(10)).await;
        go_tx.send(()).unwrap();
        (joined.await.unwrap(), failing.await)
    });
    drop(stop_tx);
    runtime.join().unwrap();
    assert_eq!(out.0.unwrap(), 42);
    assert!(out.1.unwrap_err().to_string().contains("no value"));
}

/// `select`-free: a future that needs both halves of a call pair, used to
/// check the generic `call_async` on a hand-written server.
#[test]
fn the_generic_call_async_serves_a_hand_written_server() {
    let (tx, rx) = smarm::channel::<(u32, Reply<u32>)>();
    let server = std::thread::spawn(move || {
        while let Ok((n, reply)) = rx.recv() {
            reply.reply(n + 1);
        }
    });
    let fut: Pin<Box<dyn Future<Output = _> + Send>> = Box::pin(gen_server::call_async(
        |reply| (1, reply),
        |req| std::future::ready(tx.send(req).map_err(|e| e.0)),
        Duration::from_secs(5),
    ));
    assert_eq!(smarm::future::block_on(fut), Ok(2));
    drop(tx);
    server.join().unwrap();
}

const SERVER: gen_server::ServerName<Server> = gen_server::ServerName::new("async-calls-server");

#[test]
fn tokio_tasks_reach_a_supervised_server_by_name_across_its_restarts() {
    use smarm::supervisor::{self, ChildSpec, Strategy, SupFlags};
    let tokio = tokio_runtime();
    let rt = smarm::runtime::init(smarm::runtime::Config::exact(2));
    let (stop_tx, stop_rx) = smarm::channel::<()>();
    let late = Arc::new(AtomicUsize::new(0));
    let (ready_tx, ready_rx) = mpsc::channel();
    let running = rt.start(move || {
        let _sup = supervisor::start_link(
            SupFlags::new(Strategy::OneForOne).intensity(10, Duration::from_secs(5)),
            vec![ChildSpec::named_server::<Server>(
                "server",
                SERVER,
                move || late.clone(),
            )],
        )
        .unwrap();
        ready_tx.send(()).unwrap();
        let _ = stop_rx.recv(); // until the test lets the run end
        "root done"
    });
    let handle = running.handle();
    ready_rx.recv().unwrap();
    let outcome = tokio.block_on(async move {
        let call = |req| {
            let handle = handle.clone();
            async move {
                // Looked up per request: a restarted server is found again.
                for _ in 0..1_000 {
                    if let Some(server) = gen_server::whereis_server_in(&handle, SERVER) {
                        return server.call_async(req).await;
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                panic!("the server never came back");
            }
        };
        let first = gen_server::whereis_server_in(&handle, SERVER)
            .unwrap()
            .pid();
        assert_eq!(call(Req::Echo(1)).await, Ok(1));
        assert_eq!(call(Req::Crash).await, Err(CallError::ServerDown));
        // Until the supervisor has restarted it, a call may still reach the
        // dying incarnation and fail as ServerDown (as Erlang's would);
        // nothing else.
        let mut down = 0;
        while call(Req::Echo(0)).await != Ok(0) {
            down += 1;
            assert!(down < 1_000, "the server never came back");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        for i in 0..50 {
            assert_eq!(call(Req::Echo(i)).await, Ok(i), "a call after the restart");
        }
        let second = gen_server::whereis_server_in(&handle, SERVER)
            .unwrap()
            .pid();
        assert_ne!(first, second, "a new incarnation holds the name");
        // A plain actor spawned from here, awaited from here.
        let spawned = handle.spawn(smarm::self_pid);
        assert!(spawned.await.is_ok());
        drop(stop_tx);
        running.await
    });
    assert_eq!(outcome, "root done");
    // The run is over: spawning through the handle is refused, not lost.
    let refused = rt.handle().try_spawn(|| ());
    assert!(
        matches!(refused, Err(smarm::SpawnError::NotRunning)),
        "{refused:?}"
    );
}

#[test]
fn a_started_runtime_reraises_its_roots_panic_at_join() {
    let rt = smarm::runtime::init(smarm::runtime::Config::exact(1));
    let running = rt.start(|| -> u32 { panic!("the root failed") });
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| running.join()));
    let payload = caught.unwrap_err();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"the root failed"));
    // The runtime can run again.
    assert_eq!(rt.run(|| 5), 5);
}
