//! An application run as a child process: SIGTERM stops its tree in
//! reverse start order and exits 0; a stop that outlasts the deadline
//! exits 3; a top supervisor that gives up exits 1; a failed start exits
//! 2; `run` returns the root's value. Each child is this test binary run
//! again with `SMARM_APP_CHILD` naming the scenario.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

use smarm::application::{AppExit, Application};
use smarm::gen_server::{self, Ctx, Flow, GenServer, InitError, Reply, StartError, StopReason};
use smarm::supervisor::{self, ChildSpec, Restart, Shutdown, Strategy, SupFlags};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "SMARM_APP_CHILD";

/// A worker that reports its start and its stop on stdout.
fn worker(n: u32, ignore_stop: bool) -> ChildSpec {
    ChildSpec::actor(format!("worker-{n}"), move || {
        struct Stopped(u32);
        impl Drop for Stopped {
            fn drop(&mut self) {
                println!("stop {}", self.0);
                std::io::stdout().flush().unwrap();
            }
        }
        let _report = Stopped(n);
        println!("start {n}");
        std::io::stdout().flush().unwrap();
        if ignore_stop {
            // Catch the stop and go on waiting: the deadline has to pass.
            let _ = std::panic::catch_unwind(|| smarm::sleep(Duration::from_secs(3600)));
            smarm::stop::clear_stop();
            smarm::sleep(Duration::from_secs(3600));
        }
        loop {
            smarm::sleep(Duration::from_secs(3600));
        }
    })
    .shutdown(Shutdown::Timeout(Duration::from_secs(5)))
}

/// A server working through casts, 1 ms each, that reports at its
/// `terminate` how many it handled.
struct Backlog(u32);

const BACKLOG: gen_server::ServerName<Backlog> = gen_server::ServerName::new("backlog");

impl GenServer for Backlog {
    type Args = ();
    type Call = ();
    type Reply = ();
    type Cast = ();
    type Info = ();
    fn init(_: (), _: &mut Ctx<Self>) -> Result<Self, InitError> {
        Ok(Backlog(0))
    }
    fn handle_call(&mut self, _: (), reply: Reply<()>, _: &mut Ctx<Self>) -> Flow {
        reply.reply(());
        Flow::Continue
    }
    fn handle_cast(&mut self, _: (), _: &mut Ctx<Self>) -> Flow {
        smarm::sleep(Duration::from_millis(1));
        self.0 += 1;
        Flow::Continue
    }
    fn terminate(&mut self, _: &StopReason, _: &mut Ctx<Self>) {
        println!("stop backlog after {}", self.0);
        std::io::stdout().flush().unwrap();
    }
}

/// The child side: run the scenario, exit with the application's status.
fn child(scenario: &str) -> ! {
    let app = Application::new()
        .config(smarm::runtime::Config::exact(2))
        .shutdown_timeout(Duration::from_millis(500))
        .kill_grace(Duration::from_secs(2));
    let exit = match scenario {
        "drain" => app
            .before_stop(|| {
                // The tree still serves while this runs: a worker is alive.
                println!("drain begins");
                smarm::sleep(Duration::from_millis(100));
                println!("drain done");
                std::io::stdout().flush().unwrap();
            })
            .run(|| {
                let top = supervisor::start(
                    SupFlags::new(Strategy::OneForOne),
                    vec![worker(1, false), worker(2, false)],
                );
                println!("ready");
                std::io::stdout().flush().unwrap();
                top
            }),
        "graceful" | "stuck" => {
            let stuck = scenario == "stuck";
            app.run(move || {
                let top = supervisor::start(
                    SupFlags::new(Strategy::OneForOne),
                    vec![worker(1, false), worker(2, stuck), worker(3, false)],
                );
                println!("ready");
                std::io::stdout().flush().unwrap();
                top
            })
        }
        "gives_up" => app.run(|| {
            supervisor::start(
                SupFlags::new(Strategy::OneForOne).intensity(2, Duration::from_secs(10)),
                vec![
                    ChildSpec::actor("crasher", || {
                        smarm::sleep(Duration::from_millis(5));
                        panic!("crashes every time");
                    })
                    .restart(Restart::Permanent),
                ],
            )
        }),
        "drain_mailboxes" => app
            .shutdown_timeout(Duration::from_secs(20))
            .drain_on_stop()
            .run(|| {
                let top = supervisor::start(
                    SupFlags::new(Strategy::OneForOne),
                    vec![
                        ChildSpec::named_server::<Backlog>("backlog", BACKLOG, || ())
                            .shutdown(Shutdown::Timeout(Duration::from_secs(15))),
                    ],
                );
                // A backlog the signal finds half handled (1 ms a cast).
                let backlog = gen_server::whereis_server(BACKLOG).unwrap();
                for _ in 0..500 {
                    backlog.cast(()).unwrap();
                }
                println!("ready");
                std::io::stdout().flush().unwrap();
                top
            }),
        "gives_up_linked" => {
            // The OTP idiom: the top supervisor linked to the root. As
            // `main() -> AppExit` would, report the exit (one line on
            // stderr) before exiting with its status.
            let exit = app.run(|| {
                supervisor::start_link(
                    SupFlags::new(Strategy::OneForOne).intensity(2, Duration::from_secs(10)),
                    vec![ChildSpec::actor("crasher", || panic!("crashes every time"))],
                )
            });
            println!("returned {exit:?}");
            std::io::stdout().flush().unwrap();
            let code = exit.code();
            let _ = std::process::Termination::report(exit);
            println!("exit {code}");
            std::io::stdout().flush().unwrap();
            std::process::exit(i32::from(code));
        }
        "start_fails" => app.run(|| Err(StartError::SupervisorDown)),
        other => panic!("unknown scenario {other}"),
    };
    println!("exit {}", exit.code());
    std::io::stdout().flush().unwrap();
    std::process::exit(i32::from(exit.code()));
}

/// Run this binary as the child for `scenario`; `signal` is sent after
/// it prints "ready". Returns its stdout lines and exit status.
fn run_child(test: &str, scenario: &str, signal: Option<libc::c_int>) -> (Vec<String>, i32) {
    let (lines, code, _) = run_child_with_stderr(test, scenario, signal);
    (lines, code)
}

/// [`run_child`], with the child's stderr lines too.
fn run_child_with_stderr(
    test: &str,
    scenario: &str,
    signal: Option<libc::c_int>,
) -> (Vec<String>, i32, Vec<String>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, scenario)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The child's reports (its supervisor gives up on purpose) go through
    // this test's captured output: shown only if the test fails.
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let errors = std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in stderr.lines().map_while(Result::ok) {
            eprintln!("child: {line}");
            lines.push(line);
        }
        lines
    });
    let started = Instant::now();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    for line in stdout.lines() {
        let line = line.unwrap();
        if line.ends_with("ready")
            && let Some(sig) = signal
        {
            // Let the children print their starts (ChildSpec::actor
            // returns once each runs), then signal.
            std::thread::sleep(Duration::from_millis(50));
            // SAFETY: signalling our own child process.
            assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
        }
        lines.push(line);
    }
    let status = child.wait().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the child took {:?}",
        started.elapsed()
    );
    (lines, status.code().unwrap_or(-1), errors.join().unwrap())
}

/// The lines that matter (the harness prints its own around them).
fn events(lines: &[String]) -> Vec<&str> {
    lines
        .iter()
        // The harness prints "test <name> ... " before the first line.
        .map(|l| l.rsplit("... ").next().unwrap_or(l))
        .filter(|l| {
            ["start ", "stop ", "exit ", "drain "]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .collect()
}

#[test]
fn sigterm_stops_the_tree_in_reverse_start_order_and_exits_zero() {
    if let Ok(s) = std::env::var(CHILD_ENV) {
        child(&s);
    }
    let test = "sigterm_stops_the_tree_in_reverse_start_order_and_exits_zero";
    let (lines, code) = run_child(test, "graceful", Some(libc::SIGTERM));
    assert_eq!(
        events(&lines),
        [
            "start 1", "start 2", "start 3", "stop 3", "stop 2", "stop 1", "exit 0"
        ],
        "{lines:?}"
    );
    assert_eq!(code, 0);
}

#[test]
fn a_before_stop_hook_drains_while_the_tree_serves_then_the_tree_stops_in_order() {
    if let Ok(s) = std::env::var(CHILD_ENV) {
        child(&s);
    }
    let test = "a_before_stop_hook_drains_while_the_tree_serves_then_the_tree_stops_in_order";
    let (lines, code) = run_child(test, "drain", Some(libc::SIGTERM));
    assert_eq!(
        events(&lines),
        [
            "start 1",
            "start 2",
            "drain begins",
            "drain done",
            "stop 2",
            "stop 1",
            "exit 0"
        ],
        "{lines:?}"
    );
    assert_eq!(code, 0);
}

#[test]
fn with_drain_on_stop_sigterm_lets_servers_handle_their_mailboxes_first() {
    if let Ok(s) = std::env::var(CHILD_ENV) {
        child(&s);
    }
    let test = "with_drain_on_stop_sigterm_lets_servers_handle_their_mailboxes_first";
    let (lines, code) = run_child(test, "drain_mailboxes", Some(libc::SIGTERM));
    assert_eq!(
        events(&lines),
        ["stop backlog after 500", "exit 0"],
        "{lines:?}"
    );
    assert_eq!(code, 0);
}

#[test]
fn sigint_is_a_shutdown_too() {
    if let Ok(s) = std::env::var(CHILD_ENV) {
        child(&s);
    }
    let (lines, code) = run_child("sigint_is_a_shutdown_too", "graceful", Some(libc::SIGINT));
    assert_eq!(events(&lines).last(), Some(&"exit 0"), "{lines:?}");
    assert_eq!(code, 0);
}

#[test]
fn a_shutdown_past_its_deadline_stops_the_rest_and_exits_three() {
    if let Ok(s) = std::env::var(CHILD_ENV) {
        child(&s);
    }
    let test = "a_shutdown_past_its_deadline_stops_the_rest_and_exits_three";
    let (lines, code) = run_child(test, "stuck", Some(libc::SIGTERM));
    let ev = events(&lines);
    // Worker 3 stops in order; worker 2 ignores its stop, so the deadline
    // passes and everything left is stopped.
    assert_eq!(
        ev[..4],
        ["start 1", "start 2", "start 3", "stop 3"],
        "{lines:?}"
    );
    assert!(
        ev.contains(&"stop 2") && ev.contains(&"stop 1"),
        "{lines:?}"
    );
    assert_eq!(ev.last(), Some(&"exit 3"), "{lines:?}");
    assert_eq!(code, 3);
}

#[test]
fn a_top_supervisor_that_gives_up_exits_one() {
    if let Ok(s) = std::env::var(CHILD_ENV) {
        child(&s);
    }
    let (lines, code) = run_child("a_top_supervisor_that_gives_up_exits_one", "gives_up", None);
    assert_eq!(events(&lines), ["exit 1"], "{lines:?}");
    assert_eq!(code, 1);
}

#[test]
fn a_linked_top_supervisor_that_gives_up_returns_failed_and_says_so() {
    const TEST: &str = "a_linked_top_supervisor_that_gives_up_returns_failed_and_says_so";
    if let Ok(s) = std::env::var(CHILD_ENV) {
        child(&s);
    }
    let (lines, code, errors) = run_child_with_stderr(TEST, "gives_up_linked", None);
    assert!(
        lines
            .iter()
            .any(|l| l.ends_with("returned Failed(Shutdown)")),
        "Application::run returned its AppExit: {lines:?}"
    );
    assert_eq!(events(&lines), ["exit 1"], "{lines:?}");
    assert_eq!(code, 1);
    let said: Vec<_> = errors
        .iter()
        .filter(|l| l.starts_with("smarm: the top supervisor gave up"))
        .collect();
    assert_eq!(said.len(), 1, "one line says so: {errors:?}");
    // The supervisor's own end is no crash: only its child's three are
    // reported (the start and two restarts; the third failure gives up).
    let crashes = errors.iter().filter(|l| l.contains("CRASH REPORT")).count();
    assert_eq!(crashes, 3, "{errors:?}");
}

#[test]
fn a_failed_start_exits_two() {
    if let Ok(s) = std::env::var(CHILD_ENV) {
        child(&s);
    }
    let (lines, code) = run_child("a_failed_start_exits_two", "start_fails", None);
    assert_eq!(events(&lines), ["exit 2"], "{lines:?}");
    assert_eq!(code, 2);
}

/// Held by the tests that run an application in this process: an
/// application listens for SIGTERM and SIGINT, which one listener at a time
/// may do, so two at once (parallel test threads) would fail to start.
static IN_PROCESS_APPLICATION: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn run_returns_the_roots_value() {
    let _one_at_a_time = IN_PROCESS_APPLICATION
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    assert_eq!(smarm::run(|| 6 * 7), 42);
    let exit: AppExit = Application::new()
        .config(smarm::runtime::Config::exact(1))
        .run(|| {
            let top = supervisor::start(SupFlags::new(Strategy::OneForOne), vec![])?;
            let inner = top.clone();
            smarm::spawn(move || inner.shutdown().unwrap());
            Ok(top)
        });
    assert!(matches!(exit, AppExit::Stopped), "{exit:?}");
    assert_eq!(exit.code(), 0);
}

/// A runtime handed in is the one the application runs on (the config
/// set before it is not used), and `config` after it replaces it.
#[test]
fn an_application_runs_on_a_runtime_handed_in() {
    let _one_at_a_time = IN_PROCESS_APPLICATION
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let schedulers_seen = |app: Application| {
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let s = seen.clone();
        let exit = app.run(move || {
            s.store(
                smarm::snapshot().schedulers.len(),
                std::sync::atomic::Ordering::SeqCst,
            );
            let top = supervisor::start(SupFlags::new(Strategy::OneForOne), vec![])?;
            let inner = top.clone();
            smarm::spawn(move || inner.shutdown().unwrap());
            Ok(top)
        });
        assert!(matches!(exit, AppExit::Stopped), "{exit:?}");
        seen.load(std::sync::atomic::Ordering::SeqCst)
    };
    let handed_in = smarm::runtime::init(smarm::runtime::Config::exact(1));
    let app = Application::new()
        .config(smarm::runtime::Config::exact(2))
        .runtime(handed_in);
    assert_eq!(schedulers_seen(app.clone()), 1);
    assert_eq!(
        schedulers_seen(app.config(smarm::runtime::Config::exact(2))),
        2
    );
}
