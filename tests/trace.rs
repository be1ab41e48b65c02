//! Runtime trace events (feature `trace`): what a ping-pong records, in
//! which order, and that the Chrome Trace export parses back.
#![cfg(feature = "trace")]
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

use smarm::runtime::{Config, Runtime};
use smarm::trace::{EventKind, QueueKind, TraceError};
use smarm::{Pid, WaitingOn, channel, spawn};
use std::collections::HashMap;

const ROUNDS: usize = 200;

/// A ping-pong of ROUNDS round trips between the root and one ponger, on
/// one scheduler, traced from a moment both are settled.
fn traced_ping_pong() -> (smarm::trace::Trace, Pid, Pid) {
    let rt = Runtime::new(Config::default().threads(1)).unwrap();
    rt.run(|| {
        let (ping_tx, ping_rx) = channel::<u32>();
        let (pong_tx, pong_rx) = channel::<u32>();
        let ponger = spawn(move || {
            while let Ok(n) = ping_rx.recv() {
                pong_tx.send(n + 1).unwrap();
            }
        });
        // Warm up: afterwards the ponger is parked in recv.
        ping_tx.send(0).unwrap();
        assert_eq!(pong_rx.recv().unwrap(), 1);
        smarm::trace::start();
        for i in 0..ROUNDS as u32 {
            ping_tx.send(i).unwrap();
            assert_eq!(pong_rx.recv().unwrap(), i + 1);
        }
        let trace = smarm::trace::stop().unwrap();
        let me = smarm::self_pid();
        let pong_pid = ponger.pid();
        drop(ping_tx);
        ponger.join().unwrap();
        (trace, me, pong_pid)
    })
}

#[test]
fn a_ping_pong_records_exactly_its_wakes_enqueues_parks_and_resumes() {
    let (trace, me, ponger) = traced_ping_pong();
    assert_eq!(trace.lost(), 0);
    let mut counts: HashMap<&'static str, usize> = HashMap::new();
    for event in trace.events() {
        assert_eq!(event.scheduler, Some(0), "one scheduler: {event:?}");
        let name = match event.kind {
            EventKind::Wake { pid, by } => {
                let expected = if pid == me { ponger } else { me };
                assert_eq!(by, Some(expected), "{pid} woken by its partner");
                "wake"
            }
            EventKind::Enqueue { queue, .. } => {
                assert_eq!(queue, QueueKind::Next, "a wake on one scheduler runs next");
                "enqueue"
            }
            EventKind::Park { on, .. } => {
                assert_eq!(on, Some(WaitingOn::Message));
                "park"
            }
            EventKind::Resume { .. } => "resume",
            other => panic!("unexpected event in a ping-pong: {other:?}"),
        };
        *counts.entry(name).or_default() += 1;
    }
    for kind in ["wake", "enqueue", "park", "resume"] {
        assert_eq!(counts.get(kind), Some(&(2 * ROUNDS)), "{kind}: {counts:?}");
    }

    // Each actor goes round Park -> Wake -> Enqueue -> Resume; the root
    // starts running, the ponger parked. A wake is made by the running
    // actor, and only one actor runs at a time.
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum St {
        Running,
        Parked,
        Woken,
        Queued,
    }
    let mut state = HashMap::from([(me, St::Running), (ponger, St::Parked)]);
    let mut running = Some(me);
    for event in trace.events() {
        let pid = event.kind.pid().unwrap();
        let st = state[&pid];
        let next = match (event.kind, st) {
            (EventKind::Park { .. }, St::Running) => {
                assert_eq!(running, Some(pid));
                running = None;
                St::Parked
            }
            (EventKind::Wake { by, .. }, St::Parked) => {
                assert_eq!(by, running, "the waker is the running actor");
                St::Woken
            }
            (EventKind::Enqueue { .. }, St::Woken) => St::Queued,
            (EventKind::Resume { .. }, St::Queued) => {
                assert_eq!(running, None, "two actors running on one scheduler");
                running = Some(pid);
                St::Running
            }
            (kind, st) => panic!("{kind:?} while {pid} is {st:?}"),
        };
        state.insert(pid, next);
    }
    // Timestamps never go backwards.
    assert!(trace.events().windows(2).all(|w| w[0].at <= w[1].at));
}

#[test]
fn the_chrome_export_parses_back_with_one_slice_per_run_and_a_flow_per_wake() {
    let (trace, me, ponger) = traced_ping_pong();
    let json: serde_json::Value = serde_json::from_str(&trace.to_chrome_json()).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let phase = |ph: &'static str| events.iter().filter(move |e| e["ph"] == ph);
    // One slice per resume: every run, the root's last one closed at the end.
    let slices: Vec<_> = phase("X").collect();
    assert_eq!(slices.len(), 2 * ROUNDS);
    for s in &slices {
        assert_eq!(s["tid"], 0);
        assert!(s["dur"].as_f64().unwrap() >= 0.0);
        let pid = s["args"]["pid"].as_str().unwrap();
        assert!(pid == me.to_string() || pid == ponger.to_string(), "{s}");
    }
    // Slices on one track do not overlap.
    let mut spans: Vec<(f64, f64)> = slices
        .iter()
        .map(|s| {
            let ts = s["ts"].as_f64().unwrap();
            (ts, ts + s["dur"].as_f64().unwrap())
        })
        .collect();
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert!(spans.windows(2).all(|w| w[0].1 <= w[1].0 + 1e-3));
    // A flow start per wake, each finished once with the same id.
    let starts: Vec<_> = phase("s").map(|e| e["id"].as_u64().unwrap()).collect();
    let mut finishes: Vec<_> = phase("f").map(|e| e["id"].as_u64().unwrap()).collect();
    assert_eq!(starts.len(), 2 * ROUNDS);
    finishes.sort_unstable();
    assert_eq!(starts, finishes);
    // The scheduler track is named.
    assert!(phase("M").any(|e| e["args"]["name"] == "scheduler 0"));
}

#[test]
fn spawn_exit_and_timer_fire_are_recorded() {
    let rt = Runtime::new(Config::default().threads(2)).unwrap();
    rt.run(|| {
        smarm::trace::start();
        let child = smarm::Builder::new()
            .name("sleeper")
            .spawn(|| smarm::time::sleep(std::time::Duration::from_millis(5)))
            .unwrap();
        let pid = child.pid();
        let me = smarm::self_pid();
        child.join().unwrap();
        let trace = smarm::trace::stop().unwrap();
        let has = |f: &dyn Fn(&EventKind) -> bool| trace.events().iter().any(|e| f(&e.kind));
        assert!(has(&|k| *k
            == EventKind::Spawn {
                pid,
                parent: Some(me)
            }));
        assert!(has(&|k| *k == EventKind::TimerFire { pid }));
        assert!(has(
            &|k| matches!(k, EventKind::Park { pid: p, on: Some(WaitingOn::Timer) } if *p == pid)
        ));
        assert!(has(&|k| *k
            == EventKind::Exit {
                pid,
                panicked: false
            }));
        assert!(has(
            &|k| matches!(k, EventKind::Park { pid: p, on: Some(WaitingOn::Join) } if *p == me)
        ));
    });
}

#[test]
fn stop_without_start_is_an_error_and_a_restart_forgets_the_old_events() {
    smarm::run(|| {
        assert_eq!(smarm::trace::stop().unwrap_err(), TraceError::NotStarted);
        smarm::trace::start();
        spawn(|| {}).join().unwrap();
        smarm::trace::start();
        let trace = smarm::trace::stop().unwrap();
        assert!(
            trace
                .events()
                .iter()
                .all(|e| !matches!(e.kind, EventKind::Spawn { .. })),
            "events from before the second start: {:?}",
            trace.events()
        );
        assert_eq!(smarm::trace::stop().unwrap_err(), TraceError::NotStarted);
    });
}

#[test]
fn a_full_ring_keeps_the_newest_events_and_counts_the_lost() {
    let rt = Runtime::new(Config::default().threads(1)).unwrap();
    rt.run(|| {
        smarm::trace::start_with_capacity(64);
        for _ in 0..100 {
            smarm::yield_now();
        }
        let trace = smarm::trace::stop().unwrap();
        let kept = trace.events().len() as u64;
        assert_eq!(kept, 64);
        // Each yield records a yield, an enqueue and a resume.
        assert_eq!(kept + trace.lost(), 300);
    });
}

#[test]
fn a_preempted_cruncher_records_preemptions_and_pinned_enqueues() {
    let rt = Runtime::new(
        Config::default()
            .threads(1)
            .timeslice(std::time::Duration::from_micros(100)),
    )
    .unwrap();
    rt.run(|| {
        smarm::trace::start();
        let cruncher = spawn(|| {
            let t0 = std::time::Instant::now();
            while t0.elapsed() < std::time::Duration::from_millis(20) {
                smarm::check!();
            }
        });
        let pid = cruncher.pid();
        cruncher.join().unwrap();
        let trace = smarm::trace::stop().unwrap();
        let preempts = trace
            .events()
            .iter()
            .filter(|e| e.kind == EventKind::Preempt { pid })
            .count();
        assert!(
            preempts >= 2,
            "{preempts} preemptions in 20 ms of 100 us slices"
        );
        // A preempted actor resumes on its own scheduler: the pinned queue.
        let pinned = trace
            .events()
            .iter()
            .filter(|e| {
                e.kind
                    == EventKind::Enqueue {
                        pid,
                        queue: QueueKind::Pinned,
                    }
            })
            .count();
        assert_eq!(pinned, preempts);
    });
}

#[test]
#[should_panic(expected = "smarm::trace::start")]
fn start_outside_an_actor_names_the_function() {
    smarm::trace::start();
}
