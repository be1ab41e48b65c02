//! The locker: takes and releases the cluster locks a sync or a
//! registration needs, calling every node's server from its own mailbox,
//! so the server itself never waits on another node (GL1).

use super::*;

/// Takes and releases a lock on a set of nodes, calling each node's
/// server from one mailbox (the lock's holder).
pub(super) struct Locker<'m> {
    pub(super) mailbox: &'m Mailbox,
    /// `{ResourceId, RequesterId}`.
    pub(super) id: Term,
}

impl Locker<'_> {
    /// Lock on `nodes` (sorted), the greatest first; the nodes locked, or
    /// `None` (with those it took released) if one refused.
    pub(super) fn lock_all(&self, nodes: &[String]) -> Option<Vec<String>> {
        self.lock_all_with(nodes, drop)
    }

    pub(super) fn lock_all_with(
        &self,
        nodes: &[String],
        mut other: impl FnMut(Message),
    ) -> Option<Vec<String>> {
        let mut locked = Vec::new();
        for node in nodes.iter().rev() {
            let reply = self.mailbox.call_from(
                Dest::from((SERVER, node.as_str())),
                tuple(vec![atom("set_lock"), self.id.clone()]),
                CALL_TIMEOUT,
                &mut other,
            );
            match reply {
                Ok(t) if t == atom("true") => locked.push(node.clone()),
                // A node without a global server grants it, as OTP's
                // multi_call counts it a bad node.
                Err(CallError::Down { .. }) => {}
                _ => {
                    self.release(&locked);
                    return None;
                }
            }
        }
        Some(locked)
    }

    /// Release on `nodes`, the greatest (the boss) last.
    pub(super) fn release(&self, nodes: &[String]) {
        let mut nodes = nodes.to_vec();
        nodes.sort();
        if let Some(boss) = nodes.pop() {
            nodes.push(boss);
        }
        for node in &nodes {
            let _ = self.mailbox.call_from(
                Dest::from((SERVER, node.as_str())),
                tuple(vec![atom("del_lock"), self.id.clone()]),
                CALL_TIMEOUT,
                drop,
            );
        }
    }
}

/// A lock the server asks its locker to take for the sync with `peer`.
pub(super) struct LockJob {
    pub(super) peer: String,
    pub(super) tag: u64,
    /// `{global, [LockerA, LockerB]}`.
    pub(super) id: Term,
    pub(super) nodes: Vec<String>,
    /// Wait this long first (OTP's lockers pause before each attempt).
    pub(super) delay: Duration,
    /// Release instead: the lock was taken on these nodes.
    pub(super) release: bool,
}

/// What the locker reports back.
pub(super) struct LockDone {
    pub(super) peer: String,
    pub(super) tag: u64,
    pub(super) locked: Option<Vec<String>>,
}

/// The locker: takes and releases the sync locks, so the server never
/// waits on another node (GL1). Messages to its pid that are not call
/// replies (a peer's `{lock_set, Pid, false, Known}`) go to the server.
pub(super) fn locker_loop(
    mailbox: &Mailbox,
    jobs: &Receiver<LockJob>,
    done: &Sender<LockDone>,
    other: &Sender<Message>,
) {
    loop {
        match smarm_core::select(&[jobs, mailbox.selectable()]) {
            0 => match jobs.try_recv() {
                Ok(Some(job)) => {
                    let locker = Locker {
                        mailbox,
                        id: job.id.clone(),
                    };
                    if job.release {
                        locker.release(&job.nodes);
                        continue;
                    }
                    smarm_core::sleep(job.delay);
                    let locked = locker.lock_all_with(&job.nodes, |m| {
                        let _ = other.send(m);
                    });
                    let report = LockDone {
                        peer: job.peer,
                        tag: job.tag,
                        locked,
                    };
                    if done.send(report).is_err() {
                        return;
                    }
                }
                Ok(None) => {}
                Err(_) => return,
            },
            _ => match mailbox.try_recv() {
                Ok(Some(m)) => {
                    if other.send(m).is_err() {
                        return;
                    }
                }
                Ok(None) => {}
                Err(_) => return,
            },
        }
    }
}
