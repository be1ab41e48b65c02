//! Loom models of a heap account (heap (A2), (A3)): a free landing while
//! the cell passes to a new owner never reaches that owner, and credits
//! from other threads racing the owner's charges lose no byte:
//! `RUSTFLAGS="--cfg loom" cargo test -p smarm-core --release --lib heap`.

use super::table::{Account, GENERATION_MASK};
use crate::loom::AtomicBool;
use loom::sync::Arc;
use loom::thread;

/// A block of the old owner freed while the cell restarts for a new one:
/// either the credit lands first (and the restart zeroes the cell anyway)
/// or it finds the new generation and is dropped. The new owner's bytes
/// are its own charges, exactly.
#[test]
fn a_free_racing_a_restart_never_reaches_the_new_owner() {
    loom::model(|| {
        let stop = AtomicBool::new(false);
        let cell = Arc::new(Account::new());
        cell.restart(0, 0, &stop);
        let tag = cell.charge(100);
        let freer = {
            let cell = cell.clone();
            thread::spawn(move || cell.credit(tag & GENERATION_MASK, 100))
        };
        cell.restart(0, 0, &stop);
        cell.charge(10);
        freer.join().unwrap();
        assert_eq!(cell.bytes(), 10);
    });
}

/// Two consumers freeing the owner's blocks while it allocates more: every
/// byte is accounted for.
#[test]
fn credits_racing_charges_lose_nothing() {
    loom::model(|| {
        let stop = AtomicBool::new(false);
        let cell = Arc::new(Account::new());
        cell.restart(0, 0, &stop);
        let a = cell.charge(100);
        let b = cell.charge(50);
        let freers: Vec<_> = [(a, 100), (b, 50)]
            .into_iter()
            .map(|(tag, size)| {
                let cell = cell.clone();
                thread::spawn(move || cell.credit(tag & GENERATION_MASK, size))
            })
            .collect();
        cell.charge(7);
        for f in freers {
            f.join().unwrap();
        }
        assert_eq!(cell.bytes(), 7);
    });
}
