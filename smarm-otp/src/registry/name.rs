//! [`Name<M>`](Name): a registered name for actors that accept `M`.

use crate::key::TypedKey;

/// A name that accepts messages of type `M`. `const`, so the usual form is
/// a module-level constant shared by every caller.
pub struct Name<M>(TypedKey<M>);

impl<M> Name<M> {
    /// The name `name` for messages of type `M`.
    pub const fn new(name: &'static str) -> Self {
        Name(TypedKey::new(name))
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
