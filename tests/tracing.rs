//! `tracing` integration (feature `tracing`): a span per actor, entered
//! while it runs and left while it is switched out; a span per behaviour
//! callback inside it; `in_span` across blocking calls; crash and
//! supervisor reports as events. Checked through tracing-subscriber's fmt
//! layer, as a user would see them.
#![cfg(feature = "tracing")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use smarm::gen_server::{self, Ctx, Flow, GenServer, InitError, Reply};
use smarm::runtime::{Config, Runtime};
use smarm::{Builder, channel};
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Everything the fmt layer wrote while `f` ran the runtime, one entry
/// per line.
fn captured(threads: usize, f: impl FnOnce() + Send + 'static) -> Vec<String> {
    #[derive(Clone)]
    struct Sink(Arc<Mutex<Vec<u8>>>);
    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buf = Arc::new(Mutex::new(Vec::new()));
    let sink = Sink(buf.clone());
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || sink.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::DEBUG)
        .finish();
    // The runtime takes the default of the thread that runs it.
    let _default = tracing::subscriber::set_default(subscriber);
    Runtime::new(Config::default().threads(threads))
        .unwrap()
        .run(f);
    let text = String::from_utf8(buf.lock().unwrap().clone()).unwrap();
    text.lines().map(str::to_string).collect()
}

fn line_with<'a>(lines: &'a [String], needle: &str) -> &'a str {
    lines
        .iter()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in {lines:#?}"))
}

#[test]
fn an_actors_span_follows_it_across_parks_and_not_onto_others() {
    for threads in [1, 2] {
        let lines = captured(threads, || {
            let (tx, rx) = channel::<()>();
            let a = Builder::new()
                .name("worker-a")
                .spawn(move || {
                    tracing::info!("a before the wait");
                    rx.recv().unwrap();
                    tracing::info!("a after the wait");
                })
                .unwrap();
            let b = Builder::new()
                .name("worker-b")
                .spawn(move || {
                    tracing::info!("b while a is parked");
                    tx.send(()).unwrap();
                })
                .unwrap();
            b.join().unwrap();
            a.join().unwrap();
            tracing::info!("the root, after both");
        });
        for needle in ["a before the wait", "a after the wait"] {
            let line = line_with(&lines, needle);
            assert!(line.contains("label=\"worker-a\""), "{threads}: {line}");
            assert!(!line.contains("worker-b"), "{threads}: {line}");
        }
        let line = line_with(&lines, "b while a is parked");
        assert!(line.contains("label=\"worker-b\""), "{threads}: {line}");
        assert!(!line.contains("worker-a"), "{threads}: {line}");
        // The root's span: a pid, no label, and neither worker's span.
        let line = line_with(&lines, "the root, after both");
        assert!(line.contains("actor{pid=<0."), "{threads}: {line}");
        assert!(!line.contains("worker-"), "{threads}: {line}");
    }
}

struct Napper;

impl GenServer for Napper {
    type Args = ();
    type Call = u64;
    type Reply = u64;
    type Cast = ();
    type Info = ();

    fn init(_: (), _: &mut Ctx<Self>) -> Result<Self, InitError> {
        Ok(Napper)
    }

    fn handle_call(&mut self, n: u64, reply: Reply<u64>, _: &mut Ctx<Self>) -> Flow {
        tracing::info!("call starts");
        // A blocking call inside the callback: the span must survive it.
        smarm::time::sleep(Duration::from_millis(2));
        tracing::info!("call ends");
        reply.reply(n + 1);
        Flow::Continue
    }
}

#[test]
fn a_callback_span_nests_in_the_actor_span_across_a_blocking_call() {
    let lines = captured(2, || {
        let server = gen_server::start::<Napper>(()).unwrap();
        assert_eq!(server.call(41).unwrap(), 42);
        tracing::info!("caller after the call");
        server.shutdown().unwrap();
    });
    for needle in ["call starts", "call ends"] {
        let line = line_with(&lines, needle);
        assert!(
            line.contains("}:handle_call{server=\"tracing::Napper\"}:"),
            "{line}"
        );
        assert!(line.contains("actor{pid="), "{line}");
    }
    let line = line_with(&lines, "caller after the call");
    assert!(!line.contains("handle_call"), "{line}");
}

#[test]
fn in_span_keeps_a_span_across_blocking_calls() {
    let lines = captured(2, || {
        let (tx, rx) = channel::<u32>();
        let waiter = Builder::new()
            .name("waiter")
            .spawn(move || {
                let span = tracing::info_span!("waiting", job = 7);
                smarm::in_span(&span, || {
                    rx.recv().unwrap();
                    tracing::info!("inside, after the recv");
                });
                tracing::info!("outside again");
            })
            .unwrap();
        smarm::time::sleep(Duration::from_millis(5));
        tracing::info!("the root, meanwhile");
        tx.send(1).unwrap();
        waiter.join().unwrap();
    });
    let line = line_with(&lines, "inside, after the recv");
    assert!(line.contains(":waiting{job=7}:"), "{line}");
    let line = line_with(&lines, "outside again");
    assert!(!line.contains("waiting{"), "{line}");
    let line = line_with(&lines, "the root, meanwhile");
    assert!(
        !line.contains("waiting{") && !line.contains("waiter"),
        "{line}"
    );
}

#[test]
fn reports_are_events_when_a_subscriber_is_set() {
    let lines = captured(1, || {
        let h = Builder::new()
            .name("tracing-crasher")
            .spawn(|| panic!("boom in tracing"))
            .unwrap();
        assert!(h.join().is_err());
    });
    let line = line_with(&lines, "panicked: boom in tracing");
    assert!(line.contains("ERROR"), "{line}");
    assert!(line.contains("smarm::report"), "{line}");
    assert!(line.contains("label=\"tracing-crasher\""), "{line}");
}
