//! A state machine's running timeouts: at most one event timeout, one
//! state timeout and one per generic name, each either armed on the
//! runtime's timers or waiting in the zero queue (OTP's `t0q`: zero
//! timeouts, taken after the queued events and before the mailbox).
//!
//! # Invariants
//!
//! - (T1) A timeout's content stays here, not in its timer: a timer that
//!   fires delivers only its key and serial number to the mailbox, and
//!   the message becomes an event only if that timeout is still the one
//!   running. So a timeout cancelled or restarted after its timer fired,
//!   with the message already queued, is never delivered (what OTP gets
//!   by flushing the timeout message), and an update changes what a
//!   running timeout delivers.
//! - (T2) The zero queue holds keys in the order their timeouts were
//!   started; cancelling one removes it from there too.

use super::behaviour::{Event, GenStatem, TimerKey, TimerOp, When};
use smarm_core::time::{TimerId, cancel_timer};
use std::collections::VecDeque;

/// One running timeout.
struct Running<T> {
    key: TimerKey,
    /// Matched against the fired timer's message (T1).
    serial: u64,
    /// `None`: in the zero queue.
    timer: Option<TimerId>,
    content: T,
}

/// The running timeouts of one machine.
pub(super) struct Timers<T> {
    running: Vec<Running<T>>,
    zero: VecDeque<TimerKey>,
    serial: u64,
}

impl<T> Default for Timers<T> {
    fn default() -> Self {
        Timers {
            running: Vec::new(),
            zero: VecDeque::new(),
            serial: 0,
        }
    }
}

impl<T: Send + 'static> Timers<T> {
    fn find(&self, key: TimerKey) -> Option<usize> {
        self.running.iter().position(|r| r.key == key)
    }

    /// Stop the timeout `key`, if it runs; its content is dropped.
    pub(super) fn cancel(&mut self, key: TimerKey) {
        if let Some(i) = self.find(key) {
            let running = self.running.swap_remove(i);
            match running.timer {
                Some(id) => {
                    cancel_timer(id);
                }
                None => self.zero.retain(|k| *k != key), // (T2)
            }
        }
    }

    /// Do `op` to the timeout `key`; `arm(key, serial, after)` starts a
    /// runtime timer whose firing reports `(key, serial)`.
    pub(super) fn apply(
        &mut self,
        key: TimerKey,
        op: TimerOp<T>,
        arm: &impl Fn(TimerKey, u64, std::time::Duration) -> TimerId,
    ) {
        match op {
            TimerOp::Cancel => self.cancel(key),
            TimerOp::Update(content) => match self.find(key) {
                Some(i) => self.running[i].content = content,
                None => self.start(key, When::Zero, content, arm),
            },
            TimerOp::Start(when, content) => {
                self.cancel(key);
                self.start(key, when, content, arm);
            }
        }
    }

    fn start(
        &mut self,
        key: TimerKey,
        when: When,
        content: T,
        arm: &impl Fn(TimerKey, u64, std::time::Duration) -> TimerId,
    ) {
        self.serial += 1;
        let serial = self.serial;
        let timer = match when {
            When::Zero => {
                self.zero.push_back(key);
                None
            }
            When::After(after) => Some(arm(key, serial, after)),
            When::At(at) => Some(arm(
                key,
                serial,
                at.saturating_duration_since(smarm_core::time::now()),
            )),
        };
        self.running.push(Running {
            key,
            serial,
            timer,
            content,
        });
    }

    /// The oldest zero timeout, as its event.
    pub(super) fn pop_zero<M: GenStatem<Timeout = T>>(&mut self) -> Option<Event<M>> {
        let key = self.zero.pop_front()?;
        let i = self.find(key)?;
        Some(event(self.running.swap_remove(i)))
    }

    /// A timer fired with `(key, serial)`: its event, if that timeout
    /// still runs (T1).
    pub(super) fn fired<M: GenStatem<Timeout = T>>(
        &mut self,
        key: TimerKey,
        serial: u64,
    ) -> Option<Event<M>> {
        let i = self
            .running
            .iter()
            .position(|r| r.key == key && r.serial == serial && r.timer.is_some())?;
        Some(event(self.running.swap_remove(i)))
    }

    /// Call off every runtime timer (the machine is ending).
    pub(super) fn clear(&mut self) {
        for running in self.running.drain(..) {
            if let Some(id) = running.timer {
                cancel_timer(id);
            }
        }
        self.zero.clear();
    }
}

/// A timeout that fired, as the event it delivers.
fn event<M: GenStatem>(running: Running<M::Timeout>) -> Event<M> {
    match running.key {
        TimerKey::Event => Event::EventTimeout(running.content),
        TimerKey::State => Event::StateTimeout(running.content),
        TimerKey::Named(name) => Event::Timeout(name, running.content),
    }
}
