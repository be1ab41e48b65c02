//! Calling an actor-only function from a plain thread panics with a
//! message that names the function the user called (not an internal one)
//! and says what to do; the calls that can block a plain thread instead
//! (channel receives, sockets, `Mutex::lock`) do so.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

use smarm::gen_server::{self, Ctx, Flow, GenServer, InitError, Reply};
use smarm::supervisor::{self, DynamicSpec, DynamicSupervisor, Strategy, SupFlags};
use std::time::Duration;

struct Echo;

struct Worker;
impl smarm::Addressable for Worker {
    type Msg = u8;
}

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

/// The panic message of `f`, which must panic.
fn panic_message(f: impl FnOnce()) -> String {
    let payload =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).expect_err("expected a panic");
    match payload.downcast::<String>() {
        Ok(s) => *s,
        Err(p) => p
            .downcast::<&str>()
            .map(|s| s.to_string())
            .unwrap_or_default(),
    }
}

/// `f` panics naming `name` and pointing at `smarm::run`.
fn assert_names(name: &str, f: impl FnOnce()) {
    let msg = panic_message(f);
    assert!(
        msg.contains(&format!("`{name}`")) && msg.contains("smarm::run"),
        "calling {name} outside an actor said: {msg}"
    );
}

#[test]
fn actor_only_calls_name_themselves_outside_an_actor() {
    assert_names("spawn", || drop(smarm::spawn(|| {})));
    assert_names("try_spawn", || drop(smarm::try_spawn(|| {})));
    assert_names("Builder::spawn", || {
        drop(smarm::Builder::new().spawn(|| {}))
    });
    assert_names("spawn_link", || drop(smarm::spawn_link(|| {})));
    assert_names("self_pid", || {
        let _ = smarm::self_pid();
    });
    assert_names("sleep", || smarm::sleep(Duration::from_millis(1)));
    assert_names("gen_server::start", || {
        drop(gen_server::start::<Echo>(()));
    });
    assert_names("gen_server::start_link", || {
        drop(gen_server::start_link::<Echo>(()));
    });
    assert_names("supervisor::start", || {
        drop(supervisor::start(
            SupFlags::new(Strategy::OneForOne),
            vec![],
        ));
    });
    assert_names("DynamicSupervisor::start", || {
        drop(DynamicSupervisor::start(DynamicSpec::actor(|_: u8| {})));
    });
    assert_names("register", || {
        let (tx, _rx) = smarm::channel::<u8>();
        let _ = smarm::register(smarm::Name::new("misuse"), tx);
    });
    assert_names("install", || {
        let (tx, _rx) = smarm::channel::<u8>();
        let _ = smarm::install::<Worker>(tx);
    });
    assert_names("pg::join", || {
        let (tx, _rx) = smarm::channel::<u8>();
        smarm::pg::join(smarm::pg::Group::new("misuse"), tx);
    });
    let (pid_tx, pid_rx) = std::sync::mpsc::channel();
    smarm::run(move || pid_tx.send(smarm::self_pid()).unwrap());
    let pid = pid_rx.recv().unwrap();
    assert_names("monitor", || drop(smarm::monitor(pid)));
    assert_names("link", || smarm::link(pid));
    assert_names("oneshot", || drop(smarm::channel::oneshot::<u8>()));
    // Open fds of our own (an fd that is not open is EBADF, not a panic).
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two fds pipe writes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    assert_names("io::wait_readable", || {
        drop(smarm::io::wait_readable(fds[0]))
    });
    assert_names("io::wait_writable", || {
        drop(smarm::io::wait_writable(fds[1]))
    });
    // SAFETY: closing the pipe made above.
    unsafe {
        libc::close(fds[0]);
        libc::close(fds[1]);
    }
    assert_names("select", || {
        let (_tx, rx) = smarm::channel::<u8>();
        let _ = smarm::select(&[&rx]);
    });
}

#[test]
fn a_server_call_from_a_plain_thread_names_the_call() {
    // A reference to a server, taken out of the runtime.
    let (out_tx, out) = std::sync::mpsc::channel();
    smarm::run(move || {
        let echo = gen_server::start::<Echo>(()).unwrap();
        assert_eq!(echo.call(1).unwrap(), 1);
        out_tx.send(echo).unwrap();
    });
    let echo = out.recv().unwrap();
    assert_names("GenServerRef::call", || {
        let _ = echo.call(2);
    });
    assert_names("GenServerRef::call_timeout", || {
        let _ = echo.call_timeout(2, Duration::from_secs(1));
    });
    // And names what works there: the call's async twin.
    let msg = panic_message(|| {
        let _ = echo.call(2);
    });
    assert!(msg.contains("GenServerRef::call_async instead"), "{msg}");
    let msg = panic_message(|| {
        let _ = echo.call_timeout(2, Duration::from_secs(1));
    });
    assert!(
        msg.contains("GenServerRef::call_async_timeout instead"),
        "{msg}"
    );
}

#[test]
fn outside_the_runtime_a_misuse_names_what_works_there() {
    let msg = panic_message(|| drop(smarm::spawn(|| {})));
    assert!(msg.contains("RuntimeHandle::spawn"), "{msg}");
    let pid: smarm::Pid = "<0.1.1>".parse().unwrap();
    let msg = panic_message(|| smarm::exit(pid, smarm::ExitSignal::Kill));
    assert!(msg.contains("RuntimeHandle::exit"), "{msg}");
}

#[test]
fn joining_a_running_actor_from_a_plain_thread_points_to_awaiting_the_handle() {
    let runtime = smarm::runtime::init(smarm::runtime::Config::exact(1));
    let (out_tx, out) = std::sync::mpsc::channel();
    let (stop_tx, stop) = smarm::channel::<()>();
    let (stop_too_tx, stop_too) = smarm::channel::<()>();
    let (end_tx, end) = smarm::channel::<()>();
    let running = runtime.start(move || {
        out_tx
            .send(smarm::spawn(move || stop.recv().is_ok()))
            .unwrap();
        out_tx
            .send(smarm::spawn(move || stop_too.recv().is_ok()))
            .unwrap();
        let _ = end.recv(); // the root outlives them: its end would stop them
    });
    let (joined, waiter) = (out.recv().unwrap(), out.recv().unwrap());
    let msg = panic_message(|| {
        let _ = joined.join();
    });
    assert!(msg.contains("JoinHandle::join"), "{msg}");
    assert!(
        msg.contains("handle.await") && msg.contains("smarm::future::block_on(handle)"),
        "{msg}"
    );
    // What it points to works from this plain thread.
    drop((stop_tx, stop_too_tx));
    assert!(smarm::future::block_on(waiter).is_ok());
    drop(end_tx);
    running.join();
}

#[test]
fn receiving_on_a_plain_thread_blocks_it_as_mutex_lock_does() {
    let (tx, rx) = smarm::channel::<u32>();
    let (late_tx, late) = smarm::channel::<u32>();
    let receiver = std::thread::spawn(move || {
        let first = rx.recv().unwrap();
        let timed_out = late.recv_timeout(Duration::from_millis(20));
        let second = late.recv_timeout(Duration::from_secs(30)).unwrap();
        let closed = rx.recv();
        (first, timed_out, second, closed)
    });
    smarm::run(move || {
        smarm::sleep(Duration::from_millis(10)); // the thread is parked by now
        tx.send(1).unwrap();
        smarm::sleep(Duration::from_millis(60));
        late_tx.send(2).unwrap();
        drop(tx); // closing wakes the thread's last recv
    });
    let (first, timed_out, second, closed) = receiver.join().unwrap();
    assert_eq!(first, 1);
    assert_eq!(timed_out, Err(smarm::RecvTimeoutError::Timeout));
    assert_eq!(second, 2);
    assert_eq!(closed, Err(smarm::RecvError));
}
