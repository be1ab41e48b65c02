//! An accept loop survives running out of file descriptors: `accept`
//! reports `EMFILE` at once (no hang, no panic), and the loop the
//! `TcpListener` docs show backs off and goes on once fds are freed.
//! Alone in its binary: it lowers the process's fd limit.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

mod support;

use smarm::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use support::run_with;

fn open_fds() -> u64 {
    std::fs::read_dir("/proc/self/fd").unwrap().count() as u64
}

fn set_soft_limit(n: u64) -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a live rlimit for the call to fill.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
    let old = lim.rlim_cur;
    lim.rlim_cur = n;
    // SAFETY: `lim` is a live, initialised rlimit.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) }, 0);
    old
}

#[test]
fn an_accept_loop_backs_off_on_emfile_and_goes_on() {
    const CLIENTS: usize = 12;
    run_with(1, || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // All clients connect first (they sit in the backlog), then the
        // limit leaves room for only 4 accepted connections.
        let clients: Vec<TcpStream> = (0..CLIENTS)
            .map(|_| TcpStream::connect(addr).unwrap())
            .collect();
        let old = set_soft_limit(open_fds() + 4);
        let accepted = Arc::new(AtomicUsize::new(0));
        let emfiles = Arc::new(AtomicUsize::new(0));
        let (conns_tx, conns) = smarm::channel();
        let acceptor = {
            let accepted = accepted.clone();
            let emfiles = emfiles.clone();
            smarm::spawn(move || {
                for conn in listener.incoming() {
                    match conn {
                        Ok(stream) => {
                            conns_tx.send(stream).unwrap();
                            if accepted.fetch_add(1, Ordering::SeqCst) + 1 == CLIENTS {
                                return;
                            }
                        }
                        Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                            emfiles.fetch_add(1, Ordering::SeqCst);
                            smarm::sleep(Duration::from_millis(5));
                        }
                        Err(e) => panic!("accept failed: {e}"),
                    }
                }
            })
        };
        // Wait until the acceptor has hit the limit.
        while emfiles.load(Ordering::SeqCst) == 0 {
            smarm::sleep(Duration::from_millis(1));
        }
        let at_limit = accepted.load(Ordering::SeqCst);
        assert!(
            (1..CLIENTS).contains(&at_limit),
            "the limit stopped accepts after {at_limit}"
        );
        // Free fds one connection at a time; the loop takes the rest.
        let mut closed = 0;
        while accepted.load(Ordering::SeqCst) < CLIENTS {
            if let Ok(Some(conn)) = conns.try_recv() {
                drop(conn);
                closed += 1;
            }
            smarm::sleep(Duration::from_millis(1));
        }
        acceptor.join().unwrap();
        set_soft_limit(old);
        assert!(
            closed >= CLIENTS - at_limit,
            "every later accept needed a freed fd"
        );
        assert!(emfiles.load(Ordering::SeqCst) >= 1);
        drop(clients);
    });
}
