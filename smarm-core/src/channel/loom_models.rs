//! Loom models of the channel's send/park/close/interrupt races and of select
//! registration against a concurrent send, on the real `Inner`, slot word
//! and run-queue code: `RUSTFLAGS="--cfg loom" cargo test -p smarm-core
//! --release --lib channel`.
//!
//! The receiving "actor" is simulated on the model's main thread: it holds
//! its slot Running, registers under the channel lock exactly as `recv`
//! does, then commits the park as its scheduler would after the switch.
//! The property: once a message is queued (or the channel closed) after
//! the receiver looked, the receiver ends up runnable (re-queued by the
//! commit, or enqueued by the sender): never parked forever.

use super::*;
use crate::config::Config;
use crate::slot::Pid;
use crate::slot::word::{ParkCommit, State};
use crate::stack::StackPool;
use loom::thread;

/// A runtime with one slot held Running: the receiver.
fn runtime_with_receiver() -> (Arc<Shared>, Pid) {
    let shared = Arc::new(Shared::new(
        Config::exact(1).max_actors(4),
        Arc::new(StackPool::new(16 * 1024)),
        crate::actor::exit_hook,
    ));
    let index = shared.slots.alloc().unwrap();
    let slot = shared.slots.get(index).unwrap();
    let generation = slot.word.spawn_queued();
    slot.word.start_running();
    (shared, Pid::from_parts(index, generation))
}

/// The receive path up to the park: look, else register. `true` = it
/// found a message or the close and will not park.
fn look_or_register<T>(rx: &Receiver<T>, shared: &Shared, me: Pid) -> bool {
    let mut g = rx.inner.lock();
    if !g.queue.is_empty() || g.senders == 0 {
        return true;
    }
    let epoch = shared.slots.get(me.index()).unwrap().word.begin_wait();
    g.register(WaitId { pid: me, epoch }, shared);
    false
}

fn runnable_after_park(shared: &Shared, me: Pid) -> bool {
    let word = &shared.slots.get(me.index()).unwrap().word;
    match word.commit_park() {
        ParkCommit::Requeue => true,
        ParkCommit::Parked => false,
    }
}

fn assert_woken(shared: &Shared, me: Pid, requeued_by_commit: bool) {
    let state = shared.slots.get(me.index()).unwrap().word.load().state();
    assert_eq!(state, State::Queued, "receiver left parked: a lost wake");
    let enqueued = shared.injector().len();
    assert_eq!(
        usize::from(requeued_by_commit) + enqueued,
        1,
        "woken exactly once"
    );
}

#[test]
fn send_racing_the_receivers_park_is_never_lost() {
    loom::model(|| {
        let (shared, me) = runtime_with_receiver();
        let (tx, rx) = channel::<u32>();
        let sender = thread::spawn(move || tx.send(1).unwrap());
        if look_or_register(&rx, &shared, me) {
            sender.join().unwrap();
            return; // saw the message: no park
        }
        let requeued = runnable_after_park(&shared, me);
        sender.join().unwrap();
        assert_woken(&shared, me, requeued);
    });
}

#[test]
fn last_sender_drop_racing_the_receivers_park_is_never_lost() {
    loom::model(|| {
        let (shared, me) = runtime_with_receiver();
        let (tx, rx) = channel::<u32>();
        let closer = thread::spawn(move || drop(tx));
        if look_or_register(&rx, &shared, me) {
            closer.join().unwrap();
            return;
        }
        let requeued = runnable_after_park(&shared, me);
        closer.join().unwrap();
        assert_woken(&shared, me, requeued);
    });
}

/// `recv_or_interrupt`'s path up to the park: look (a message, the close,
/// or an interrupt not yet taken), else register.
fn look_or_register_interruptible<T>(rx: &Receiver<T>, shared: &Shared, me: Pid) -> bool {
    let mut g = rx.inner.lock();
    let raised = rx
        .inner
        .interrupts
        .load(std::sync::atomic::Ordering::Relaxed);
    if !g.queue.is_empty() || g.senders == 0 || raised != rx.interrupts.taken.get() {
        return true;
    }
    let epoch = shared.slots.get(me.index()).unwrap().word.begin_wait();
    g.register(WaitId { pid: me, epoch }, shared);
    false
}

#[test]
fn an_interrupt_racing_the_receivers_park_is_never_lost() {
    loom::model(|| {
        let (shared, me) = runtime_with_receiver();
        let (tx, rx) = channel::<u32>();
        let interrupter = thread::spawn(move || {
            assert_eq!(tx.interrupt(), Some(1));
            tx // kept open: only the interrupt may wake the receiver
        });
        if look_or_register_interruptible(&rx, &shared, me) {
            interrupter.join().unwrap();
            return; // saw the interrupt: no park
        }
        let requeued = runnable_after_park(&shared, me);
        let _tx = interrupter.join().unwrap();
        assert_woken(&shared, me, requeued);
    });
}

/// Select over two channels with a send landing on each, concurrently
/// with the registration pass: the actor is woken, and once the select
/// has retired its wait, the other arm's late wake finds a stale epoch and
/// cannot end the actor's next wait.
#[test]
fn select_registration_racing_sends_wakes_once() {
    loom::model(|| {
        let (shared, me) = runtime_with_receiver();
        let (tx_a, rx_a) = channel::<u32>();
        let (tx_b, rx_b) = channel::<u32>();
        let sender = thread::spawn(move || {
            tx_b.send(2).unwrap();
            tx_a.send(1).unwrap();
        });
        let word = &shared.slots.get(me.index()).unwrap().word;
        let epoch = word.begin_wait();
        let mut ready = false;
        for rx in [&rx_a, &rx_b] {
            let mut g = rx.inner.lock();
            if !g.queue.is_empty() {
                ready = true;
                break;
            }
            g.register(WaitId { pid: me, epoch }, &shared);
        }
        if !ready && word.commit_park() == ParkCommit::Parked {
            // Parked: some send must enqueue it.
            while word.load().state() != State::Queued {
                thread::yield_now();
            }
        }
        // It runs again (popped, or re-queued by the commit); the select
        // retires the wait, and the actor opens a new one and parks.
        let _ = shared.injector().pop_front();
        if word.load().state() == State::Queued {
            word.start_running();
        }
        word.retire_wait();
        let _ = word.begin_wait();
        let commit = word.commit_park();
        sender.join().unwrap();
        assert_eq!(
            commit,
            ParkCommit::Parked,
            "a sibling arm's wake ended a later wait"
        );
        assert_eq!(
            word.load().state(),
            State::Parked,
            "a stale wake enqueued the actor"
        );
    });
}

// ----- bounded channels: a sender waiting for room (B2, B3) -----

use super::super::bounded_receiver::bounded;
use super::super::room::SendWaker;
use crate::scheduler::WakeToken;

/// The send path up to the park, on a full bounded channel: look, else
/// block the message under the lock with the actor's wait. `Some(ticket)`
/// when it blocked and will park.
fn send_or_block(tx: &Sender<u32>, shared: &Arc<Shared>, me: Pid, msg: u32) -> Option<u64> {
    let mut g = tx.inner.lock();
    if !g.receiver_alive {
        return None; // Disconnected
    }
    if !g.is_full() {
        g.push(msg);
        return None;
    }
    let epoch = shared.slots.get(me.index()).unwrap().word.begin_wait();
    let token = WakeToken::new(shared.clone(), WaitId { pid: me, epoch });
    Some(g.room.as_mut().unwrap().block(msg, SendWaker::Actor(token)))
}

/// The receiver takes a message from a full channel while a sender blocks
/// on it: the sender is woken exactly once and its message is in the
/// channel, after the one taken.
#[test]
fn room_freed_by_the_receiver_reaches_a_parked_sender() {
    loom::model(|| {
        let (shared, me) = runtime_with_receiver(); // the sending actor
        let (tx, rx) = bounded::<u32>(1);
        tx.send(1).unwrap();
        let receiver = thread::spawn(move || {
            let got = rx.try_recv();
            (rx, got)
        });
        let blocked = send_or_block(&tx, &shared, me, 2);
        let requeued = blocked.is_some() && runnable_after_park(&shared, me);
        let (rx, got) = receiver.join().unwrap();
        assert_eq!(got, Ok(Some(1)));
        if let Some(ticket) = blocked {
            assert_woken(&shared, me, requeued);
            assert!(!tx.inner.lock().is_blocked(ticket), "room left free");
        }
        assert_eq!(
            rx.try_recv(),
            Ok(Some(2)),
            "the parked sender's message went in"
        );
    });
}

/// A blocked sender gives up (its timeout) while the receiver frees room:
/// the message is delivered or handed back, exactly once.
#[test]
fn a_sender_giving_up_as_room_appears_delivers_or_keeps_its_message_once() {
    loom::model(|| {
        let (shared, me) = runtime_with_receiver();
        let (tx, rx) = bounded::<u32>(1);
        tx.send(1).unwrap();
        let ticket = send_or_block(&tx, &shared, me, 2).unwrap();
        let receiver = thread::spawn(move || {
            let got = rx.try_recv();
            (rx, got)
        });
        let returned = tx.inner.lock().unblock(ticket);
        let (rx, got) = receiver.join().unwrap();
        assert_eq!(got, Ok(Some(1)));
        let delivered = rx.try_recv().unwrap();
        match (returned, delivered) {
            (Some(2), None) | (None, Some(2)) => {}
            other => panic!("message 2 delivered and returned, or lost: {other:?}"),
        }
    });
}

/// The receiver drops while a sender blocks on the full channel: the
/// sender is woken and finds the channel closed (B3).
#[test]
fn receiver_drop_racing_a_blocked_senders_park_is_never_lost() {
    loom::model(|| {
        let (shared, me) = runtime_with_receiver();
        let (tx, rx) = bounded::<u32>(1);
        tx.send(1).unwrap();
        let dropper = thread::spawn(move || drop(rx));
        let Some(ticket) = send_or_block(&tx, &shared, me, 2) else {
            return; // the receiver was gone first: the send fails, no park
        };
        let requeued = runnable_after_park(&shared, me);
        dropper.join().unwrap();
        assert_woken(&shared, me, requeued);
        let mut g = tx.inner.lock();
        assert!(!g.receiver_alive);
        assert_eq!(
            g.unblock(ticket),
            Some(2),
            "the sender takes its message back"
        );
    });
}
