//! IO: the blocking pool and fd readiness.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::io::{FdArm, block_on_io, wait_readable, wait_readable_timeout};
use std::io::ErrorKind;
use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{CountDrop, HangGuard, THREADS, parked_on, run_with};

fn pipe() -> (RawFd, RawFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two fds pipe2 writes.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) };
    assert_eq!(rc, 0);
    (fds[0], fds[1])
}

fn close(fd: RawFd) {
    // SAFETY: closing an fd this test opened and no longer uses.
    unsafe { libc::close(fd) };
}

#[test]
fn block_on_io_returns_values_and_reraises_panics() {
    for threads in THREADS {
        run_with(threads, || {
            assert_eq!(block_on_io(|| 6 * 7), 42);
            let s = block_on_io(|| String::from("from the pool"));
            assert_eq!(s, "from the pool");
            let r = std::panic::catch_unwind(|| block_on_io(|| -> u32 { panic!("pool panic") }));
            let payload = r.unwrap_err();
            assert_eq!(payload.downcast_ref::<&str>(), Some(&"pool panic"));
        });
    }
}

#[test]
fn thousand_blocking_calls_run_in_parallel() {
    let t0 = Instant::now();
    run_with(2, || {
        let hs: Vec<_> = (0..1_000)
            .map(|i| {
                smarm::spawn(move || {
                    let v = block_on_io(move || {
                        std::thread::sleep(Duration::from_millis(10));
                        i
                    });
                    assert_eq!(v, i);
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    });
    // Serially this is 10 s; the pool runs up to 64 at once (~160 ms).
    assert!(
        t0.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t0.elapsed()
    );
}

#[test]
fn a_reader_parked_on_a_pipe_wakes_on_write() {
    for threads in THREADS {
        run_with(threads, || {
            let (r, w) = pipe();
            let reader = smarm::spawn(move || {
                let mut buf = [0u8; 16];
                let n = smarm::io::read(r, &mut buf).unwrap();
                assert_eq!(&buf[..n], b"ping");
            });
            smarm::sleep(Duration::from_millis(5)); // parked in the read
            assert_eq!(smarm::io::write(w, b"ping").unwrap(), 4);
            reader.join().unwrap();
            close(r);
            close(w);
        });
    }
}

#[test]
fn waiting_on_a_closed_fd_is_an_error_at_once() {
    run_with(1, || {
        let (r, w) = pipe();
        close(r);
        close(w);
        let t0 = Instant::now();
        let err = wait_readable(r).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EBADF));
        assert!(t0.elapsed() < Duration::from_secs(1));
        assert_eq!(
            wait_readable_timeout(r, Duration::from_secs(5))
                .unwrap_err()
                .raw_os_error(),
            Some(libc::EBADF)
        );
    });
}

#[test]
fn a_second_waiter_on_one_fd_gets_already_exists() {
    run_with(2, || {
        let (r, w) = pipe();
        let first = smarm::spawn(move || wait_readable(r).unwrap());
        smarm::sleep(Duration::from_millis(5));
        let err = wait_readable(r).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::AlreadyExists);
        assert_eq!(smarm::io::write(w, b"x").unwrap(), 1);
        first.join().unwrap();
        close(r);
        close(w);
    });
}

#[test]
fn select_over_a_channel_and_an_fd_reports_the_ready_one_in_priority_order() {
    run_with(2, || {
        let (r, w) = pipe();
        let (tx, rx) = smarm::channel::<u32>();
        // Only the fd is ready.
        assert_eq!(smarm::io::write(w, b"x").unwrap(), 1);
        assert_eq!(smarm::select(&[&rx, &FdArm::readable(r)]), 1);
        // Both ready: arm 0 wins.
        tx.send(1).unwrap();
        assert_eq!(smarm::select(&[&rx, &FdArm::readable(r)]), 0);
        assert_eq!(smarm::select(&[&FdArm::readable(r), &rx]), 0);
        let _ = rx.try_recv();
        let mut buf = [0u8; 1];
        assert_eq!(smarm::io::read(r, &mut buf).unwrap(), 1);
        // Neither ready: parks, and the fd's readiness wakes it.
        let writer = smarm::spawn(move || {
            smarm::sleep(Duration::from_millis(5));
            assert_eq!(smarm::io::write(w, b"y").unwrap(), 1);
        });
        assert_eq!(smarm::select(&[&rx, &FdArm::readable(r)]), 1);
        writer.join().unwrap();
        // A channel win leaves no fd registration behind: the fd is free.
        let t = smarm::spawn(move || tx.send(2).unwrap());
        let (r2, w2) = pipe();
        assert_eq!(smarm::select(&[&rx, &FdArm::readable(r2)]), 0);
        t.join().unwrap();
        assert!(
            !wait_readable_timeout(r2, Duration::from_millis(5)).unwrap(),
            "the fd is registrable"
        );
        for fd in [r, w, r2, w2] {
            close(fd);
        }
    });
}

#[test]
fn stopping_an_actor_parked_on_an_fd_leaves_the_fd_registrable() {
    for threads in THREADS {
        run_with(threads, || {
            let (r, w) = pipe();
            let dropped = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let d = dropped.clone();
            let waiter = smarm::spawn(move || {
                let _guard = CountDrop(d);
                let _ = wait_readable(r);
                unreachable!("stopped while waiting");
            });
            smarm::sleep(Duration::from_millis(5));
            smarm::request_stop(waiter.pid());
            assert_eq!(
                waiter.join().unwrap_err().reason(),
                smarm::DownReason::Stopped
            );
            assert_eq!(dropped.load(std::sync::atomic::Ordering::SeqCst), 1);
            // The next actor can wait on the same fd.
            let next = smarm::spawn(move || wait_readable(r).unwrap());
            smarm::sleep(Duration::from_millis(5));
            assert_eq!(smarm::io::write(w, b"z").unwrap(), 1);
            next.join().unwrap();
            close(r);
            close(w);
        });
    }
}

/// A destructor that waits on an fd while its actor unwinds from a stop,
/// and is woken by a second stop rather than by the fd (a wake that does
/// not unwind, the actor being unwound already): the wait leaves no
/// registration behind, so the fd can be waited on again and the run ends.
#[test]
fn an_fd_wait_in_a_destructor_ended_by_a_second_stop_leaves_nothing_registered() {
    struct WaitsInDrop(RawFd);
    impl Drop for WaitsInDrop {
        fn drop(&mut self) {
            let _ = wait_readable(self.0); // never ready: the second stop ends it
        }
    }
    for threads in THREADS {
        let _hang = HangGuard::new(Duration::from_secs(60), "the run kept an fd wait counted");
        let (r, w) = pipe();
        run_with(threads, move || {
            let stopped = smarm::spawn(move || {
                let _waits = WaitsInDrop(r);
                loop {
                    smarm::sleep(Duration::from_secs(3600));
                }
            });
            smarm::sleep(Duration::from_millis(5));
            smarm::request_stop(stopped.pid()); // unwinds into the destructor's wait
            assert_eq!(parked_on(stopped.pid()), Some(smarm::WaitingOn::Fd));
            smarm::request_stop(stopped.pid()); // ends that wait, not by the fd
            assert_eq!(
                stopped.join().unwrap_err().reason(),
                smarm::DownReason::Stopped
            );
            let next = smarm::spawn(move || wait_readable(r).unwrap());
            smarm::sleep(Duration::from_millis(5));
            assert_eq!(smarm::io::write(w, b"z").unwrap(), 1);
            next.join().unwrap();
        });
        close(r);
        close(w);
    }
}

#[test]
fn run_returns_while_an_actor_waits_on_an_fd_that_never_becomes_ready() {
    for threads in THREADS {
        let (r, w) = pipe();
        let t0 = Instant::now();
        run_with(threads, move || {
            drop(smarm::spawn(move || {
                let _ = wait_readable(r); // never ready: swept at root exit
            }));
        });
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "run hung on an fd waiter"
        );
        close(r);
        close(w);
    }
}

#[test]
fn wait_with_timeout_reports_readiness_or_the_deadline() {
    run_with(2, || {
        let (r, w) = pipe();
        let t0 = Instant::now();
        assert!(!wait_readable_timeout(r, Duration::from_millis(10)).unwrap());
        assert!(t0.elapsed() >= Duration::from_millis(10));
        assert_eq!(smarm::io::write(w, b"!").unwrap(), 1);
        assert!(wait_readable_timeout(r, Duration::from_secs(5)).unwrap());
        assert!(smarm::io::wait_writable_timeout(w, Duration::from_secs(5)).unwrap());
        close(r);
        close(w);
    });
}

/// A waited-on fd stays in the epoll set (disarmed) for a cheap re-arm;
/// closing it and getting the same number back for a new pipe must still
/// register and wake correctly.
#[test]
fn a_closed_and_reused_fd_number_can_be_waited_on_again() {
    run_with(2, || {
        for round in 0..20 {
            let (r, w) = pipe();
            let reader = smarm::spawn(move || {
                let mut buf = [0u8; 1];
                assert_eq!(smarm::io::read(r, &mut buf).unwrap(), 1);
                assert_eq!(
                    smarm::io::read(r, &mut buf).unwrap(),
                    1,
                    "the second wait re-arms"
                );
            });
            smarm::sleep(Duration::from_millis(1));
            assert_eq!(smarm::io::write(w, b"a").unwrap(), 1);
            smarm::sleep(Duration::from_millis(1));
            assert_eq!(smarm::io::write(w, b"b").unwrap(), 1);
            reader.join().unwrap();
            close(r);
            close(w);
            let _ = round; // the next pipe() reuses these fd numbers
        }
    });
}

/// Readiness reaches a waiting actor while every scheduler stays busy (no
/// scheduler ever idles to park in the poll): the busy schedulers' own
/// polls deliver it, with the system monitor off.
#[test]
fn readiness_is_delivered_while_every_scheduler_is_busy() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    for threads in THREADS {
        let config = smarm::runtime::Config::exact(threads).blocked_after(None);
        let timed_out = Arc::new(AtomicUsize::new(0));
        let spun_out = timed_out.clone();
        smarm::runtime::init(config).run(move || {
            let timed_out = spun_out;
            let (r, w) = pipe();
            let got = Arc::new(AtomicBool::new(false));
            // One spinner per scheduler, yielding, until the reader got its
            // byte (or a bound long past any reasonable delivery).
            let spinners: Vec<_> = (0..threads)
                .map(|_| {
                    let (got, timed_out) = (got.clone(), timed_out.clone());
                    smarm::spawn(move || {
                        let t0 = Instant::now();
                        while !got.load(Ordering::Acquire) {
                            if t0.elapsed() > Duration::from_secs(20) {
                                timed_out.fetch_add(1, Ordering::Relaxed);
                                return;
                            }
                            smarm::yield_now();
                        }
                    })
                })
                .collect();
            let reader = {
                let got = got.clone();
                smarm::spawn(move || {
                    let mut buf = [0u8; 1];
                    assert_eq!(smarm::io::read(r, &mut buf).unwrap(), 1);
                    got.store(true, Ordering::Release);
                })
            };
            // Written from a plain thread once the spinners own the
            // schedulers and the reader waits.
            let writer = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                // SAFETY: one byte from a live local to our pipe.
                assert_eq!(unsafe { libc::write(w, b"x".as_ptr().cast(), 1) }, 1);
            });
            reader.join().unwrap();
            assert!(got.load(Ordering::Acquire), "the reader must have its byte");
            for s in spinners {
                s.join().unwrap();
            }
            writer.join().unwrap();
            close(r);
            close(w);
        });
        assert_eq!(
            timed_out.load(Ordering::Relaxed),
            0,
            "{threads} scheduler(s): the byte reached the reader only once the spinners gave up"
        );
    }
}

/// A connection owned by the actor, borrowed by each pool job: no
/// `'static` bound, no moving it out and back.
#[test]
fn block_on_io_scoped_borrows_a_connection_from_the_actors_stack() {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap();
        let mut lines = BufReader::new(conn.try_clone().unwrap());
        let mut conn = conn;
        let mut line = String::new();
        while lines.read_line(&mut line).unwrap() > 0 {
            conn.write_all(line.to_uppercase().as_bytes()).unwrap();
            line.clear();
        }
    });
    {
        run_with(2, move || {
            let conn = std::net::TcpStream::connect(addr).unwrap();
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut conn = conn;
            let mut answers = Vec::new();
            for word in ["select", "from", "where"] {
                let answer = smarm::io::block_on_io_scoped(|| {
                    conn.write_all(format!("{word}\n").as_bytes()).unwrap();
                    let mut line = String::new();
                    reader.read_line(&mut line).unwrap();
                    line
                });
                answers.push(answer);
            }
            assert_eq!(answers, ["SELECT\n", "FROM\n", "WHERE\n"]);
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                smarm::io::block_on_io_scoped(|| panic!("in the scoped job"))
            }));
            assert!(r.is_err(), "the panic comes back to the caller");
        });
    }
    server.join().unwrap();
}

/// A stop request while a scoped job runs takes effect only once the job
/// is done with what it borrowed.
#[test]
fn a_stop_waits_for_the_scoped_job_that_borrows_from_the_stack() {
    for threads in THREADS {
        run_with(threads, || {
            let (started_tx, started_rx) = std::sync::mpsc::channel();
            let finished = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let returned = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let (f, r) = (finished.clone(), returned.clone());
            let worker = smarm::spawn(move || {
                let mut borrowed = [0u8; 16];
                smarm::io::block_on_io_scoped(|| {
                    started_tx.send(()).unwrap();
                    std::thread::sleep(Duration::from_millis(100));
                    borrowed[0] = 1; // the stack frame must still be there
                    f.store(true, std::sync::atomic::Ordering::SeqCst);
                });
                r.store(true, std::sync::atomic::Ordering::SeqCst);
                borrowed[0]
            });
            started_rx.recv().unwrap();
            smarm::request_stop(worker.pid());
            let outcome = worker.join();
            assert!(
                finished.load(std::sync::atomic::Ordering::SeqCst),
                "the job ran to its end"
            );
            assert!(
                !returned.load(std::sync::atomic::Ordering::SeqCst),
                "then the stop took effect"
            );
            assert!(outcome.is_err(), "a stopped actor has no value");
        });
    }
}
