//! The conflict methods and the term helpers they need: which pid keeps
//! a name two partitions both registered, and what the other is told.

use super::*;

pub(super) fn erlang_int(t: &Term) -> Option<num_bigint::BigInt> {
    match t {
        Term::FixInteger(i) => Some(num_bigint::BigInt::from(i.value)),
        Term::BigInteger(b) => Some(b.value.clone()),
        _ => None,
    }
}

/// A list of nodes, as `[{Node, Vsn}]` or `[Node]`.
pub(super) fn node_list(t: &Term) -> Vec<String> {
    list_elements(t)
        .unwrap_or_default()
        .iter()
        .filter_map(|e| match e {
            Term::Tuple(_) => elements(e).first().and_then(atom_name).map(str::to_string),
            other => atom_name(other).map(str::to_string),
        })
        .collect()
}

/// Erlang's order of pids (for the lock id both lockers compute alike):
/// serial, then number, then node, then creation.
pub(super) fn erlang_pid_order(a: &Pid, b: &Pid) -> std::cmp::Ordering {
    (a.serial(), a.id(), a.node(), a.creation()).cmp(&(b.serial(), b.id(), b.node(), b.creation()))
}

/// Run a resolve method for `name`, held here by `ours` and by the peer's
/// `theirs`: the pid that keeps the name (`None`: neither).
pub(super) fn run_method(
    mailbox: &Mailbox,
    method: Resolve,
    name: &Term,
    theirs: &Pid,
    ours: &Pid,
) -> Option<Pid> {
    // OTP's minmax: the pid on the smaller node name is the min.
    let (min, max) = if theirs.node() < ours.node() {
        (theirs, ours)
    } else {
        (ours, theirs)
    };
    match method {
        Resolve::Exit => {
            let _ = mailbox.exit(max, atom("kill"));
            Some(min.clone())
        }
        Resolve::Notify => {
            let _ = mailbox.send(max, tuple(vec![atom("global_name_conflict"), name.clone()]));
            Some(min.clone())
        }
        Resolve::NotifyAll => {
            let note = |to: &Pid, other: &Pid| {
                let _ = mailbox.send(
                    to,
                    tuple(vec![
                        atom("global_name_conflict"),
                        name.clone(),
                        other.to_term(),
                    ]),
                );
            };
            note(theirs, ours);
            note(ours, theirs);
            None
        }
    }
}
