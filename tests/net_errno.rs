//! An IO call that parks reads the `errno` of the thread it failed on,
//! not of the thread it started on (errno (E1)).
//!
//! Acceptors on clones of one listener each park in `accept`; every
//! connection wakes them all, one takes it and the others fail again
//! with `EAGAIN`, often on another scheduler than the one they parked
//! from. Meanwhile an actor on each scheduler sets its thread's `errno`
//! to `ENOENT`, as a failed epoll re-arm leaves it. An `accept` that read
//! `errno` through an address computed before it parked (std's
//! `__errno_location` is declared constant per thread, and optimised
//! code hoists it out of the retry loop) reported `ENOENT`: "accept
//! failed: No such file or directory". Only optimised builds hoist it:
//! `cargo test --release` runs this.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

mod support;

use smarm::net::TcpListener;
use std::io::ErrorKind;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{HangGuard, run_with};

const CONNECTIONS: usize = 4_000;
const ACCEPTORS: usize = 6;

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "only optimised code hoists errno's address out of the retry loop: run with --release"
)]
fn accept_after_a_park_reads_the_errno_of_its_own_thread() {
    let _guard = HangGuard::new(Duration::from_secs(120), "accept errno race");
    for threads in [2, 4] {
        let errors = Arc::new(Mutex::new(Vec::<String>::new()));
        let seen = errors.clone();
        run_with(threads, move || {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let accepted = Arc::new(AtomicUsize::new(0));
            let done = Arc::new(AtomicBool::new(false));
            let mut acceptors = Vec::new();
            for _ in 0..ACCEPTORS {
                let listener = listener.try_clone().unwrap();
                let (accepted, done, errors) = (accepted.clone(), done.clone(), seen.clone());
                acceptors.push(smarm::spawn(move || {
                    while !done.load(Ordering::Acquire) {
                        match listener.accept() {
                            Ok((stream, _)) => {
                                drop(stream);
                                if accepted.fetch_add(1, Ordering::AcqRel) + 1 == CONNECTIONS {
                                    done.store(true, Ordering::Release);
                                }
                            }
                            Err(e) if e.kind() == ErrorKind::Interrupted => {}
                            Err(e) => errors.lock().unwrap().push(e.to_string()),
                        }
                    }
                }));
            }
            let mut poisoners = Vec::new();
            for _ in 0..=threads {
                let done = done.clone();
                poisoners.push(smarm::spawn(move || {
                    while !done.load(Ordering::Acquire) {
                        // SAFETY: errno is this thread's own int; any value
                        // may be stored in it.
                        unsafe { *libc::__errno_location() = libc::ENOENT };
                        smarm::yield_now();
                    }
                }));
            }
            let clients = std::thread::spawn(move || {
                for _ in 0..CONNECTIONS {
                    drop(std::net::TcpStream::connect(addr).unwrap());
                }
            });
            let guard = HangGuard::new(
                Duration::from_secs(60),
                "the acceptors never took every connection",
            );
            while !done.load(Ordering::Acquire) {
                smarm::sleep(Duration::from_millis(5));
            }
            drop(guard);
            // Wake the acceptors still parked in accept.
            for _ in 0..ACCEPTORS {
                drop(std::net::TcpStream::connect(addr).unwrap());
            }
            for acceptor in acceptors {
                acceptor.join().unwrap();
            }
            for poisoner in poisoners {
                poisoner.join().unwrap();
            }
            clients.join().unwrap();
        });
        let errors = errors.lock().unwrap();
        assert!(
            errors.is_empty(),
            "{threads} schedulers: accept failed {} times, first: {}",
            errors.len(),
            errors[0]
        );
    }
}
