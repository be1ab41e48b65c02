//! `OsSignals`: a raised signal reaches an actor parked on it, a plain
//! thread blocked on it, and a `select` arm; the runtime's own signals are
//! refused; one listener per signal; dropping restores the previous
//! disposition. Alone in its binary: signal dispositions are per process.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

use smarm::io::OsSignals;
use std::io::ErrorKind;
use std::time::Duration;

fn raise(sig: libc::c_int) {
    // SAFETY: raising a signal this test catches.
    assert_eq!(unsafe { libc::raise(sig) }, 0);
}

/// The current handler address of `sig`.
fn disposition(sig: libc::c_int) -> usize {
    // SAFETY: all-zero is a valid sigaction for the kernel to fill.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only reads the current one.
    let rc = unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) };
    assert_eq!(rc, 0);
    old.sa_sigaction
}

#[test]
fn signals_reach_actors_threads_and_select_and_handlers_come_back() {
    // SAFETY: ignoring SIGUSR2 for the whole process, as the "previous"
    // disposition to restore.
    unsafe { libc::signal(libc::SIGUSR2, libc::SIG_IGN) };
    assert_eq!(disposition(libc::SIGUSR2), libc::SIG_IGN);

    smarm::run(|| {
        // Refused: the runtime's and the kernel's own.
        for sig in [libc::SIGSEGV, libc::SIGKILL, 0, 200] {
            let err = OsSignals::new(&[sig]).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "signal {sig}");
        }
        let signals = OsSignals::new(&[libc::SIGUSR1, libc::SIGUSR2]).unwrap();
        assert_eq!(
            OsSignals::new(&[libc::SIGUSR2]).unwrap_err().kind(),
            ErrorKind::AlreadyExists
        );
        // An actor parked on it is woken by a signal raised later.
        let (ready_tx, ready) = smarm::channel::<()>();
        let raiser = smarm::spawn(move || {
            ready.recv().unwrap();
            smarm::sleep(Duration::from_millis(10));
            raise(libc::SIGUSR2);
        });
        ready_tx.send(()).unwrap();
        assert_eq!(signals.recv().unwrap(), libc::SIGUSR2);
        raiser.join().unwrap();
        // As a select arm, beside a channel.
        let (_tx, rx) = smarm::channel::<()>();
        raise(libc::SIGUSR1);
        assert_eq!(smarm::select(&[&rx, &signals.arm()]), 1);
        assert_eq!(signals.try_recv().unwrap(), Some(libc::SIGUSR1));
        assert_eq!(signals.try_recv().unwrap(), None);
        drop(signals);
    });
    assert_eq!(
        disposition(libc::SIGUSR2),
        libc::SIG_IGN,
        "the previous disposition is back"
    );

    // On a plain thread, recv blocks the thread.
    let signals = OsSignals::new(&[libc::SIGUSR1]).unwrap();
    let waiter = std::thread::spawn(move || signals.recv().unwrap());
    std::thread::sleep(Duration::from_millis(20));
    raise(libc::SIGUSR1);
    assert_eq!(waiter.join().unwrap(), libc::SIGUSR1);
}
