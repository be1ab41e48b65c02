//! [`Name<M>`](Name): a registered name for actors that accept `M`.

use crate::key::{AtomTableFull, TypedKey};

/// A name that accepts messages of type `M`. `const`, so the usual form is
/// a module-level constant shared by every caller; a name built at run
/// time comes from [`Name::intern`].
pub struct Name<M>(TypedKey<M>);

impl<M> Name<M> {
    /// The name `name` for messages of type `M`.
    pub const fn new(name: &'static str) -> Self {
        Name(TypedKey::new(name))
    }

    /// The name `name`, built at run time: its text is stored once for the
    /// life of the process, as Erlang stores an atom, so the name is as
    /// cheap to copy and look up as a constant, and equal to a constant
    /// with the same text.
    ///
    /// ```
    /// use smarm::Name;
    ///
    /// const SHARD_0: Name<u64> = Name::new("shard-0");
    ///
    /// smarm::run(|| {
    ///     let (tx, rx) = smarm::channel::<u64>();
    ///     smarm::register(SHARD_0, tx).unwrap();
    ///     let built: Name<u64> = Name::intern(&format!("shard-{}", 0));
    ///     smarm::send(built, 7).unwrap();
    ///     assert_eq!(rx.recv().unwrap(), 7);
    /// });
    /// ```
    ///
    /// # Panics
    ///
    /// If the process already holds [`ATOM_LIMIT`](crate::registry::ATOM_LIMIT)
    /// names built at run time; [`Name::try_intern`] returns the error
    /// instead (for names that come from outside, such as another node).
    pub fn intern(name: &str) -> Self {
        Name(TypedKey::intern_or_panic(name, "Name::intern"))
    }

    /// [`Name::intern`], failing instead of panicking when the atom table
    /// is full.
    pub fn try_intern(name: &str) -> Result<Self, AtomTableFull> {
        TypedKey::intern(name).map(Name)
    }

    /// The name's text.
    pub const fn as_str(&self) -> &'static str {
        self.0.text()
    }

    /// The name's hash, computed with the constant.
    pub(crate) const fn hash(&self) -> u64 {
        self.0.hash()
    }
}

impl<M> Clone for Name<M> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<M> Copy for Name<M> {}
impl<M> std::fmt::Debug for Name<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt_as("Name", f)
    }
}
