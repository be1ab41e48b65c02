//! `Pid<A>`: an actor's identity, (slot index, generation).

use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;

/// The identity of one actor incarnation: a slot index and the slot's
/// generation when the actor was spawned. A pid never refers to a later
/// actor that reuses the slot; operations on a finished actor's pid are
/// no-ops or errors, never misdirected.
///
/// `A` is an optional address type: `Pid` (that is, `Pid<()>`) is the plain
/// identity; typed layers (the registry, derived actors) use `Pid<A>` to
/// say what the actor accepts. [`erase`](Pid::erase) forgets the type.
///
/// Pids print the Erlang way, `<0.INDEX.GENERATION>`:
///
/// ```
/// smarm::run(|| {
///     let me = smarm::self_pid();
///     assert!(me.to_string().starts_with("<0."));
/// });
/// ```
pub struct Pid<A = ()> {
    index: u32,
    generation: u32,
    _addr: PhantomData<fn() -> A>,
}

impl<A> Pid<A> {
    pub(crate) const fn from_parts(index: u32, generation: u32) -> Self {
        Pid {
            index,
            generation,
            _addr: PhantomData,
        }
    }

    /// The slot index.
    pub const fn index(self) -> u32 {
        self.index
    }

    /// The slot generation this pid was issued for.
    pub const fn generation(self) -> u32 {
        self.generation
    }

    /// The same identity without the address type.
    pub const fn erase(self) -> Pid {
        Pid::from_parts(self.index, self.generation)
    }

    /// Reinterpret as a pid of another address type. For typed layers that
    /// have checked what the actor accepts.
    pub const fn cast<B>(self) -> Pid<B> {
        Pid::from_parts(self.index, self.generation)
    }

    /// Packed form `index << 32 | generation`.
    pub(crate) const fn to_bits(self) -> u64 {
        ((self.index as u64) << 32) | self.generation as u64
    }

    /// Inverse of [`to_bits`](Self::to_bits).
    pub(crate) const fn from_bits(bits: u64) -> Self {
        Pid::from_parts((bits >> 32) as u32, bits as u32)
    }
}

/// An address type: what a `Pid<A>` accepts. Declare a marker type per
/// kind of actor and name its message type; typed layers (the registry's
/// `spawn_addr`, `send_to`, `send_after`) then check at compile time that
/// only `Msg` is sent to a `Pid<A>`.
///
/// ```
/// use smarm::{Addressable, Pid};
///
/// enum CounterMsg {
///     Add(u64),
/// }
/// struct Counter;
/// impl Addressable for Counter {
///     type Msg = CounterMsg;
/// }
/// fn takes_a_counter(_: Pid<Counter>) {}
/// ```
pub trait Addressable: 'static {
    /// The message type this address accepts.
    type Msg: Send + 'static;
}

impl<A> Clone for Pid<A> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<A> Copy for Pid<A> {}
impl<A> PartialEq for Pid<A> {
    fn eq(&self, other: &Self) -> bool {
        self.index == other.index && self.generation == other.generation
    }
}
impl<A> Eq for Pid<A> {}
impl<A> Hash for Pid<A> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.to_bits().hash(state);
    }
}
impl<A> PartialOrd for Pid<A> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<A> Ord for Pid<A> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.to_bits().cmp(&other.to_bits())
    }
}
impl<A> fmt::Display for Pid<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<0.{}.{}>", self.index, self.generation)
    }
}
/// `"<0.INDEX.GENERATION>"` (as pids print; the brackets may be left out)
/// is not a pid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("smarm: {0:?} is not a pid: pids read <0.INDEX.GENERATION>")]
pub struct ParsePidError(String);

/// A pid read back from how it prints, `<0.INDEX.GENERATION>`: for tools
/// that show pids and take them back (an observer's URL). It names that
/// incarnation only; a finished actor's pid stays finished.
///
/// ```
/// smarm::run(|| {
///     let me = smarm::self_pid();
///     assert_eq!(me.to_string().parse::<smarm::Pid>(), Ok(me));
///     assert!("<1.2>".parse::<smarm::Pid>().is_err());
/// });
/// ```
impl std::str::FromStr for Pid {
    type Err = ParsePidError;

    fn from_str(text: &str) -> Result<Pid, ParsePidError> {
        let bad = || ParsePidError(text.to_string());
        let inner = text
            .strip_prefix('<')
            .map_or(text, |t| t.strip_suffix('>').unwrap_or(t));
        let mut parts = inner.split('.');
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some("0"), Some(index), Some(generation), None) => Ok(Pid::from_parts(
                index.parse().map_err(|_| bad())?,
                generation.parse().map_err(|_| bad())?,
            )),
            _ => Err(bad()),
        }
    }
}

impl<A> fmt::Debug for Pid<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
