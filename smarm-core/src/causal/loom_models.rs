//! Loom model of a latency point's reading (C2):
//! `RUSTFLAGS="--cfg loom" cargo test -p smarm-core --release --lib
//! --features smarm-causal causal::`.

use super::progress::{Point, PointKind, SiteKind};
use super::*;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::thread;

/// A request begun in one thread and ended in another that heard of it
/// through a message (a release store and an acquire load, as a channel
/// does), read by a third: no reading has more ends than begins.
#[test]
fn ends_never_read_above_begins() {
    loom::model(|| {
        let point = Arc::new(Point::new("model", PointKind::Latency));
        let sent = Arc::new(AtomicBool::new(false));
        let client = {
            let (point, sent) = (point.clone(), sent.clone());
            thread::spawn(move || {
                point.visit(SiteKind::Begin);
                sent.store(true, Ordering::Release);
            })
        };
        let server = {
            let (point, sent) = (point.clone(), sent.clone());
            thread::spawn(move || {
                if sent.load(Ordering::Acquire) {
                    point.visit(SiteKind::End);
                }
            })
        };
        match point.count() {
            ProgressCount::Latency { begins, ends } => {
                assert!(ends <= begins, "ends {ends} read above begins {begins}")
            }
            other => panic!("a latency point read as {other:?}"),
        }
        client.join().unwrap();
        server.join().unwrap();
    });
}
