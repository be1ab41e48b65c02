//! gen_statem, against OTP's semantics: the cases of OTP's
//! `gen_statem_SUITE` that apply (state_enter, event_order, next_events,
//! state_timeout, timeout_cancel_and_update, event_types, generic_timers,
//! stop_and_reply, the abnormal call timeouts, hibernate, get_state /
//! replace_state), OTP's documented examples (the code lock, the push
//! button), supervision, crash reports and calling oneself.
//!
//! Most cases drive `Probe`, a machine whose events carry their own
//! script (the transition to make) and that logs every event and enter
//! call; the test then reads the log and asserts its exact order.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::WaitingOn;
use smarm::gen_statem::{
    self, CallError, Ctx, Enter, Event, GenStatem, Init, InitError, ReplaceStateError, StatemName,
    StatemRef, StopReason, Transition,
};
use smarm::supervisor::{self, ChildSpec, Strategy, SupFlags};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{THREADS, parked_on, run_with};

/// One step of an event's script.
#[derive(Clone, Debug)]
enum Do {
    To(u32),
    Repeat,
    Next(Cmd),
    EventTimeout(u64, &'static str),
    StateTimeout(u64, &'static str),
    Named(&'static str, u64, &'static str),
    CancelState,
    CancelNamed(&'static str),
    UpdateState(&'static str),
    UpdateNamed(&'static str, &'static str),
    Hibernate,
    /// Sleep this many ms inside the handler.
    Sleep(u64),
    Stop,
    Panic,
}

/// An event's content: its label, the state it must be handled in (it is
/// postponed elsewhere), and its script.
#[derive(Clone, Debug)]
struct Cmd {
    label: &'static str,
    only_in: Option<u32>,
    script: Vec<Do>,
}

fn cmd(label: &'static str, script: Vec<Do>) -> Cmd {
    Cmd {
        label,
        only_in: None,
        script,
    }
}

fn only_in(state: u32, label: &'static str) -> Cmd {
    Cmd {
        label,
        only_in: Some(state),
        script: vec![],
    }
}

/// What a probe's calls ask.
enum Ask {
    /// Handle like a cast's `Cmd`, answering "done" through the script's
    /// transition.
    Run(Cmd),
    /// Stop, answering first (stop_and_reply).
    StopAndReply,
}

#[derive(Clone, Debug)]
struct Probe {
    log: Arc<Mutex<Vec<String>>>,
    /// Scripts for enter calls into a state: (state, script).
    enter: Vec<(u32, Vec<Do>)>,
    terminated: Arc<Mutex<Option<(StopReason, u32)>>>,
}

struct ProbeArgs {
    log: Arc<Mutex<Vec<String>>>,
    enter: Vec<(u32, Vec<Do>)>,
    terminated: Arc<Mutex<Option<(StopReason, u32)>>>,
    init: Vec<Do>,
}

impl Probe {
    fn note(&self, what: String) {
        self.log.lock().unwrap().push(what);
    }
}

/// Build a transition from a script, on top of `base`.
fn apply<T>(mut t: T, script: &[Do], with: impl Fn(T, &Do) -> T) -> T {
    for step in script {
        if let Do::Sleep(ms) = step {
            smarm::sleep(Duration::from_millis(*ms));
        } else {
            t = with(t, step);
        }
    }
    t
}

/// The enter actions and the event's own.
macro_rules! timer_steps {
    ($t:expr, $step:expr) => {
        match $step {
            Do::EventTimeout(ms, l) => $t.event_timeout(Duration::from_millis(*ms), l),
            Do::StateTimeout(ms, l) => $t.state_timeout(Duration::from_millis(*ms), l),
            Do::Named(n, ms, l) => $t.timeout(n, Duration::from_millis(*ms), l),
            Do::CancelState => $t.cancel_state_timeout(),
            Do::CancelNamed(n) => $t.cancel_timeout(n),
            Do::UpdateState(l) => $t.update_state_timeout(l),
            Do::UpdateNamed(n, l) => $t.update_timeout(n, l),
            Do::Hibernate => $t.hibernate(),
            Do::Panic => panic!("the script said panic"),
            _ => $t,
        }
    };
}

fn transition(script: &[Do]) -> Transition<Probe> {
    let mut next = Transition::keep_state();
    let mut actions = Vec::new();
    for step in script {
        match step {
            Do::To(s) => next = Transition::next_state(*s),
            Do::Repeat => next = Transition::repeat_state(),
            Do::Stop => next = Transition::stop(StopReason::Normal),
            other => actions.push(other.clone()),
        }
    }
    apply(next, &actions, |t, step| match step {
        Do::Next(c) => t.next_event(Event::Internal(c.clone())),
        other => timer_steps!(t, other),
    })
}

impl GenStatem for Probe {
    type Args = ProbeArgs;
    type State = u32;
    type Call = Ask;
    type Reply = &'static str;
    type Cast = Cmd;
    type Info = &'static str;
    type Internal = Cmd;
    type Timeout = &'static str;

    fn init(args: ProbeArgs, _: &mut Ctx<Self>) -> Result<Init<Self>, InitError> {
        let probe = Probe {
            log: args.log,
            enter: args.enter,
            terminated: args.terminated,
        };
        let init = Init::new(0, probe);
        Ok(apply(init, &args.init, |t, step| match step {
            Do::Next(c) => t.next_event(Event::Internal(c.clone())),
            other => timer_steps!(t, other),
        }))
    }

    fn handle_event(
        &mut self,
        &state: &u32,
        event: Event<Self>,
        _: &mut Ctx<Self>,
    ) -> Transition<Self> {
        let (kind, c, reply) = match event {
            Event::Cast(c) => ("cast", c, None),
            Event::Internal(c) => ("internal", c, None),
            Event::Call(Ask::Run(c), reply) => ("call", c, Some(reply)),
            Event::Call(Ask::StopAndReply, reply) => {
                self.note(format!("stop_and_reply@{state}"));
                return Transition::stop_and_reply(StopReason::Normal, reply, "bye");
            }
            Event::Info(l) => {
                self.note(format!("info {l}@{state}"));
                return Transition::keep_state();
            }
            Event::EventTimeout(l) => {
                self.note(format!("timeout {l}@{state}"));
                return Transition::keep_state();
            }
            Event::StateTimeout(l) => {
                self.note(format!("state_timeout {l}@{state}"));
                return Transition::keep_state();
            }
            Event::Timeout(name, l) => {
                self.note(format!("timeout {name}:{l}@{state}"));
                return Transition::keep_state();
            }
            Event::Exit(_) | Event::Down(_) => return Transition::keep_state(),
        };
        if c.only_in.is_some_and(|s| s != state) {
            self.note(format!("postpone {}@{state}", c.label));
            let event = match reply {
                Some(reply) => Event::Call(Ask::Run(c), reply),
                None if kind == "cast" => Event::Cast(c),
                None => Event::Internal(c),
            };
            return Transition::keep_state().postpone(event);
        }
        self.note(format!("{}@{state}", c.label));
        let t = transition(&c.script);
        match reply {
            Some(reply) => t.reply(reply, "done"),
            None => t,
        }
    }

    fn state_enter(&mut self, old: &u32, state: &u32, _: &mut Ctx<Self>) -> Enter<Self> {
        self.note(format!("enter {old}->{state}"));
        let script = self
            .enter
            .iter()
            .find(|(s, _)| s == state)
            .map(|(_, script)| script.clone())
            .unwrap_or_default();
        let mut next = Enter::keep_state();
        let mut actions = Vec::new();
        for step in &script {
            match step {
                Do::Repeat => next = Enter::repeat_state(),
                Do::Stop => next = Enter::stop(StopReason::Normal),
                other => actions.push(other.clone()),
            }
        }
        // A repeat once only: the script is spent.
        self.enter.retain(|(s, _)| s != state);
        apply(next, &actions, |t, step| timer_steps!(t, step))
    }

    fn terminate(&mut self, reason: &StopReason, &state: &u32, _: &mut Ctx<Self>) {
        self.note(format!("terminate {reason}@{state}"));
        *self.terminated.lock().unwrap() = Some((reason.clone(), state));
    }
}

/// A running probe and its log.
struct Running {
    machine: StatemRef<Probe>,
    log: Arc<Mutex<Vec<String>>>,
    terminated: Arc<Mutex<Option<(StopReason, u32)>>>,
}

fn probe_with(enter: Vec<(u32, Vec<Do>)>, init: Vec<Do>) -> Running {
    let log = Arc::new(Mutex::new(Vec::new()));
    let terminated = Arc::new(Mutex::new(None));
    let machine = gen_statem::start::<Probe>(ProbeArgs {
        log: log.clone(),
        enter,
        terminated: terminated.clone(),
        init,
    })
    .unwrap();
    Running {
        machine,
        log,
        terminated,
    }
}

fn probe() -> Running {
    probe_with(vec![], vec![])
}

impl Running {
    fn cast(&self, label: &'static str, script: Vec<Do>) {
        self.machine.cast(cmd(label, script)).unwrap();
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// Wait until the log has an entry `last` (10 s at most), then return
    /// the log.
    fn until(&self, last: &str) -> Vec<String> {
        let give_up = Instant::now() + Duration::from_secs(10);
        loop {
            let log = self.log();
            if log.iter().any(|l| l == last) {
                return log;
            }
            assert!(Instant::now() < give_up, "never logged {last:?}: {log:?}");
            smarm::sleep(Duration::from_millis(1));
        }
    }
}

fn strings(entries: &[&str]) -> Vec<String> {
    entries.iter().map(|s| s.to_string()).collect()
}

#[test]
fn enter_calls_run_for_the_initial_state_on_each_change_and_on_repeat_state() {
    for threads in THREADS {
        run_with(threads, || {
            let p = probe();
            p.cast("a", vec![Do::To(1)]);
            p.cast("same", vec![Do::To(1)]); // not a change: no enter call
            p.cast("keep", vec![]);
            p.cast("repeat", vec![Do::Repeat]);
            p.cast("back", vec![Do::To(0)]);
            p.machine.shutdown().unwrap();
            assert_eq!(
                p.log(),
                strings(&[
                    "enter 0->0",
                    "a@0",
                    "enter 0->1",
                    "same@1",
                    "keep@1",
                    "repeat@1",
                    "enter 1->1",
                    "back@1",
                    "enter 1->0",
                    "terminate shutdown@0",
                ])
            );
        });
    }
}

#[test]
fn an_enter_call_may_repeat_itself_set_timeouts_and_stop() {
    run_with(2, || {
        // Entering 1 repeats the enter call once and starts a state
        // timeout there; entering 2 stops the machine.
        let p = probe_with(
            vec![
                (1, vec![Do::Repeat, Do::StateTimeout(5, "entered")]),
                (2, vec![Do::Stop]),
            ],
            vec![],
        );
        p.cast("go", vec![Do::To(1)]);
        let log = p.until("state_timeout entered@1");
        assert_eq!(
            log,
            strings(&[
                "enter 0->0",
                "go@0",
                "enter 0->1",
                "enter 1->1",
                "state_timeout entered@1"
            ])
        );
        let down = smarm::monitor(p.machine.pid());
        p.cast("two", vec![Do::To(2)]);
        down.rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(
            p.log()[5..],
            strings(&["two@1", "enter 1->2", "terminate normal@2"])
        );
    });
}

#[test]
fn postponed_events_are_retried_oldest_first_after_a_state_change_only() {
    for threads in THREADS {
        run_with(threads, || {
            let p = probe();
            p.machine.cast(only_in(1, "p1")).unwrap();
            p.machine.cast(only_in(1, "p2")).unwrap();
            p.cast("keep", vec![]);
            p.cast("repeat", vec![Do::Repeat]); // not a change: no retry
            p.cast("same", vec![Do::To(0)]);
            // The change inserts an event too: inserted events go ahead of
            // the retried ones, which go ahead of the mailbox.
            p.cast("go", vec![Do::To(1), Do::Next(cmd("inserted", vec![]))]);
            p.cast("later", vec![]);
            p.until("later@1");
            assert_eq!(
                p.log(),
                strings(&[
                    "enter 0->0",
                    "postpone p1@0",
                    "postpone p2@0",
                    "keep@0",
                    "repeat@0",
                    "enter 0->0",
                    "same@0",
                    "go@0",
                    "enter 0->1",
                    "inserted@1",
                    "p1@1",
                    "p2@1",
                    "later@1",
                ])
            );
        });
    }
}

#[test]
fn an_event_postponed_again_keeps_its_place() {
    run_with(1, || {
        let p = probe();
        p.machine.cast(only_in(2, "for2")).unwrap();
        p.machine.cast(only_in(1, "for1")).unwrap();
        p.cast("to1", vec![Do::To(1)]);
        p.cast("to2", vec![Do::To(2)]);
        p.until("for2@2");
        assert_eq!(
            p.log(),
            strings(&[
                "enter 0->0",
                "postpone for2@0",
                "postpone for1@0",
                "to1@0",
                "enter 0->1",
                "postpone for2@1",
                "for1@1",
                "to2@1",
                "enter 1->2",
                "for2@2",
            ])
        );
    });
}

#[test]
fn inserted_events_are_handled_next_in_the_order_given() {
    run_with(2, || {
        let p = probe();
        p.cast(
            "a",
            vec![
                Do::Next(cmd("x", vec![Do::Next(cmd("x1", vec![]))])),
                Do::Next(cmd("y", vec![])),
            ],
        );
        p.cast("b", vec![]);
        p.until("b@0");
        // x's own insertion goes ahead of y, which was queued before it.
        assert_eq!(
            p.log(),
            strings(&["enter 0->0", "a@0", "x@0", "x1@0", "y@0", "b@0"])
        );
    });
}

#[test]
fn zero_timeouts_come_after_queued_events_and_before_the_mailbox() {
    for threads in THREADS {
        run_with(threads, || {
            let p = probe();
            p.cast(
                "a",
                vec![
                    Do::Next(cmd("x", vec![])),
                    Do::StateTimeout(0, "st"),
                    Do::Named("g", 0, "gt"),
                ],
            );
            p.cast("b", vec![]);
            p.until("b@0");
            assert_eq!(
                p.log(),
                strings(&[
                    "enter 0->0",
                    "a@0",
                    "x@0",
                    "state_timeout st@0",
                    "timeout g:gt@0",
                    "b@0"
                ])
            );
        });
    }
}

#[test]
fn a_zero_event_timeout_fires_only_when_no_event_is_queued() {
    run_with(2, || {
        let p = probe();
        // Queued alone: it fires before the next message.
        p.cast("a", vec![Do::EventTimeout(0, "e0")]);
        p.cast("b", vec![]);
        // With an inserted event: that event cancels it.
        p.cast(
            "c",
            vec![Do::Next(cmd("x", vec![])), Do::EventTimeout(0, "lost")],
        );
        p.cast("d", vec![]);
        p.until("d@0");
        assert_eq!(
            p.log(),
            strings(&[
                "enter 0->0",
                "a@0",
                "timeout e0@0",
                "b@0",
                "c@0",
                "x@0",
                "d@0"
            ])
        );
    });
}

#[test]
fn the_event_timeout_is_cancelled_by_any_event_and_fires_after_quiet() {
    for threads in THREADS {
        run_with(threads, || {
            let p = probe();
            // Cancelled by the next cast; the marker comes after its time.
            p.cast("a", vec![Do::EventTimeout(60, "cancelled")]);
            p.cast("b", vec![Do::Named("mark", 150, "m1")]);
            p.until("timeout mark:m1@0");
            // Cancelled by an inserted event, with no message after it.
            p.cast(
                "c",
                vec![
                    Do::EventTimeout(60, "cancelled"),
                    Do::Next(cmd("x", vec![Do::Named("mark", 150, "m2")])),
                ],
            );
            p.until("timeout mark:m2@0");
            // A system message is not an event: inspecting does not cancel it.
            p.cast("quiet", vec![Do::EventTimeout(20, "fired")]);
            p.machine.inspect(|_, _| ()).unwrap();
            let log = p.until("timeout fired@0");
            assert_eq!(
                log,
                strings(&[
                    "enter 0->0",
                    "a@0",
                    "b@0",
                    "timeout mark:m1@0",
                    "c@0",
                    "x@0",
                    "timeout mark:m2@0",
                    "quiet@0",
                    "timeout fired@0"
                ])
            );
        });
    }
}

#[test]
fn a_state_change_cancels_the_state_timeout_and_one_started_with_it_runs_in_the_new_state() {
    for threads in THREADS {
        run_with(threads, || {
            let p = probe();
            p.cast("arm", vec![Do::StateTimeout(30, "cancelled")]);
            p.cast("leave", vec![Do::To(1), Do::Named("mark", 100, "m0")]);
            p.until("timeout mark:m0@1");
            p.cast("go2", vec![Do::To(2), Do::StateTimeout(30, "in2")]);
            p.until("state_timeout in2@2");
            // Not a change: keep_state and repeat_state leave it running.
            p.cast("arm3", vec![Do::StateTimeout(30, "kept")]);
            p.cast("keep", vec![]);
            p.cast("repeat", vec![Do::Repeat]);
            p.until("state_timeout kept@2");
            // A marker past them all: the cancelled one never came.
            p.cast("mark", vec![Do::Named("mark", 100, "m")]);
            let log = p.until("timeout mark:m@2");
            assert!(!log.iter().any(|l| l.contains("cancelled")), "{log:?}");
            // Restarting replaces it; cancel and update work on it.
            p.cast("r1", vec![Do::StateTimeout(30, "first")]);
            p.cast("r2", vec![Do::StateTimeout(40, "second")]);
            p.until("state_timeout second@2");
            p.cast("c1", vec![Do::StateTimeout(20, "cancelled")]);
            p.cast("c2", vec![Do::CancelState]);
            p.cast("u1", vec![Do::StateTimeout(30, "old")]);
            p.cast("u2", vec![Do::UpdateState("new")]);
            p.until("state_timeout new@2");
            p.cast("mark2", vec![Do::Named("mark", 100, "m2")]);
            let log = p.until("timeout mark:m2@2");
            for gone in ["cancelled", "first", "old"] {
                assert!(!log.iter().any(|l| l.contains(gone)), "{gone}: {log:?}");
            }
            p.machine.shutdown().unwrap();
        });
    }
}

#[test]
fn generic_timeouts_survive_state_changes_restart_cancel_and_update() {
    for threads in THREADS {
        run_with(threads, || {
            let p = probe();
            p.cast("arm", vec![Do::Named("g", 30, "g1")]);
            p.cast("leave", vec![Do::To(1)]);
            p.until("timeout g:g1@1");
            // Two names run side by side.
            p.cast(
                "two",
                vec![Do::Named("a", 20, "a"), Do::Named("b", 25, "b")],
            );
            p.until("timeout a:a@1");
            p.until("timeout b:b@1");
            // Restart by name: only the second fires.
            p.cast("r1", vec![Do::Named("r", 30, "first")]);
            p.cast("r2", vec![Do::Named("r", 40, "second")]);
            p.until("timeout r:second@1");
            // Cancel.
            p.cast(
                "c",
                vec![Do::Named("c", 20, "cancelled"), Do::CancelNamed("c")],
            );
            // Update: a running one keeps its time with the new content; one
            // not running fires at once.
            p.cast("u1", vec![Do::Named("u", 30, "old")]);
            p.cast("u2", vec![Do::UpdateNamed("u", "new")]);
            p.cast("v", vec![Do::UpdateNamed("v", "now")]);
            p.until("timeout u:new@1");
            let log = p.log();
            let v = log.iter().position(|l| l == "timeout v:now@1").unwrap();
            let after_v = log.iter().position(|l| l == "v@1").unwrap();
            assert_eq!(
                v,
                after_v + 1,
                "an update of a stopped timeout fires at once: {log:?}"
            );
            p.cast("mark", vec![Do::Named("mark", 100, "m")]);
            let log = p.until("timeout mark:m@1");
            for gone in ["first", "cancelled", "old"] {
                assert!(!log.iter().any(|l| l.contains(gone)), "{gone}: {log:?}");
            }
            p.machine.shutdown().unwrap();
        });
    }
}

#[test]
fn a_timeout_cancelled_after_its_timer_fired_is_not_delivered() {
    for threads in THREADS {
        run_with(threads, || {
            let p = probe();
            // The inserted event runs before the mailbox: the 1 ms timer
            // fires (its message queued) while it sleeps, and it cancels.
            p.cast(
                "arm",
                vec![
                    Do::Named("w", 1, "stale"),
                    Do::StateTimeout(1, "stale"),
                    Do::Next(cmd(
                        "cancel",
                        vec![Do::Sleep(30), Do::CancelNamed("w"), Do::CancelState],
                    )),
                ],
            );
            p.cast("mark", vec![Do::Named("mark", 50, "m")]);
            let log = p.until("timeout mark:m@0");
            assert!(!log.iter().any(|l| l.contains("stale")), "{log:?}");
            // And one updated after firing delivers the new content.
            p.cast(
                "arm2",
                vec![
                    Do::Named("w", 1, "old"),
                    Do::Next(cmd(
                        "update",
                        vec![Do::Sleep(30), Do::UpdateNamed("w", "new")],
                    )),
                ],
            );
            p.until("timeout w:new@0");
            assert!(!p.log().iter().any(|l| l.contains("w:old")));
            // Restarted after its timer fired: the old timer's message does
            // not fire the new one early (the marker comes first).
            p.cast(
                "arm3",
                vec![
                    Do::Named("w", 1, "early"),
                    Do::Next(cmd(
                        "restart",
                        vec![
                            Do::Sleep(30),
                            Do::Named("w", 150, "restarted"),
                            Do::Named("mark", 50, "m3"),
                        ],
                    )),
                ],
            );
            let log = p.until("timeout w:restarted@0");
            let mark = log.iter().position(|l| l == "timeout mark:m3@0");
            let restarted = log.iter().position(|l| l == "timeout w:restarted@0");
            assert!(mark.is_some() && mark < restarted, "{log:?}");
        });
    }
}

#[test]
fn init_actions_run_before_the_first_message() {
    run_with(2, || {
        let p = probe_with(
            vec![],
            vec![Do::Next(cmd("first", vec![])), Do::StateTimeout(0, "zero")],
        );
        p.cast("msg", vec![]);
        p.until("msg@0");
        assert_eq!(
            p.log(),
            strings(&["enter 0->0", "first@0", "state_timeout zero@0", "msg@0"])
        );
    });
}

#[test]
fn calls_casts_and_infos_arrive_as_their_event_types() {
    run_with(2, || {
        let p = probe();
        assert_eq!(p.machine.call(Ask::Run(cmd("called", vec![]))), Ok("done"));
        p.machine.info("hello").unwrap();
        p.cast("cast", vec![]);
        p.until("cast@0");
        assert_eq!(
            p.log(),
            strings(&["enter 0->0", "called@0", "info hello@0", "cast@0"])
        );
    });
}

#[test]
fn stop_and_reply_answers_then_terminates() {
    for threads in THREADS {
        run_with(threads, || {
            let p = probe();
            let down = smarm::monitor(p.machine.pid());
            assert_eq!(p.machine.call(Ask::StopAndReply), Ok("bye"));
            let d = down.rx.recv_timeout(Duration::from_secs(10)).unwrap();
            assert!(!d.reason.is_abnormal(), "{:?}", d.reason);
            assert_eq!(*p.terminated.lock().unwrap(), Some((StopReason::Normal, 0)));
            assert_eq!(
                p.machine.call(Ask::StopAndReply),
                Err(CallError::ServerDown)
            );
        });
    }
}

#[test]
fn a_timed_out_call_leaves_the_machine_running_and_its_late_reply_is_dropped() {
    run_with(2, || {
        let p = probe();
        // The call is postponed until state 1: the caller times out.
        let call = Ask::Run(only_in(1, "late"));
        assert_eq!(
            p.machine.call_timeout(call, Duration::from_millis(30)),
            Err(CallError::Timeout(Duration::from_millis(30)))
        );
        p.cast("go", vec![Do::To(1)]);
        p.until("late@1");
        // Still serving.
        assert_eq!(p.machine.call(Ask::Run(cmd("next", vec![]))), Ok("done"));
        // A reply action is done before the stop it comes with.
        let t0 = Instant::now();
        assert_eq!(
            p.machine.call(Ask::Run(cmd("stop", vec![Do::Stop]))),
            Ok("done"),
            "the reply action is done before the stop"
        );
        assert!(t0.elapsed() < Duration::from_secs(4));
    });
}

#[test]
fn a_call_dropped_by_a_stopping_machine_fails_with_server_down() {
    run_with(2, || {
        let p = probe();
        // Postponed forever, then the machine panics: the call's reply
        // slot goes with it.
        let machine = p.machine.clone();
        let caller = smarm::spawn(move || machine.call(Ask::Run(only_in(9, "never"))));
        p.until("postpone never@0");
        p.cast("boom", vec![Do::Panic]);
        assert_eq!(caller.join().unwrap(), Err(CallError::ServerDown));
    });
}

#[test]
fn a_hibernating_machine_keeps_its_state_and_timeouts() {
    for threads in THREADS {
        run_with(threads, || {
            let p = probe();
            p.cast(
                "h",
                vec![Do::To(1), Do::Named("g", 30, "woke"), Do::Hibernate],
            );
            assert_eq!(parked_on(p.machine.pid()), Some(WaitingOn::Hibernating));
            p.until("timeout g:woke@1");
            assert_eq!(p.machine.inspect(|s, _| *s), Ok(1));
            p.machine.shutdown().unwrap();
            assert_eq!(
                *p.terminated.lock().unwrap(),
                Some((StopReason::Shutdown, 1))
            );
        });
    }
}

#[test]
fn get_state_and_replace_state_and_a_panicking_replacement() {
    run_with(2, || {
        let p = probe();
        p.cast("a", vec![Do::To(3)]);
        let (state, _) = p.machine.get_state().unwrap();
        assert_eq!(state, 3);
        // Replacing the state is not a state change: no enter call.
        let (state, _) = p
            .machine
            .replace_state(|state, data| {
                *state = 7;
                data.enter.push((9, vec![]));
            })
            .unwrap();
        assert_eq!(state, 7);
        assert_eq!(p.machine.inspect(|s, d| (*s, d.enter.len())), Ok((7, 1)));
        let r = p.machine.replace_state(|state, _| {
            *state = 100;
            panic!("half way");
        });
        assert!(
            matches!(&r, Err(ReplaceStateError::Panicked(why)) if why.contains("half way")),
            "{r:?}"
        );
        assert_eq!(p.machine.inspect(|s, _| *s), Ok(7));
        p.cast("b", vec![]);
        assert_eq!(
            p.until("b@7"),
            strings(&["enter 0->0", "a@0", "enter 0->3", "b@7"])
        );
    });
}

/// The crash reports of this test binary.
fn crashes() -> &'static Mutex<Vec<smarm::report::CrashReport>> {
    static SEEN: std::sync::OnceLock<Arc<Mutex<Vec<smarm::report::CrashReport>>>> =
        std::sync::OnceLock::new();
    SEEN.get_or_init(|| {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        smarm::report::set_handler(move |r| {
            eprintln!("{r}");
            if let smarm::report::Report::Crash(c) = r {
                sink.lock().unwrap().push(c.clone());
            }
        });
        seen
    })
}

#[test]
fn a_crash_report_names_the_last_event_and_the_state() {
    crashes();
    run_with(2, || {
        let p = probe();
        p.cast("go", vec![Do::To(4)]);
        let down = smarm::monitor(p.machine.pid());
        p.cast("boom", vec![Do::Panic]);
        let d = down.rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(d.reason.is_abnormal());
        assert_eq!(
            *p.terminated.lock().unwrap(),
            Some((StopReason::Error("the script said panic".into()), 4))
        );
        // Pids are per runtime: another test's runtime may crash a probe
        // with the same pid (in another state), so look for this one's.
        let pid = p.machine.pid();
        let expected = "handle_event: a cast event in state 4";
        let give_up = Instant::now() + Duration::from_secs(10);
        loop {
            let seen: Vec<Option<String>> = crashes()
                .lock()
                .unwrap()
                .iter()
                .filter(|c| c.pid == pid)
                .map(|c| c.last_message.clone())
                .collect();
            if seen.iter().any(|m| m.as_deref() == Some(expected)) {
                break;
            }
            assert!(
                Instant::now() < give_up,
                "no crash report of {pid} naming {expected:?}: {seen:?}"
            );
            smarm::sleep(Duration::from_millis(1));
        }
    });
}

#[test]
fn a_call_to_oneself_fails_at_once() {
    struct Selfish;
    impl GenStatem for Selfish {
        type Args = ();
        type State = ();
        type Call = ();
        type Reply = Option<CallError>;
        type Cast = ();
        type Info = ();
        type Internal = ();
        type Timeout = ();
        fn init(_: (), _: &mut Ctx<Self>) -> Result<Init<Self>, InitError> {
            Ok(Init::new((), Selfish))
        }
        fn handle_event(
            &mut self,
            _: &(),
            event: Event<Self>,
            ctx: &mut Ctx<Self>,
        ) -> Transition<Self> {
            match event {
                Event::Call((), reply) => {
                    let t0 = Instant::now();
                    let own = ctx.me().call(());
                    assert!(t0.elapsed() < Duration::from_millis(500));
                    Transition::keep_state().reply(reply, own.err())
                }
                _ => Transition::keep_state(),
            }
        }
    }
    for threads in THREADS {
        run_with(threads, || {
            let m = gen_statem::start::<Selfish>(()).unwrap();
            for _ in 0..100 {
                assert_eq!(m.call(()), Ok(Some(CallError::CallingSelf)));
            }
            m.shutdown().unwrap();
        });
    }
}

// ---- OTP's documented examples ----

/// OTP's code lock (the gen_statem design principles' example): buttons
/// are collected while locked; the right code opens the door for a while
/// (a state timeout); while open, buttons wait (postponed) until it locks
/// again; entering `Locked` clears the collected buttons.
#[derive(Clone)]
struct CodeLock {
    code: Vec<u8>,
    buttons: Vec<u8>,
    open_for: Duration,
    opened: u32,
}

#[derive(Debug, PartialEq, Clone, Copy)]
enum Door {
    Locked,
    Open,
}

impl GenStatem for CodeLock {
    type Args = (Vec<u8>, Duration);
    type State = Door;
    type Call = ();
    type Reply = Door;
    type Cast = u8;
    type Info = ();
    type Internal = ();
    type Timeout = ();

    fn init((code, open_for): Self::Args, _: &mut Ctx<Self>) -> Result<Init<Self>, InitError> {
        Ok(Init::new(
            Door::Locked,
            CodeLock {
                code,
                buttons: vec![],
                open_for,
                opened: 0,
            },
        ))
    }

    fn handle_event(
        &mut self,
        state: &Door,
        event: Event<Self>,
        _: &mut Ctx<Self>,
    ) -> Transition<Self> {
        match (state, event) {
            (Door::Locked, Event::Cast(button)) => {
                self.buttons.push(button);
                if self.buttons.ends_with(&self.code) {
                    Transition::next_state(Door::Open)
                } else {
                    let keep = self.buttons.len().saturating_sub(self.code.len() - 1);
                    self.buttons.drain(..keep);
                    Transition::keep_state()
                }
            }
            (Door::Open, Event::StateTimeout(())) => Transition::next_state(Door::Locked),
            (Door::Open, ev @ Event::Cast(_)) => Transition::keep_state().postpone(ev),
            (state, Event::Call((), reply)) => Transition::keep_state().reply(reply, *state),
            _ => Transition::keep_state(),
        }
    }

    fn format_message(event: &Event<Self>) -> String {
        format!("{:?}", event.payload())
    }

    fn state_enter(&mut self, _: &Door, state: &Door, _: &mut Ctx<Self>) -> Enter<Self> {
        match state {
            Door::Locked => {
                self.buttons.clear();
                Enter::keep_state()
            }
            Door::Open => {
                self.opened += 1;
                Enter::keep_state().state_timeout(self.open_for, ())
            }
        }
    }
}

const LOCK: StatemName<CodeLock> = StatemName::new("code-lock");

#[test]
fn the_code_lock_opens_relocks_and_postpones_buttons_while_open() {
    for threads in THREADS {
        run_with(threads, || {
            let lock = gen_statem::start_named::<CodeLock>(
                LOCK,
                (vec![1, 2, 3], Duration::from_millis(40)),
            )
            .unwrap();
            let lock = gen_statem::whereis(LOCK).map(|l| l.pid()) == Some(lock.pid());
            assert!(lock);
            let lock = gen_statem::whereis(LOCK).unwrap();
            for b in [9, 1, 2, 3] {
                lock.cast(b).unwrap();
            }
            assert_eq!(lock.call(()), Ok(Door::Open));
            // Pressed while open: postponed, then entered once it locks.
            for b in [1, 2, 3] {
                lock.cast(b).unwrap();
            }
            assert_eq!(lock.call(()), Ok(Door::Open));
            let give_up = Instant::now() + Duration::from_secs(10);
            while lock.inspect(|_, l| l.opened) != Ok(2) {
                assert!(
                    Instant::now() < give_up,
                    "the postponed code never reopened it"
                );
                smarm::sleep(Duration::from_millis(2));
            }
            // And it locks again by itself.
            while lock.call(()) != Ok(Door::Locked) {
                assert!(Instant::now() < give_up, "it never locked again");
                smarm::sleep(Duration::from_millis(2));
            }
            assert_eq!(lock.inspect(|_, l| l.buttons.clone()), Ok(vec![]));
            lock.shutdown().unwrap();
        });
    }
}

/// `sys` shows the code lock's events as OTP's `sys:handle_debug` prints
/// them: the buttons by value, under its registered name; `receive` for
/// what it took from its mailbox, `consume` or `postpone` for what its
/// callback did, the state it moved to, the enter call; a postponed
/// button retried once it locks is consumed without a second `receive`.
#[test]
fn sys_shows_the_code_locks_events_as_otp_prints_them() {
    for threads in THREADS {
        run_with(threads, || {
            let lock = gen_statem::start_named::<CodeLock>(
                LOCK,
                (vec![1, 2, 3], Duration::from_secs(3600)),
            )
            .unwrap();
            smarm::sys::log(&LOCK, smarm::sys::Log::On(100)).unwrap();
            for b in [1, 2, 3, 7] {
                lock.cast(b).unwrap();
            }
            assert_eq!(lock.call(()), Ok(Door::Open));
            // Locks it as its state timeout would (the state, not the
            // timer, is what this test is about).
            smarm::sys::replace_state(&lock, |(door, _)| *door = Door::Locked).unwrap();
            lock.cast(9).unwrap(); // handled after the retried 7
            assert_eq!(lock.call(()), Ok(Door::Locked));
            let lines: Vec<String> = smarm::sys::log(&"code-lock", smarm::sys::Log::Get)
                .unwrap()
                .iter()
                .map(ToString::to_string)
                .collect();
            let expected = [
                "*DBG* code-lock receive cast 1 in state Locked",
                "*DBG* code-lock consume cast 1 in state Locked",
                "*DBG* code-lock receive cast 2 in state Locked",
                "*DBG* code-lock consume cast 2 in state Locked",
                "*DBG* code-lock receive cast 3 in state Locked",
                "*DBG* code-lock consume cast 3 in state Locked => Open",
                "*DBG* code-lock enter in state Open",
                "*DBG* code-lock receive cast 7 in state Open",
                "*DBG* code-lock postpone cast 7 in state Open",
                "*DBG* code-lock receive call () in state Open",
                "*DBG* code-lock consume call () in state Open",
                // replace_state changed the state without an event: the
                // postponed 7 waits for the next state change.
                "*DBG* code-lock receive cast 9 in state Locked",
                "*DBG* code-lock consume cast 9 in state Locked",
                "*DBG* code-lock receive call () in state Locked",
                "*DBG* code-lock consume call () in state Locked",
            ];
            assert_eq!(lines, expected);
            let stats = smarm::sys::statistics(&LOCK, smarm::sys::Stats::Get).unwrap();
            assert_eq!(stats, None, "statistics were never turned on");
            lock.shutdown().unwrap();
        });
    }
}

const CODE_LOCK_TRACE_CHILD: &str = "SMARM_CODE_LOCK_TRACE_CHILD";

/// `sys::trace` prints the code lock's events to standard error, from
/// the moment it is turned on, with the state it moves to and a
/// postponed button's retry after the door locks by its state timeout.
#[test]
fn sys_trace_prints_the_code_lock_opening_postponing_and_relocking() {
    if std::env::var_os(CODE_LOCK_TRACE_CHILD).is_some() {
        run_with(1, || {
            let lock = gen_statem::start_named::<CodeLock>(
                LOCK,
                (vec![1, 2, 3], Duration::from_millis(50)),
            )
            .unwrap();
            smarm::sys::trace(&LOCK, true).unwrap();
            smarm::sys::statistics(&LOCK, smarm::sys::Stats::On).unwrap();
            for b in [1, 2, 3, 4] {
                lock.cast(b).unwrap();
            }
            assert_eq!(lock.call(()), Ok(Door::Open));
            while lock.call(()) != Ok(Door::Locked) {
                smarm::sleep(Duration::from_millis(5));
            }
            smarm::sys::trace(&LOCK, false).unwrap();
            let stats = smarm::sys::statistics(&LOCK, smarm::sys::Stats::Get)
                .unwrap()
                .unwrap();
            // Each received once: 4 casts, the calls, the state timeout
            // (the retried 4 is not received again); each call answered.
            assert_eq!(stats.messages_in, 4 + stats.calls_in + 1, "{stats:?}");
            assert_eq!(stats.messages_out, stats.calls_in, "{stats:?}");
            lock.shutdown().unwrap();
        });
        return;
    }
    let out = support::rerun_in_child(
        "sys_trace_prints_the_code_lock_opening_postponing_and_relocking",
        CODE_LOCK_TRACE_CHILD,
    );
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("*DBG*")).collect();
    let at = |line: &str| {
        lines
            .iter()
            .position(|l| *l == line)
            .unwrap_or_else(|| panic!("no line {line:?} in:\n{err}"))
    };
    let opened = at("*DBG* code-lock consume cast 3 in state Locked => Open");
    let postponed = at("*DBG* code-lock postpone cast 4 in state Open");
    let relocked = at("*DBG* code-lock consume state_timeout () in state Open => Locked");
    let entered = at("*DBG* code-lock enter in state Locked");
    let retried = at("*DBG* code-lock consume cast 4 in state Locked");
    assert!(opened < postponed && postponed < relocked, "{err}");
    assert!(relocked < entered && entered < retried, "{err}");
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains(" receive cast 4 "))
            .count(),
        1,
        "a retried event is not received again: {err}"
    );
}

/// OTP's push button (the gen_statem reference manual's example): each
/// push toggles it and answers the new state; `get_count` counts the
/// turns on.
struct PushButton {
    count: u32,
}

#[derive(Debug, PartialEq, Clone, Copy)]
enum Button {
    Off,
    On,
}

enum Press {
    Push,
    GetCount,
    Crash,
}

impl GenStatem for PushButton {
    type Args = ();
    type State = Button;
    type Call = Press;
    type Reply = Result<Button, u32>;
    type Cast = ();
    type Info = ();
    type Internal = ();
    type Timeout = ();

    fn init(_: (), _: &mut Ctx<Self>) -> Result<Init<Self>, InitError> {
        Ok(Init::new(Button::Off, PushButton { count: 0 }))
    }

    fn handle_event(
        &mut self,
        state: &Button,
        event: Event<Self>,
        _: &mut Ctx<Self>,
    ) -> Transition<Self> {
        match (state, event) {
            (Button::Off, Event::Call(Press::Push, reply)) => {
                self.count += 1;
                Transition::next_state(Button::On).reply(reply, Ok(Button::On))
            }
            (Button::On, Event::Call(Press::Push, reply)) => {
                Transition::next_state(Button::Off).reply(reply, Ok(Button::Off))
            }
            (_, Event::Call(Press::Crash, _)) => panic!("crashed on purpose"),
            (_, Event::Call(Press::GetCount, reply)) => {
                Transition::keep_state().reply(reply, Err(self.count))
            }
            _ => Transition::keep_state(),
        }
    }
}

#[test]
fn the_push_button_toggles_and_counts() {
    run_with(2, || {
        let b = gen_statem::start::<PushButton>(()).unwrap();
        assert_eq!(b.call(Press::Push), Ok(Ok(Button::On)));
        assert_eq!(b.call(Press::GetCount), Ok(Err(1)));
        assert_eq!(b.call(Press::Push), Ok(Ok(Button::Off)));
        assert_eq!(b.call(Press::Push), Ok(Ok(Button::On)));
        assert_eq!(b.call(Press::GetCount), Ok(Err(2)));
        b.shutdown().unwrap();
    });
}

const BUTTON: StatemName<PushButton> = StatemName::new("statem-button");

#[test]
fn a_supervised_machine_is_restarted_fresh_and_reachable_by_name() {
    for threads in THREADS {
        run_with(threads, || {
            let sup = supervisor::start(
                SupFlags::new(Strategy::OneForOne).intensity(5, Duration::from_secs(10)),
                vec![ChildSpec::named_statem::<PushButton>(
                    "button",
                    BUTTON,
                    || (),
                )],
            )
            .unwrap();
            let first = gen_statem::whereis(BUTTON).unwrap();
            assert_eq!(first.call(Press::Push), Ok(Ok(Button::On)));
            let down = smarm::monitor(first.pid());
            assert_eq!(first.call(Press::Crash), Err(CallError::ServerDown));
            down.rx.recv_timeout(Duration::from_secs(10)).unwrap();
            let give_up = Instant::now() + Duration::from_secs(10);
            let second = loop {
                match gen_statem::whereis(BUTTON) {
                    Some(b) if b.pid() != first.pid() => break b,
                    _ => {
                        assert!(Instant::now() < give_up, "never restarted");
                        smarm::sleep(Duration::from_millis(1));
                    }
                }
            };
            assert_eq!(second.call(Press::GetCount), Ok(Err(0)));
            sup.shutdown().unwrap();
        });
    }
}

/// A kiln whose casts are a derived message enum: its client methods
/// work on the machine's `StatemRef`, and a call riding in a cast is
/// postponed like any event.
#[derive(smarm::Actor)]
enum KilnMsg {
    /// Fire for this many ms.
    Fire(u64),
    /// How many firings so far; answered only when idle.
    Firings(smarm::Reply<u32>),
}

#[derive(Debug, PartialEq, Clone, Copy)]
enum Kiln {
    Idle,
    Firing,
}

struct KilnData {
    firings: u32,
}

impl GenStatem for KilnData {
    type Args = ();
    type State = Kiln;
    type Call = ();
    type Reply = ();
    type Cast = KilnMsg;
    type Info = ();
    type Internal = ();
    type Timeout = ();

    fn init(_: (), _: &mut Ctx<Self>) -> Result<Init<Self>, InitError> {
        Ok(Init::new(Kiln::Idle, KilnData { firings: 0 }))
    }

    fn handle_event(
        &mut self,
        state: &Kiln,
        event: Event<Self>,
        _: &mut Ctx<Self>,
    ) -> Transition<Self> {
        match (state, event) {
            (Kiln::Idle, Event::Cast(KilnMsg::Fire(ms))) => {
                self.firings += 1;
                Transition::next_state(Kiln::Firing).state_timeout(Duration::from_millis(ms), ())
            }
            (Kiln::Firing, Event::StateTimeout(())) => Transition::next_state(Kiln::Idle),
            (Kiln::Idle, Event::Cast(KilnMsg::Firings(reply))) => {
                reply.reply(self.firings);
                Transition::keep_state()
            }
            // A firing kiln answers nothing: after it cools.
            (Kiln::Firing, event @ Event::Cast(_)) => Transition::keep_state().postpone(event),
            _ => Transition::keep_state(),
        }
    }
}

#[test]
fn a_derived_message_enum_drives_a_state_machine_through_its_ref() {
    run_with(2, || {
        let kiln = gen_statem::start::<KilnData>(()).unwrap();
        let started = Instant::now();
        kiln.fire(50).unwrap();
        kiln.fire(10).unwrap(); // postponed: fired after the first
        // Postponed until the kiln is idle again, after both firings.
        assert_eq!(kiln.firings(), Ok(2));
        assert!(started.elapsed() >= Duration::from_millis(60));
        // From async code too (a plain thread's executor).
        let k = kiln.clone();
        let count = std::thread::spawn(move || smarm::future::block_on(k.firings_async()))
            .join()
            .unwrap();
        assert_eq!(count, Ok(2));
        kiln.shutdown().unwrap();
        let refused = kiln.fire(1).unwrap_err().into_inner();
        assert!(matches!(refused, KilnMsg::Fire(1)), "handed back");
        assert_eq!(kiln.firings(), Err(CallError::ServerDown));
    });
}
