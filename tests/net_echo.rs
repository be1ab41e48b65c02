//! The echo server example, driven by 200 concurrent connections on
//! loopback exchanging 100 messages each, every byte checked.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

mod support;

#[path = "../examples/echo.rs"]
#[allow(dead_code)] // the example's main
mod echo;

use smarm::net::{TcpListener, TcpStream};
use std::io::{Read, Write};
use std::time::Duration;
use support::run_with;

#[test]
fn echo_server_serves_200_connections_of_100_messages() {
    run_with(2, || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(smarm::spawn(move || echo::serve(listener))); // swept when the root returns
        let clients: Vec<_> = (0..200u32)
            .map(|c| {
                smarm::spawn(move || {
                    let mut conn = TcpStream::connect(addr).unwrap();
                    conn.set_nodelay(true).unwrap();
                    conn.set_read_timeout(Some(Duration::from_secs(30)))
                        .unwrap();
                    for i in 0..100u32 {
                        // Messages of varying length with a per-byte pattern.
                        let len = 1 + ((c * 31 + i * 17) % 600) as usize;
                        let msg: Vec<u8> = (0..len)
                            .map(|k| (c as usize + i as usize * 7 + k) as u8)
                            .collect();
                        conn.write_all(&msg).unwrap();
                        let mut back = vec![0u8; len];
                        conn.read_exact(&mut back).unwrap();
                        assert_eq!(back, msg, "client {c} message {i} came back wrong");
                    }
                })
            })
            .collect();
        for c in clients {
            c.join().unwrap();
        }
    });
}

#[test]
fn connect_errors_and_timeouts_are_reported() {
    run_with(1, || {
        // Nobody listens on this port (bound, then closed).
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let err = TcpStream::connect(port).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
        // A read timeout on a silent connection.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = smarm::spawn(move || {
            let (conn, _) = listener.accept().unwrap();
            smarm::sleep(Duration::from_millis(100));
            drop(conn);
        });
        let mut conn = TcpStream::connect(addr).unwrap();
        conn.set_read_timeout(Some(Duration::from_millis(10)))
            .unwrap();
        let mut buf = [0u8; 1];
        assert_eq!(
            conn.read(&mut buf).unwrap_err().kind(),
            std::io::ErrorKind::TimedOut
        );
        server.join().unwrap();
        conn.set_read_timeout(None).unwrap();
        assert_eq!(
            conn.read(&mut buf).unwrap(),
            0,
            "EOF once the server closes"
        );
    });
}
