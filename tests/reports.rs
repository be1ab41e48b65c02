//! Crash and supervisor reports (`smarm::report`): a panicking actor is
//! reported once, by pid, label, registered name and parent, with where it
//! panicked; a panic it catches is not; supervisors report restarts and
//! giving up; a plain thread's panic still reaches the hook installed
//! before the runtime's.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

mod support;

use smarm::gen_server::{self, Ctx, Flow, GenServer, InitError, Reply, ServerName};
use smarm::report::{Report, SupervisorAction};
use smarm::supervisor::{self, ChildSpec, Strategy, SupFlags};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use support::run_with;

/// Every report of this test binary (the handler is process-wide; each
/// test picks its own by the labels and names it used).
fn reports() -> &'static Mutex<Vec<Report>> {
    static SEEN: OnceLock<Arc<Mutex<Vec<Report>>>> = OnceLock::new();
    SEEN.get_or_init(|| {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        smarm::report::set_handler(move |r| {
            // Shown with a failing test's captured output.
            eprintln!("{r}");
            sink.lock().unwrap().push(r.clone());
        });
        seen
    })
}

fn crashes_where(
    f: impl Fn(&smarm::report::CrashReport) -> bool,
) -> Vec<smarm::report::CrashReport> {
    reports()
        .lock()
        .unwrap()
        .iter()
        .filter_map(|r| match r {
            Report::Crash(c) if f(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

struct Exploder;

impl GenServer for Exploder {
    type Args = ();
    type Call = ();
    type Reply = ();
    type Cast = ();
    type Info = ();

    fn init(_: (), _: &mut Ctx<Self>) -> Result<Self, InitError> {
        Ok(Exploder)
    }

    fn handle_call(&mut self, _: (), reply: Reply<()>, _: &mut Ctx<Self>) -> Flow {
        let _ = reply.reply(());
        Flow::Continue
    }

    fn handle_cast(&mut self, _: (), _: &mut Ctx<Self>) -> Flow {
        panic!("exploder went off");
    }
}

const EXPLODER: ServerName<Exploder> = ServerName::new("reports-exploder");

#[test]
fn a_crash_report_names_the_actor_its_registered_name_parent_and_location() {
    reports();
    run_with(2, || {
        let me = smarm::self_pid();
        let server = gen_server::start_named(EXPLODER, ()).unwrap();
        let down = smarm::monitor(server.pid());
        server.cast(()).unwrap();
        down.rx.recv_timeout(Duration::from_secs(10)).unwrap();
        // Pids are per runtime (other tests' runtimes reuse them): pick
        // this test's report by its unique name.
        let found = crashes_where(|c| c.names == ["reports-exploder"]);
        assert_eq!(found.len(), 1, "one report per crash: {found:?}");
        let c = &found[0];
        assert_eq!(c.pid, server.pid());
        assert_eq!(c.parent, Some(me));
        assert_eq!(c.message, "exploder went off");
        let at = c.location.as_deref().unwrap();
        assert!(at.starts_with("tests/reports.rs:"), "location: {at}");
        // The last message it handled, as OTP's reports give it: the
        // callback and the message's type.
        assert_eq!(c.last_message.as_deref(), Some("handle_cast: a ()"));
        let text = Report::Crash(c.clone()).to_string();
        assert!(text.contains("[reports-exploder]") && text.contains("panic: exploder went off"));
        assert!(text.contains("last message: handle_cast: a ()"), "{text}");
    });
}

/// A typed actor whose `Explode` message panics.
#[derive(smarm::Actor)]
#[actor(name = "reports-typed")]
enum Typed {
    Fine(u32),
    Explode { why: String },
}

struct TypedState;

impl smarm::actor::Handler<Typed> for TypedState {
    fn handle(&mut self, msg: Typed) -> Flow {
        match msg {
            Typed::Fine(n) => {
                assert!(n < 100, "a fine message");
                Flow::Continue
            }
            Typed::Explode { why } => panic!("{why}"),
        }
    }
}

#[test]
fn a_typed_actor_crash_report_names_the_variant_it_was_handling() {
    reports();
    run_with(1, || {
        let pid = smarm::actor::start::<Typed>(TypedState).unwrap();
        let down = smarm::monitor(pid);
        pid.fine(1).unwrap();
        pid.explode("typed went off".to_string()).unwrap();
        down.rx.recv_timeout(Duration::from_secs(10)).unwrap();
        let found = crashes_where(|c| c.names == ["reports-typed"]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            found[0].last_message.as_deref(),
            Some("handle: reports::Typed::Explode")
        );
        // A plain actor has no behaviour to say what it handled.
        let plain = smarm::Builder::new()
            .name("reports-plain")
            .spawn(|| panic!("plain"))
            .unwrap();
        assert!(plain.join().is_err());
        let found = crashes_where(|c| c.label.as_deref() == Some("reports-plain"));
        assert_eq!(found[0].last_message, None);
    });
}

#[test]
fn a_caught_panic_is_not_reported_and_a_later_one_is_reported_with_its_own_location() {
    reports();
    run_with(1, || {
        let h = smarm::Builder::new()
            .name("reports-catcher")
            .spawn(|| {
                let caught = std::panic::catch_unwind(|| panic!("caught inside"));
                assert!(caught.is_err());
                smarm::yield_now();
                panic!("the second one");
            })
            .unwrap();
        assert!(h.join().is_err());
        let found = crashes_where(|c| c.label.as_deref() == Some("reports-catcher"));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].message, "the second one");
        let caught_line = line_of("caught inside");
        let second_line = line_of("\"the second one\"");
        let at = found[0].location.as_deref().unwrap();
        assert!(
            at.contains(&format!(":{second_line}:")),
            "{at} (caught at {caught_line})"
        );
        // An actor that ends normally after catching a panic: no report.
        let quiet = smarm::Builder::new()
            .name("reports-quiet")
            .spawn(|| {
                let _ = std::panic::catch_unwind(|| panic!("caught and done"));
            })
            .unwrap();
        quiet.join().unwrap();
        assert!(crashes_where(|c| c.label.as_deref() == Some("reports-quiet")).is_empty());
    });
}

/// The line of this file whose text contains `needle` (first match after
/// the helper itself).
fn line_of(needle: &str) -> usize {
    let src = include_str!("reports.rs");
    src.lines()
        .position(|l| l.contains(needle) && !l.contains("line_of("))
        .map(|i| i + 1)
        .unwrap()
}

#[test]
fn supervisors_report_each_restart_then_giving_up() {
    reports();
    run_with(2, || {
        let exits = smarm::trap_exit(true).unwrap();
        let sup = supervisor::start_link(
            SupFlags::new(Strategy::OneForOne).intensity(2, Duration::from_secs(30)),
            vec![ChildSpec::actor("reports-flaky", || panic!("flaky child"))],
        )
        .unwrap();
        let exit = exits.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(exit.from, sup.pid());
        let mine: Vec<_> = reports()
            .lock()
            .unwrap()
            .iter()
            .filter_map(|r| match r {
                Report::Supervisor(s) if s.child == "reports-flaky" => Some(s.clone()),
                _ => None,
            })
            .collect();
        let actions: Vec<_> = mine
            .iter()
            .map(|s| (s.action.clone(), s.restarts))
            .collect();
        assert_eq!(
            actions,
            vec![
                (SupervisorAction::Restarted, 1),
                (SupervisorAction::Restarted, 2),
                (SupervisorAction::GaveUp, 3),
            ]
        );
        assert!(mine.iter().all(|s| s.supervisor == sup.pid()));
        // Each of the three crashes of the child was reported too; giving
        // up is the supervisor report alone, an exit with `shutdown`, not a
        // crash of the supervisor (as OTP's).
        assert_eq!(exit.reason, smarm::DownReason::Shutdown);
        assert_eq!(crashes_where(|c| c.message == "flaky child").len(), 3);
        // (Other tests' runtimes reuse the pid: their crashes are raised
        // in this file; a supervisor's own would be raised in smarm's.)
        let own = crashes_where(|c| {
            c.pid == sup.pid()
                && c.location
                    .as_deref()
                    .is_none_or(|at| !at.starts_with("tests/"))
        });
        assert!(own.is_empty(), "no crash report of the supervisor: {own:?}");
    });
}

#[test]
fn a_plain_threads_panic_still_reaches_the_hook_installed_before() {
    if std::env::var_os("SMARM_REPORTS_CHILD").is_some() {
        let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = hits.clone();
        std::panic::set_hook(Box::new(move |_| {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }));
        run_with(1, || {
            let h = smarm::spawn(|| panic!("in an actor"));
            assert!(h.join().is_err());
        });
        let t = std::thread::spawn(|| panic!("on a plain thread"));
        assert!(t.join().is_err());
        // The actor's panic became a report; the thread's went to our hook.
        assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 1);
        println!("CHILD-OK");
        return;
    }
    let out = support::rerun_in_child(
        "a_plain_threads_panic_still_reaches_the_hook_installed_before",
        "SMARM_REPORTS_CHILD",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("CHILD-OK"),
        "{stdout}\n{stderr}"
    );
    assert!(
        stderr.contains("=CRASH REPORT====") && stderr.contains("panic: in an actor"),
        "{stderr}"
    );
}

/// Panics from a few frames down, so a backtrace has frames of its own.
#[inline(never)]
fn crash_from_depth(n: u32, what: &str) -> u32 {
    if n == 0 {
        panic!("{what}");
    }
    std::hint::black_box(crash_from_depth(n - 1, what)) + 1
}

#[test]
fn default_reports_are_written_in_order_with_backtraces_before_run_returns() {
    const ORDER: [&str; 4] = ["first crash", "second crash", "third crash", "fourth crash"];
    const TOGETHER: usize = 40;
    if std::env::var_os("SMARM_REPORTS_CHILD").is_some() {
        run_with(2, || {
            for what in ORDER {
                let h = smarm::spawn(move || crash_from_depth(8, what));
                assert!(h.join().is_err());
            }
            // Many at once, from both schedulers, just before the run
            // ends: each written whole, and before `run` returns (their
            // backtraces take the reporter longer than the run's end).
            let together: Vec<_> = (0..TOGETHER)
                .map(|_| smarm::spawn(|| crash_from_depth(30, "together")))
                .collect();
            for h in together {
                assert!(h.join().is_err());
            }
        });
        eprintln!("RUN-RETURNED");
        return;
    }
    let out = support::rerun_in_child_with(
        "default_reports_are_written_in_order_with_backtraces_before_run_returns",
        "SMARM_REPORTS_CHILD",
        &[("RUST_BACKTRACE", Some("1"))],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let returned = stderr.find("RUN-RETURNED").expect("the child's marker");
    let reports: Vec<&str> = stderr[..returned]
        .split("=CRASH REPORT====")
        .skip(1)
        .collect();
    assert_eq!(
        reports.len(),
        ORDER.len() + TOGETHER,
        "every report before run returned: {stderr}"
    );
    for (report, what) in reports.iter().zip(ORDER) {
        assert!(
            report.contains(&format!("panic: {what}")),
            "in order: {stderr}"
        );
    }
    for report in &reports {
        // Resolved to symbols where it was written.
        assert!(
            report.contains("backtrace:") && report.contains("crash_from_depth"),
            "{report}"
        );
    }
    assert!(
        reports[ORDER.len()..]
            .iter()
            .all(|r| r.contains("panic: together"))
    );
}

#[test]
fn a_crash_reports_backtrace_follows_rust_lib_backtrace_then_rust_backtrace() {
    if std::env::var_os("SMARM_REPORTS_CHILD").is_some() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        smarm::report::set_handler(move |r| {
            if let Report::Crash(c) = r {
                sink.lock().unwrap().push(c.backtrace.clone());
            }
        });
        run_with(1, || {
            assert!(smarm::spawn(|| crash_from_depth(2, "env")).join().is_err());
        });
        let seen = seen.lock().unwrap();
        match &seen[..] {
            [Some(bt)] => println!(
                "CHILD-BACKTRACE {}",
                bt.to_string().contains("crash_from_depth")
            ),
            [None] => println!("CHILD-NONE"),
            other => println!("CHILD-UNEXPECTED {other:?}"),
        }
        return;
    }
    // As std reads them: RUST_LIB_BACKTRACE wins when set; "0" is off.
    let cases: [(&[(&str, &str)], &str); 4] = [
        (&[("RUST_BACKTRACE", "1")], "CHILD-BACKTRACE true"),
        (&[("RUST_BACKTRACE", "0")], "CHILD-NONE"),
        (
            &[("RUST_BACKTRACE", "1"), ("RUST_LIB_BACKTRACE", "0")],
            "CHILD-NONE",
        ),
        (
            &[("RUST_BACKTRACE", "0"), ("RUST_LIB_BACKTRACE", "1")],
            "CHILD-BACKTRACE true",
        ),
    ];
    for (env, expected) in cases {
        let mut vars = vec![("RUST_BACKTRACE", None), ("RUST_LIB_BACKTRACE", None)];
        vars.extend(env.iter().map(|&(var, value)| (var, Some(value))));
        let out = support::rerun_in_child_with(
            "a_crash_reports_backtrace_follows_rust_lib_backtrace_then_rust_backtrace",
            "SMARM_REPORTS_CHILD",
            &vars,
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains(expected),
            "{env:?}: expected {expected}\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn every_scheduler_blocked_with_no_spare_left_is_reported_once_naming_the_actors() {
    let _ = reports(); // the collecting handler is installed
    let blocked: Vec<smarm::Pid> = smarm::runtime::init(
        smarm::runtime::Config::exact(1)
            .spare_threads(1)
            .blocked_after(Some(Duration::from_millis(10))),
    )
    .run(|| {
        // Two actors blocking their threads at once: the regular scheduler
        // and the one spare. Nothing is left to start.
        let sleepers: Vec<_> = (0..2)
            .map(|_| smarm::spawn(|| std::thread::sleep(Duration::from_millis(400))))
            .collect();
        let pids = sleepers.iter().map(|s| s.pid()).collect();
        for s in sleepers {
            s.join().unwrap();
        }
        pids
    });
    let seen = reports().lock().unwrap();
    let exhausted: Vec<_> = seen
        .iter()
        .filter_map(|r| match r {
            Report::SparesExhausted(r) => Some(r),
            _ => None,
        })
        .filter(|r| r.blocked.iter().any(|(pid, _)| blocked.contains(pid)))
        .collect();
    assert_eq!(exhausted.len(), 1, "reported once per run");
    let mut named: Vec<_> = exhausted[0].blocked.iter().map(|(pid, _)| *pid).collect();
    named.sort_by_key(|p| p.index());
    let mut expected = blocked.clone();
    expected.sort_by_key(|p| p.index());
    assert_eq!(named, expected, "names every blocked actor");
    let text = exhausted[0].to_string();
    assert!(text.contains("SCHEDULERS BLOCKED REPORT"), "{text}");
    assert!(text.contains(&blocked[0].to_string()), "{text}");
}
