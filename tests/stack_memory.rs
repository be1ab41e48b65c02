//! Stack memory comes back, page tables included: after a run whose
//! actors used 2,560 stacks of 2 MiB (one page-table page each), the
//! chunks whose stacks are all free give their page tables back (all but
//! those of the 256 warm stacks the pool keeps); and a chunk
//! revived for later actors has its guard pages again, so an overflow
//! there is still caught and contained.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

use smarm::DownReason;
use smarm::runtime::{self, Config};
use std::sync::{Arc, Mutex};

/// A field of /proc/self/status, in KiB.
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[inline(never)]
#[allow(unconditional_recursion)] // the point: recurse until the guard page
fn recurse(depth: u64) -> u64 {
    let local = [depth; 64];
    recurse(depth + 1) + std::hint::black_box(local)[3]
}

/// `n` actors, each parked on a channel of its own.
fn park(n: usize) -> Vec<(smarm::Sender<()>, smarm::JoinHandle)> {
    (0..n)
        .map(|_| {
            let (tx, rx) = smarm::channel::<()>();
            let h = smarm::spawn(move || {
                let _ = rx.recv();
            });
            (tx, h)
        })
        .collect()
}

/// Let the actors of `park` go and join them.
fn release(parked: Vec<(smarm::Sender<()>, smarm::JoinHandle)>) {
    for (tx, h) in parked {
        tx.send(()).unwrap();
        h.join().unwrap();
    }
}

const STACK: usize = 2 << 20;
/// Forty chunks of 64: the pool's warm set (256 stacks, spread over a
/// few chunks that keep their page tables) stays a small part of them.
const ACTORS: usize = 2560;

#[test]
fn page_tables_of_free_stacks_come_back_and_revived_stacks_keep_their_guards() {
    let config = || Config::exact(2).stack_size(STACK);
    let before = status_kib("VmPTE");
    let parked_pte = Arc::new(Mutex::new(0));
    let p = parked_pte.clone();
    runtime::init(config()).run(move || {
        let parked = park(ACTORS);
        smarm::sleep(std::time::Duration::from_millis(20)); // all have run
        *p.lock().unwrap() = status_kib("VmPTE");
        release(parked);
    });
    let parked = *parked_pte.lock().unwrap();
    let after = status_kib("VmPTE");
    let grown = parked.saturating_sub(before);
    assert!(
        grown >= (ACTORS as u64 * 4) / 2,
        "{ACTORS} stacks 2 MiB apart should cost about {} KiB of page tables; grew {grown} KiB",
        ACTORS * 4
    );
    assert!(
        after.saturating_sub(before) <= grown / 3,
        "page tables: {before} KiB before, {parked} KiB with the actors parked, {after} KiB \
         after the run (the free chunks should have given theirs back)"
    );
    // The same stacks again: the warm ones, then revived chunks (no new
    // chunk is needed: fewer than ACTORS in all). Guards are back, so an
    // overflow on the last stacks taken, from a revived chunk, is caught in
    // the overflowing actor's own guard page.
    runtime::init(config()).run(|| {
        let others = park(ACTORS - 64);
        for _ in 0..5 {
            let h = smarm::spawn(|| {
                recurse(0);
            });
            assert_eq!(h.join().unwrap_err().reason(), DownReason::StackOverflow);
        }
        release(others);
    });
}
