//! `TypedKey<M>`: the one implementation behind the registry's [`Name`]
//! and the process groups' [`Group`]: a name's text, its hash computed
//! once (in a `const` for a constant), and the message type `M` that what
//! it names accepts.
//!
//! [`Name`]: crate::registry::Name
//! [`Group`]: crate::pg::Group

use smarm_core::hash::hash_bytes;
use std::marker::PhantomData;

/// A name for things that accept messages of type `M`.
pub(crate) struct TypedKey<M> {
    text: &'static str,
    /// `hash_bytes(text)`, computed when the key is.
    hash: u64,
    _msg: PhantomData<fn(M)>,
}

impl<M> TypedKey<M> {
    pub(crate) const fn new(text: &'static str) -> Self {
        TypedKey {
            text,
            hash: hash_bytes(text.as_bytes()),
            _msg: PhantomData,
        }
    }

    /// The name's text.
    #[inline]
    pub(crate) const fn text(&self) -> &'static str {
        self.text
    }

    /// The name's hash (`smarm_core::hash::hash_bytes` of its text).
    #[inline]
    pub(crate) const fn hash(&self) -> u64 {
        self.hash
    }

    /// Write `Kind("text")`.
    pub(crate) fn fmt_as(&self, kind: &str, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{kind}({:?})", self.text)
    }
}

impl<M> Clone for TypedKey<M> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<M> Copy for TypedKey<M> {}
