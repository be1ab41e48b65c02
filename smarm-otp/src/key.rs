//! `TypedKey<M>`: the one implementation behind the registry's [`Name`]
//! and the process groups' [`Group`]: a name's text, its hash computed
//! once (in a `const` for a constant), and the message type `M` that what
//! it names accepts; and the atom table that gives names built at run
//! time the same form.
//!
//! A name's text is `'static`: a constant's literal, or, for a name built
//! at run time ([`TypedKey::intern`]), its entry in the atom table, where
//! each distinct text is stored once for the life of the process, as
//! Erlang stores atoms. So a key stays `Copy`, its hash is computed once,
//! and two keys with the same text compare as the same name whichever way
//! they were made.
//!
//! # Invariants
//!
//! - (K1) `hash == hash_bytes(text)`, for every key.
//! - (K2) The atom table holds at most [`ATOM_LIMIT`] texts; interning past
//!   it fails, so input from outside (a remote node's names) cannot grow it
//!   without bound.
//!
//! [`Name`]: crate::registry::Name
//! [`Group`]: crate::pg::Group

use smarm_core::hash::hash_bytes;
use std::collections::HashSet;
use std::marker::PhantomData;
use std::sync::Mutex;
use thiserror::Error;

/// How many distinct names built at run time a process may hold (Erlang's
/// default atom limit).
pub const ATOM_LIMIT: usize = 1 << 20;

/// A name built at run time was refused: the atom table is full (K2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error(
    "smarm: the atom table is full ({ATOM_LIMIT} names built at run time); \
     names made from unbounded input belong in a map, not the registry"
)]
pub struct AtomTableFull;

/// Every text interned so far (K2).
static ATOMS: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);

/// `text`'s entry in the atom table, added if new.
fn intern(text: &str) -> Result<&'static str, AtomTableFull> {
    // The std lock is held across allocations: no preemption may switch the
    // holder out (pinned) while another actor on its thread blocks on it.
    let _np = smarm_core::NoPreempt::new();
    // A panic while holding this lock cannot leave the set inconsistent.
    let mut atoms = ATOMS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    intern_into(atoms.get_or_insert_with(HashSet::new), ATOM_LIMIT, text)
}

/// `text`'s entry in `atoms`, added if new and `atoms` holds fewer than
/// `limit` (K2).
fn intern_into(
    atoms: &mut HashSet<&'static str>,
    limit: usize,
    text: &str,
) -> Result<&'static str, AtomTableFull> {
    if let Some(known) = atoms.get(text) {
        return Ok(known);
    }
    if atoms.len() >= limit {
        return Err(AtomTableFull);
    }
    let stored: &'static str = Box::leak(text.into());
    atoms.insert(stored);
    Ok(stored)
}

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

    /// The key for `text` built at run time: `text` is interned (K2).
    pub(crate) fn intern(text: &str) -> Result<Self, AtomTableFull> {
        Ok(TypedKey::new(intern(text)?))
    }

    /// [`TypedKey::intern`] for the panicking constructors: a full table
    /// panics, naming `caller`.
    pub(crate) fn intern_or_panic(text: &str, caller: &str) -> Self {
        match TypedKey::intern(text) {
            Ok(key) => key,
            Err(e) => panic!("{e} (in {caller})"),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_is_interned_once_and_keys_agree_with_constants() {
        let a = intern(&format!("key-{}", 1)).unwrap_or_else(|e| panic!("{e}"));
        let b = intern("key-1").unwrap_or_else(|e| panic!("{e}"));
        assert!(std::ptr::eq(a, b), "one entry per text");
        const KEY: TypedKey<u8> = TypedKey::new("key-1");
        let built = TypedKey::<u8>::intern("key-1").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((built.text(), built.hash()), (KEY.text(), KEY.hash())); // (K1)
    }

    #[test]
    fn the_table_refuses_new_texts_past_its_limit_but_finds_old_ones() {
        let mut atoms = HashSet::new();
        assert_eq!(intern_into(&mut atoms, 2, "a"), Ok("a"));
        assert_eq!(intern_into(&mut atoms, 2, "b"), Ok("b"));
        assert_eq!(intern_into(&mut atoms, 2, "c"), Err(AtomTableFull));
        assert_eq!(
            intern_into(&mut atoms, 2, "a"),
            Ok("a"),
            "known texts still resolve"
        );
        assert_eq!(atoms.len(), 2);
    }
}
