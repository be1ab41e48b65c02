//! `smarm::net` beyond the echo path: the listen backlog, socket options,
//! std and raw-fd conversions, `&TcpStream` shared by a reader and a writer
//! actor, std's timeout rules, `peek`, `incoming`, plain-thread use, and
//! Unix domain sockets.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

mod support;

use smarm::net::{
    TcpListener, TcpSocket, TcpStream, UdpSocket, UnixDatagram, UnixListener, UnixStream,
};
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use support::run_with;

/// A fresh directory for socket paths, removed by the caller.
fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("smarm-net-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_default_backlog_holds_500_unaccepted_connections() {
    // std's backlog of 128 would drop the SYNs past it: those connects
    // would time out while nobody accepts.
    run_with(2, || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (held, connected) = smarm::channel();
        let clients: Vec<_> = (0..500)
            .map(|_| {
                let held = held.clone();
                smarm::spawn(move || {
                    let conn = TcpStream::connect_timeout(&addr, Duration::from_secs(20)).unwrap();
                    held.send(conn).unwrap();
                })
            })
            .collect();
        for c in clients {
            c.join().unwrap();
        }
        drop(held);
        let held: Vec<TcpStream> =
            std::iter::from_fn(|| connected.try_recv().ok().flatten()).collect();
        assert_eq!(held.len(), 500);
        let accepted: Vec<_> = (0..500).map(|_| listener.accept().unwrap()).collect();
        assert_eq!(accepted.len(), 500);
    });
}

#[test]
fn tcp_socket_sets_options_before_listen_and_two_listeners_share_a_port() {
    run_with(2, || {
        let a = TcpSocket::new_v4().unwrap();
        a.set_reuseaddr(true).unwrap();
        a.set_reuseport(true).unwrap();
        assert!(a.reuseaddr().unwrap());
        assert!(a.reuseport().unwrap());
        a.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let a = a.listen(64).unwrap();
        let addr = a.local_addr().unwrap();
        // Without SO_REUSEPORT a second bind of the port is refused.
        let plain = TcpSocket::new_v4().unwrap();
        assert_eq!(plain.bind(addr).unwrap_err().kind(), ErrorKind::AddrInUse);
        let b = TcpSocket::new_v4().unwrap();
        b.set_reuseport(true).unwrap();
        b.bind(addr).unwrap();
        let b = b.listen(64).unwrap();
        // The kernel spreads connections over both; together they take all.
        let a = Arc::new(a);
        let b = Arc::new(b);
        let total = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let acceptors: Vec<_> = [a, b]
            .into_iter()
            .map(|l| {
                let total = total.clone();
                smarm::spawn(move || {
                    while total.load(std::sync::atomic::Ordering::SeqCst) < 40 {
                        match smarm::io::wait_readable_timeout(
                            l.as_raw_fd(),
                            Duration::from_millis(20),
                        ) {
                            Ok(true) => {
                                l.accept().unwrap();
                                total.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            }
                            Ok(false) => {}
                            Err(e) => panic!("{e}"),
                        }
                    }
                })
            })
            .collect();
        let conns: Vec<_> = (0..40).map(|_| TcpStream::connect(addr).unwrap()).collect();
        for h in acceptors {
            h.join().unwrap();
        }
        assert_eq!(total.load(std::sync::atomic::Ordering::SeqCst), 40);
        drop(conns);
    });
}

#[test]
fn sockets_convert_from_and_into_std_and_raw_fds() {
    run_with(2, || {
        // A blocking std listener becomes a smarm one whose accept parks.
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let listener = TcpListener::from(std_listener);
        let addr = listener.local_addr().unwrap();
        let server = smarm::spawn(move || {
            let (conn, _) = listener.accept().unwrap();
            // Through a raw fd and back.
            let fd = conn.into_raw_fd();
            // SAFETY: `fd` came from into_raw_fd just above: open and ours.
            let mut conn = unsafe { TcpStream::from_raw_fd(fd) };
            conn.write_all(b"via raw fd").unwrap();
            // Through OwnedFd and back.
            let owned: OwnedFd = conn.into();
            let conn = TcpStream::from(owned);
            let std_conn = conn.into_std();
            // SAFETY: F_GETFL on an open fd.
            let flags = unsafe { libc::fcntl(std_conn.as_raw_fd(), libc::F_GETFL) };
            assert_ne!(
                flags & libc::O_NONBLOCK,
                0,
                "into_std hands it back non-blocking"
            );
        });
        let std_client = std::net::TcpStream::connect(addr).unwrap();
        let mut client = TcpStream::from(std_client);
        let mut buf = [0u8; 10];
        client.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"via raw fd");
        server.join().unwrap();
        assert_eq!(
            client.read(&mut buf).unwrap(),
            0,
            "EOF after the server dropped"
        );
    });
}

#[test]
fn a_reader_and_a_writer_actor_share_one_stream() {
    // Both directions wait on the same fd at once: the writer fills the
    // socket buffers (the server echoes, so it must also be read) while the
    // reader drains them.
    const TOTAL: usize = 4 << 20;
    run_with(2, || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let echo = smarm::spawn(move || {
            let (conn, _) = listener.accept().unwrap();
            let mut buf = vec![0u8; 64 << 10];
            let mut conn = &conn;
            loop {
                let n = conn.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                conn.write_all(&buf[..n]).unwrap();
            }
        });
        let stream = Arc::new(TcpStream::connect(addr).unwrap());
        let writer = {
            let stream = stream.clone();
            smarm::spawn(move || {
                let chunk: Vec<u8> = (0..32 << 10).map(|i| (i % 251) as u8).collect();
                let mut sent = 0;
                while sent < TOTAL {
                    (&*stream).write_all(&chunk).unwrap();
                    sent += chunk.len();
                }
                stream.shutdown(std::net::Shutdown::Write).unwrap();
            })
        };
        let mut got = 0usize;
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let n = (&*stream).read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            for (k, b) in buf[..n].iter().enumerate() {
                assert_eq!(*b, ((got + k) % (32 << 10) % 251) as u8);
            }
            got += n;
        }
        assert_eq!(got, TOTAL);
        writer.join().unwrap();
        echo.join().unwrap();
    });
}

#[test]
fn timeouts_follow_std_rules_and_are_shared_by_clones() {
    run_with(1, || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let conn = TcpStream::connect(addr).unwrap();
        let (_server_side, _) = listener.accept().unwrap();
        let err = conn.set_read_timeout(Some(Duration::ZERO)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert_eq!(conn.read_timeout().unwrap(), None);
        conn.set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        conn.set_write_timeout(Some(Duration::from_secs(3)))
            .unwrap();
        let clone = conn.try_clone().unwrap();
        assert_eq!(
            clone.read_timeout().unwrap(),
            Some(Duration::from_millis(20))
        );
        assert_eq!(clone.write_timeout().unwrap(), Some(Duration::from_secs(3)));
        let mut buf = [0u8; 1];
        let err = (&clone).read(&mut buf).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::TimedOut);
        assert!(err.to_string().contains("TcpStream::read"), "{err}");
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert_eq!(
            udp.set_write_timeout(Some(Duration::ZERO))
                .unwrap_err()
                .kind(),
            ErrorKind::InvalidInput
        );
    });
}

#[test]
fn peek_ttl_take_error_and_incoming() {
    run_with(2, || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        listener.set_ttl(33).unwrap();
        assert_eq!(listener.ttl().unwrap(), 33);
        assert!(listener.take_error().unwrap().is_none());
        let (held, clients) = smarm::channel();
        let connector = smarm::spawn(move || {
            for i in 0..3 {
                let mut c = TcpStream::connect(addr).unwrap();
                c.write_all(&[i]).unwrap();
                held.send(c).unwrap();
            }
        });
        let mut seen = Vec::new();
        for conn in listener.incoming().take(3) {
            let conn = conn.unwrap();
            conn.set_ttl(17).unwrap();
            assert_eq!(conn.ttl().unwrap(), 17);
            let mut buf = [0u8; 1];
            assert_eq!(conn.peek(&mut buf).unwrap(), 1);
            let peeked = buf[0];
            assert_eq!((&conn).read(&mut buf).unwrap(), 1);
            assert_eq!(buf[0], peeked, "peek left the byte queued");
            seen.push(buf[0]);
            assert!(conn.take_error().unwrap().is_none());
        }
        seen.sort();
        assert_eq!(seen, [0, 1, 2]);
        connector.join().unwrap();
        drop(clients);
    });
}

#[test]
fn sockets_work_from_a_plain_thread_by_blocking_it() {
    run_with(2, || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // A plain OS thread uses smarm's stream: connect, write, and a read
        // that has to wait for the actor's reply.
        let client = std::thread::spawn(move || {
            let mut c = TcpStream::connect(addr).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            c.write_all(b"ping").unwrap();
            let mut buf = [0u8; 4];
            c.read_exact(&mut buf).unwrap();
            assert_eq!(&buf, b"pong");
            // And a read timeout on the thread.
            c.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
            assert_eq!(c.read(&mut buf).unwrap_err().kind(), ErrorKind::TimedOut);
        });
        let (mut conn, _) = listener.accept().unwrap();
        let mut buf = [0u8; 4];
        conn.read_exact(&mut buf).unwrap();
        smarm::sleep(Duration::from_millis(20)); // the thread is in poll by now
        conn.write_all(b"pong").unwrap();
        smarm::io::block_on_io(move || client.join()).unwrap();
        drop(conn);
    });
}

#[test]
fn unix_stream_listener_and_pair() {
    let dir = temp_dir("stream");
    let path = dir.join("kv.sock");
    let p = path.clone();
    run_with(2, move || {
        let listener = UnixListener::bind(&p).unwrap();
        assert_eq!(
            listener.local_addr().unwrap().as_pathname(),
            Some(p.as_path())
        );
        let server = smarm::spawn(move || {
            for conn in listener.incoming().take(20) {
                let conn = conn.unwrap();
                smarm::spawn(move || {
                    let mut buf = [0u8; 64];
                    let mut conn = &conn;
                    loop {
                        match conn.read(&mut buf).unwrap() {
                            0 => break,
                            n => conn.write_all(&buf[..n]).unwrap(),
                        }
                    }
                });
            }
        });
        let clients: Vec<_> = (0..20u8)
            .map(|i| {
                let p = p.clone();
                smarm::spawn(move || {
                    let mut c = UnixStream::connect(&p).unwrap();
                    for k in 0..50u8 {
                        c.write_all(&[i, k]).unwrap();
                        let mut back = [0u8; 2];
                        c.read_exact(&mut back).unwrap();
                        assert_eq!(back, [i, k]);
                    }
                })
            })
            .collect();
        for c in clients {
            c.join().unwrap();
        }
        server.join().unwrap();
        // A pair, with a read that parks until the other end writes.
        let (a, b) = UnixStream::pair().unwrap();
        let reader = smarm::spawn(move || {
            let mut buf = [0u8; 3];
            (&a).read_exact(&mut buf).unwrap();
            assert_eq!(&buf, b"abc");
        });
        smarm::sleep(Duration::from_millis(5));
        (&b).write_all(b"abc").unwrap();
        reader.join().unwrap();
    });
    // Misuse: a path too long and one with a NUL are clear errors.
    let long = dir.join("x".repeat(200));
    let err = std::thread::spawn(move || UnixListener::bind(long).unwrap_err())
        .join()
        .unwrap();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("limit"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unix_datagrams_by_path_and_connected() {
    let dir = temp_dir("dgram");
    let a_path = dir.join("a");
    let b_path = dir.join("b");
    run_with(2, move || {
        let a = UnixDatagram::bind(&a_path).unwrap();
        let b = UnixDatagram::bind(&b_path).unwrap();
        let b_path2 = b_path.clone();
        let receiver = smarm::spawn(move || {
            let mut buf = [0u8; 16];
            let (n, from) = b.recv_from(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"hello");
            assert_eq!(
                from.as_pathname().map(|p| p.to_owned()),
                Some(a_path.clone())
            );
            b.set_read_timeout(Some(Duration::from_millis(10))).unwrap();
            assert_eq!(b.recv(&mut buf).unwrap_err().kind(), ErrorKind::TimedOut);
        });
        smarm::sleep(Duration::from_millis(5));
        a.send_to(b"hello", &b_path2).unwrap();
        receiver.join().unwrap();
        let (x, y) = UnixDatagram::pair().unwrap();
        x.send(b"one").unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(y.recv(&mut buf).unwrap(), 3);
    });
    std::fs::remove_dir_all(&dir).unwrap();
}
