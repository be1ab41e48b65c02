//! Socket readiness through the edge-triggered registrations (io (I5),
//! net (N3)): no byte is missed however writes interleave with short
//! reads, and a socket moved to a second run of the runtime re-arms in that
//! run's epoll set.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

mod support;

use smarm::net::{TcpListener, TcpStream, UnixStream};
use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use support::{HangGuard, Rng, THREADS, run_with};

/// Bytes each client sends, in writes of 1..=CHUNK bytes.
const TOTAL: usize = 200_000;
const CHUNK: usize = 700;
const CLIENTS: usize = 8;

/// Readers with a small buffer (so reads come back both full and short,
/// and short ones take the wait-for-an-edge path) against plain-thread
/// writers that send odd sizes with pauses between some: every byte
/// arrives, in order. A lost edge would leave a reader parked with bytes
/// in its socket; the run would not end and the hang guard fails the test.
#[test]
fn stream_readers_miss_no_byte_between_short_reads_and_new_data() {
    for threads in THREADS {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(AtomicUsize::new(0));
        let writers: Vec<_> = (0..CLIENTS)
            .map(|i| {
                std::thread::spawn(move || {
                    let mut s = std::net::TcpStream::connect(addr).unwrap();
                    s.set_nodelay(true).unwrap();
                    let mut rng = Rng::new(0x9E37_79B9_7F4A_7C15 ^ (i as u64 + 1));
                    let mut sent = 0;
                    while sent < TOTAL {
                        let n = (1 + rng.below(CHUNK as u64) as usize).min(TOTAL - sent);
                        let bytes: Vec<u8> = (sent..sent + n).map(|k| (k % 251) as u8).collect();
                        s.write_all(&bytes).unwrap();
                        sent += n;
                        match rng.below(16) {
                            0 => std::thread::sleep(Duration::from_micros(200)),
                            1 => std::thread::yield_now(),
                            _ => {}
                        }
                    }
                })
            })
            .collect();
        let got = received.clone();
        let _guard = HangGuard::new(Duration::from_secs(120), "a stream reader missed an edge");
        run_with(threads, move || {
            let listener = TcpListener::from(listener);
            let readers: Vec<_> = (0..CLIENTS)
                .map(|_| {
                    let (stream, _) = listener.accept().unwrap();
                    let got = got.clone();
                    smarm::spawn(move || {
                        let mut buf = [0u8; 512];
                        let mut at = 0usize;
                        while at < TOTAL {
                            let n = (&stream).read(&mut buf).unwrap();
                            assert!(n > 0, "EOF after {at} of {TOTAL} bytes");
                            for (k, b) in buf[..n].iter().enumerate() {
                                assert_eq!(
                                    *b,
                                    ((at + k) % 251) as u8,
                                    "byte {} out of order",
                                    at + k
                                );
                            }
                            at += n;
                        }
                        got.fetch_add(at, Ordering::Relaxed);
                    })
                })
                .collect();
            for r in readers {
                r.join().unwrap();
            }
        });
        for w in writers {
            w.join().unwrap();
        }
        assert_eq!(received.load(Ordering::Relaxed), TOTAL * CLIENTS);
    }
}

/// A socket read in one run, then read again in a second run of the same
/// runtime (a new epoll set): the second wait arms the fd in the new set
/// instead of trusting the old one, and the reader wakes.
#[test]
fn a_socket_moved_to_a_second_run_rearms_in_that_runs_epoll_set() {
    let _guard = HangGuard::new(Duration::from_secs(60), "a second run trusted a stale arm");
    let rt = smarm::runtime::init(smarm::runtime::Config::exact(2));
    let (a, b) = UnixStream::pair().unwrap();
    let (a, b) = (Arc::new(a), Arc::new(b));
    for round in 0..3u8 {
        let (a, b) = (a.clone(), b.clone());
        rt.run(move || {
            let reader = smarm::spawn(move || {
                let mut buf = [0u8; 4];
                // Drains the socket (1 byte into 4): the next read waits
                // for an edge first.
                assert_eq!((&*a).read(&mut buf).unwrap(), 1);
                assert_eq!(buf[0], round);
            });
            smarm::sleep(Duration::from_millis(20));
            (&*b).write_all(&[round]).unwrap();
            reader.join().unwrap();
        });
    }
}

/// A short read marks the stream drained; a later byte must still wake
/// the reader when it was sent before the reader got back to its wait.
#[test]
fn data_sent_between_a_draining_read_and_the_next_read_is_seen() {
    let _guard = HangGuard::new(Duration::from_secs(60), "a read missed data sent before it");
    run_with(2, || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let client = smarm::spawn(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            for i in 0..1000u32 {
                s.write_all(&i.to_le_bytes()).unwrap();
                if i % 7 == 0 {
                    smarm::yield_now();
                }
            }
        });
        let (server, _) = listener.accept().unwrap();
        let mut buf = [0u8; 64];
        let mut got = Vec::new();
        while got.len() < 4000 {
            let n = (&server).read(&mut buf).unwrap();
            assert!(n > 0);
            got.extend_from_slice(&buf[..n]);
            // Work between reads, so writes land before the next read.
            for _ in 0..3 {
                smarm::yield_now();
            }
        }
        for (i, word) in got.chunks(4).enumerate() {
            assert_eq!(u32::from_le_bytes(word.try_into().unwrap()), i as u32);
        }
        client.join().unwrap();
    });
}

/// An edge a poll takes while the reader is busy elsewhere is kept for the
/// reader's next wait. Another actor waits on a pipe meanwhile, so the
/// idle schedulers poll; the byte is written and polled while the reader
/// waits on a channel, not on its socket. Losing that edge would park the
/// reader for good (the hang guard fails the test).
#[test]
fn an_edge_polled_while_the_reader_is_elsewhere_is_kept_for_its_next_read() {
    let _guard = HangGuard::new(
        Duration::from_secs(60),
        "an edge polled with no waiter was lost",
    );
    for threads in [1, 2] {
        run_with(threads, || {
            let mut fds = [0; 2];
            // SAFETY: `fds` has room for the two fds pipe2 writes.
            let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK) };
            assert_eq!(rc, 0);
            let [pipe_r, pipe_w] = fds;
            // Keeps an fd waited on, so idle schedulers park in the poll.
            let bystander = smarm::spawn(move || {
                smarm::io::wait_readable(pipe_r).unwrap();
            });
            let (a, b) = UnixStream::pair().unwrap();
            let (go_tx, go_rx) = smarm::channel::<()>();
            let (done_tx, done_rx) = smarm::channel::<()>();
            let writer = smarm::spawn(move || {
                for round in 0..20u8 {
                    if go_rx.recv().is_err() {
                        return;
                    }
                    (&b).write_all(&[round]).unwrap();
                    // Idle time: a poll takes the edge now.
                    smarm::sleep(Duration::from_millis(5));
                    done_tx.send(()).unwrap();
                }
            });
            let mut buf = [0u8; 8];
            for round in 0..20u8 {
                go_tx.send(()).unwrap();
                done_rx.recv().unwrap();
                // The first read arms the socket; every read is short, so
                // each next one waits for an edge first.
                assert_eq!((&a).read(&mut buf).unwrap(), 1);
                assert_eq!(buf[0], round);
            }
            writer.join().unwrap();
            // SAFETY: one byte from a live local to our pipe; then closing
            // the fds this test opened.
            unsafe {
                libc::write(pipe_w, b"x".as_ptr().cast(), 1);
            }
            bystander.join().unwrap();
            // SAFETY: closing the fds this test opened and no longer uses.
            unsafe {
                libc::close(pipe_r);
                libc::close(pipe_w);
            }
        });
    }
}

/// The peer's last bytes and its close arrive in one edge: the read that
/// takes the bytes is short, and the next read must see EOF at once (no
/// edge follows a close), not wait for data that will never come.
#[test]
fn a_close_behind_the_last_bytes_ends_the_next_read_with_eof() {
    let _guard = HangGuard::new(
        Duration::from_secs(60),
        "a drained read waited past a close",
    );
    for threads in [1, 2] {
        run_with(threads, || {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let client = smarm::spawn(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                // Let the server park on its read first (its fd armed).
                smarm::sleep(Duration::from_millis(20));
                s.write_all(b"abc").unwrap();
                s.shutdown(std::net::Shutdown::Write).unwrap();
            });
            let (server, _) = listener.accept().unwrap();
            let mut buf = [0u8; 64];
            assert_eq!((&server).read(&mut buf).unwrap(), 3);
            assert_eq!(&buf[..3], b"abc");
            assert_eq!((&server).read(&mut buf).unwrap(), 0, "EOF after the close");
            client.join().unwrap();
        });
    }
}
