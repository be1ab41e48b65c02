//! Node-visible process identifiers.

use crate::term::{Atom, PidTerm, Term};
use std::fmt;

/// A process identifier that other nodes can address: the node's name, a
/// number and serial within it, and the node's creation (which tells an
/// old incarnation of a restarted node from the new one), as Erlang's
/// `<0.42.0>` names a process on its own node and `<12345.42.0>` one
/// elsewhere.
///
/// ```
/// use smarm_dist::Pid;
///
/// let pid = Pid::new("shop@localhost", 42, 0, 1);
/// assert_eq!(pid.node(), "shop@localhost");
/// assert_eq!(Pid::from_term(&pid.to_term()), Some(pid));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pid {
    node: String,
    id: u32,
    serial: u32,
    creation: u32,
}

impl Pid {
    /// The pid `id`.`serial` of `node` in its incarnation `creation`.
    pub fn new(node: &str, id: u32, serial: u32, creation: u32) -> Pid {
        Pid {
            node: node.to_string(),
            id,
            serial,
            creation,
        }
    }

    /// The node it lives on.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// Its number on that node.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Its serial on that node.
    pub fn serial(&self) -> u32 {
        self.serial
    }

    /// Its node's creation.
    pub fn creation(&self) -> u32 {
        self.creation
    }

    /// As an external term.
    pub fn to_term(&self) -> Term {
        Term::from(PidTerm::new(
            Atom::from(self.node.as_str()),
            self.id,
            self.serial,
            self.creation,
        ))
    }

    /// From an external term; `None` if it is not a pid.
    pub fn from_term(t: &Term) -> Option<Pid> {
        match t {
            Term::Pid(p) => Some(Pid {
                node: p.node.name.clone(),
                id: p.id,
                serial: p.serial,
                creation: p.creation,
            }),
            _ => None,
        }
    }
}

impl fmt::Display for Pid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{}.{}.{}>", self.node, self.id, self.serial)
    }
}
