//! Rust values as external terms: [`ToTerm`] and [`FromTerm`], for the
//! usual Rust types here and for your own types by `#[derive(Term)]`.
//!
//! | Rust | Erlang |
//! |---|---|
//! | `bool` | `true`, `false` |
//! | integers, `i8` to `u128`, `isize`, `usize` | integer (a bignum past 32 bits) |
//! | `char` | integer (its code point, as `$a`) |
//! | `f32`, `f64` | float |
//! | `String`, `&str` | binary, UTF-8 (`<<"text">>`, an Elixir string); a charlist (`"text"`) also decodes |
//! | `()` | `ok` |
//! | `Option<T>` | `undefined`, or `T`'s term |
//! | `Result<T, E>` | `{ok, T}`, or `{error, E}`; `ok` alone when `T`'s term is `ok` (`Result<(), E>`), as Erlang functions answer |
//! | `Vec<T>`, `[T]` | list |
//! | tuples up to 8 | tuple |
//! | `HashMap`, `BTreeMap` | map |
//! | `Box<T>`, `&T` | `T`'s term |
//! | [`Pid`], [`Atom`], [`Binary`] | pid, atom, binary (bytes) |
//! | [`Term`] | itself |
//!
//! A `Vec<u8>` is a list of integers; wrap bytes in [`Binary`] for an
//! Erlang binary.
//!
//! `#[derive(Term)]` (from `smarm::dist`, or `smarm_dist`) maps a type:
//!
//! | Rust | Erlang |
//! |---|---|
//! | `struct S { a: A, b: B }` | `#{a => A, b => B}` (a map with atom keys; extra keys are ignored on decode) |
//! | the same with `#[term(record)]` | `{s, A, B}`, an Erlang record (the tag is the type's name in snake_case) |
//! | the same with `#[term(tuple)]` | `{A, B}` |
//! | `struct S(A, B)` | `{A, B}`; `{s, A, B}` with `#[term(record)]` |
//! | `struct S(A)` | `A`'s term (a newtype is transparent) |
//! | `struct S;` | `s` |
//! | `enum E { Unit, Tuple(A, B), Named { x: X } }` | `unit`, `{tuple, A, B}`, `{named, X}` (tagged tuples; tags in snake_case) |
//!
//! `#[term(rename = "name")]` on a type, a variant or a field sets its
//! atom (a record's tag, a unit's atom, a variant's tag, a map key).
//! A type outside a crate that depends on `smarm` names the path of this
//! crate with `#[term(crate = "smarm_dist")]`.
//!
//! ```
//! use smarm::dist::term::{display, FromTerm, ToTerm};
//! use smarm::dist::Term;
//!
//! #[derive(Term, Debug, PartialEq)]
//! enum Command {
//!     Reset,
//!     Add(i64),
//!     Move { x: i32, y: i32 },
//! }
//!
//! #[derive(Term, Debug, PartialEq)]
//! struct Order {
//!     id: u64,
//!     items: Vec<String>,
//!     note: Option<String>,
//! }
//!
//! let add = Command::Add(5);
//! assert_eq!(display(&add.to_term()).to_string(), "{add,5}");
//! assert_eq!(display(&Command::Reset.to_term()).to_string(), "reset");
//! assert_eq!(Command::from_term(&add.to_term()), Ok(add));
//!
//! let order = Order { id: 7, items: vec!["tea".into()], note: None };
//! let back = Order::from_term(&order.to_term()).unwrap();
//! assert_eq!(back, order);
//! ```

use super::{Atom, BigInteger, Binary, FixInteger, Float, List, Map, Term};
use crate::pid::Pid;
use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use thiserror::Error;

/// A value that can be sent as an external term.
pub trait ToTerm {
    /// The term for this value.
    fn to_term(&self) -> Term;

    /// The term for this value, consuming it (saves a copy where the value
    /// holds a term or bytes already).
    fn into_term(self) -> Term
    where
        Self: Sized,
    {
        self.to_term()
    }
}

/// A value that can be read back from an external term.
pub trait FromTerm: Sized {
    /// The value `term` stands for, or why it stands for none.
    fn from_term(term: &Term) -> Result<Self, FromTermError>;
}

/// Why a term does not stand for a value of the type asked for.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FromTermError {
    /// A term of another shape.
    #[error("expected {expected}, found {found}")]
    Expected {
        /// What the type accepts.
        expected: String,
        /// The term found (shortened).
        found: String,
    },
    /// An integer the type cannot hold.
    #[error("{value} is out of range for {ty}")]
    OutOfRange {
        /// The Rust type.
        ty: &'static str,
        /// The integer.
        value: String,
    },
    /// A map without a key the struct needs.
    #[error("{ty}: the map has no key {key}")]
    MissingKey {
        /// The Rust type.
        ty: &'static str,
        /// The missing key.
        key: &'static str,
    },
    /// A tag no variant of the enum has.
    #[error("{ty}: no variant is {found}")]
    UnknownVariant {
        /// The Rust type.
        ty: &'static str,
        /// The term found (shortened).
        found: String,
    },
    /// A part of the term is wrong: `at` names it (`Order.items`).
    #[error("{at}: {source}")]
    In {
        /// The field or element.
        at: String,
        /// What is wrong with it.
        source: Box<FromTermError>,
    },
}

impl FromTermError {
    /// A term of the wrong shape: `expected` describes what was wanted.
    pub fn expected(expected: impl Into<String>, found: &Term) -> FromTermError {
        FromTermError::Expected {
            expected: expected.into(),
            found: shorten(found),
        }
    }

    /// This error, as found at `at` (a field or element) of a larger term.
    pub fn within(self, at: impl Into<String>) -> FromTermError {
        FromTermError::In {
            at: at.into(),
            source: Box::new(self),
        }
    }
}

/// A term for an error message: its Erlang form, cut at 80 characters.
fn shorten(term: &Term) -> String {
    let mut s = super::display(term).to_string();
    if s.len() > 80 {
        let mut cut = 77;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str("...");
    }
    s
}

impl ToTerm for Term {
    fn to_term(&self) -> Term {
        self.clone()
    }
    fn into_term(self) -> Term {
        self
    }
}

impl FromTerm for Term {
    fn from_term(term: &Term) -> Result<Self, FromTermError> {
        Ok(term.clone())
    }
}

impl<T: ToTerm + ?Sized> ToTerm for &T {
    fn to_term(&self) -> Term {
        (**self).to_term()
    }
}

impl<T: ToTerm + ?Sized> ToTerm for Box<T> {
    fn to_term(&self) -> Term {
        (**self).to_term()
    }
}

impl<T: FromTerm> FromTerm for Box<T> {
    fn from_term(term: &Term) -> Result<Self, FromTermError> {
        T::from_term(term).map(Box::new)
    }
}

use super::atom_name;

impl ToTerm for bool {
    fn to_term(&self) -> Term {
        super::atom(if *self { "true" } else { "false" })
    }
}

impl FromTerm for bool {
    fn from_term(term: &Term) -> Result<Self, FromTermError> {
        match atom_name(term) {
            Some("true") => Ok(true),
            Some("false") => Ok(false),
            _ => Err(FromTermError::expected("true or false", term)),
        }
    }
}

/// An integer term: a small integer where it fits in 32 bits (as Erlang
/// writes them), a bignum otherwise.
fn integer(value: i128) -> Term {
    match i32::try_from(value) {
        Ok(v) => Term::from(FixInteger::from(v)),
        Err(_) => Term::from(BigInteger {
            value: num_bigint::BigInt::from(value),
        }),
    }
}

macro_rules! to_integers {
    ($($t:ty),*) => {$(
        impl ToTerm for $t {
            fn to_term(&self) -> Term {
                integer(i128::from(*self))
            }
        }
    )*};
}

to_integers!(i8, i16, i32, i64, i128, u8, u16, u32, u64);

impl ToTerm for isize {
    fn to_term(&self) -> Term {
        integer(*self as i128)
    }
}

impl ToTerm for usize {
    fn to_term(&self) -> Term {
        integer(*self as i128)
    }
}

impl ToTerm for u128 {
    fn to_term(&self) -> Term {
        match i128::try_from(*self) {
            Ok(v) => integer(v),
            Err(_) => Term::from(BigInteger {
                value: num_bigint::BigInt::from(*self),
            }),
        }
    }
}

macro_rules! from_integers {
    ($($t:ty),*) => {$(
        impl FromTerm for $t {
            fn from_term(term: &Term) -> Result<Self, FromTermError> {
                let out_of_range = || FromTermError::OutOfRange {
                    ty: stringify!($t),
                    value: super::display(term).to_string(),
                };
                match term {
                    Term::FixInteger(i) => <$t>::try_from(i.value).map_err(|_| out_of_range()),
                    Term::BigInteger(b) => <$t>::try_from(&b.value).map_err(|_| out_of_range()),
                    _ => Err(FromTermError::expected("an integer", term)),
                }
            }
        }
    )*};
}

from_integers!(
    i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize
);

impl ToTerm for char {
    fn to_term(&self) -> Term {
        integer(i128::from(u32::from(*self)))
    }
}

impl FromTerm for char {
    fn from_term(term: &Term) -> Result<Self, FromTermError> {
        let code = u32::from_term(term)?;
        char::from_u32(code).ok_or(FromTermError::OutOfRange {
            ty: "char",
            value: code.to_string(),
        })
    }
}

impl ToTerm for f64 {
    /// A float; NaN and the infinities, which Erlang has no term for, are
    /// sent as the atoms `nan`, `infinity` and `neg_infinity`.
    fn to_term(&self) -> Term {
        match Float::try_from(*self) {
            Ok(f) => Term::from(f),
            Err(_) if self.is_nan() => super::atom("nan"),
            Err(_) if *self > 0.0 => super::atom("infinity"),
            Err(_) => super::atom("neg_infinity"),
        }
    }
}

impl FromTerm for f64 {
    /// A float, or an integer (widened); also the atoms `nan`,
    /// `infinity` and `neg_infinity` that [`ToTerm`] writes.
    fn from_term(term: &Term) -> Result<Self, FromTermError> {
        match term {
            Term::Float(f) => Ok(f.value),
            Term::FixInteger(i) => Ok(f64::from(i.value)),
            Term::Atom(a) if a.name == "nan" => Ok(f64::NAN),
            Term::Atom(a) if a.name == "infinity" => Ok(f64::INFINITY),
            Term::Atom(a) if a.name == "neg_infinity" => Ok(f64::NEG_INFINITY),
            _ => Err(FromTermError::expected("a float", term)),
        }
    }
}

impl ToTerm for f32 {
    fn to_term(&self) -> Term {
        f64::from(*self).to_term()
    }
}

impl FromTerm for f32 {
    fn from_term(term: &Term) -> Result<Self, FromTermError> {
        f64::from_term(term).map(|v| v as f32)
    }
}

impl ToTerm for str {
    fn to_term(&self) -> Term {
        Term::from(Binary::from(self.as_bytes()))
    }
}

impl ToTerm for String {
    fn to_term(&self) -> Term {
        self.as_str().to_term()
    }
    fn into_term(self) -> Term {
        Term::from(Binary::from(self.into_bytes()))
    }
}

impl FromTerm for String {
    /// A UTF-8 binary, or a charlist (a list of code points, which is
    /// what Erlang's `"text"` is).
    fn from_term(term: &Term) -> Result<Self, FromTermError> {
        let not_text = || FromTermError::expected("a UTF-8 binary or a charlist", term);
        match term {
            Term::Binary(b) => String::from_utf8(b.bytes.clone()).map_err(|_| not_text()),
            // Code points below 256: Latin-1, each one char.
            Term::ByteList(l) => Ok(l.bytes.iter().map(|&b| char::from(b)).collect()),
            Term::List(l) => l
                .elements
                .iter()
                .map(|e| char::from_term(e).map_err(|_| not_text()))
                .collect(),
            _ => Err(not_text()),
        }
    }
}

impl ToTerm for () {
    fn to_term(&self) -> Term {
        super::atom("ok")
    }
}

impl FromTerm for () {
    fn from_term(term: &Term) -> Result<Self, FromTermError> {
        match atom_name(term) {
            Some("ok") => Ok(()),
            _ => Err(FromTermError::expected("ok", term)),
        }
    }
}

impl<T: ToTerm> ToTerm for Option<T> {
    fn to_term(&self) -> Term {
        match self {
            Some(v) => v.to_term(),
            None => super::atom("undefined"),
        }
    }
    fn into_term(self) -> Term {
        match self {
            Some(v) => v.into_term(),
            None => super::atom("undefined"),
        }
    }
}

impl<T: FromTerm> FromTerm for Option<T> {
    fn from_term(term: &Term) -> Result<Self, FromTermError> {
        match atom_name(term) {
            Some("undefined") => Ok(None),
            _ => T::from_term(term).map(Some),
        }
    }
}

impl<T: ToTerm, E: ToTerm> ToTerm for Result<T, E> {
    fn to_term(&self) -> Term {
        match self {
            Ok(v) => ok_term(v.to_term()),
            Err(e) => super::tuple(vec![super::atom("error"), e.to_term()]),
        }
    }
}

/// `{ok, V}`, or `ok` where `V` is `ok` itself.
fn ok_term(v: Term) -> Term {
    if atom_name(&v) == Some("ok") {
        v
    } else {
        super::tuple(vec![super::atom("ok"), v])
    }
}

impl<T: FromTerm, E: FromTerm> FromTerm for Result<T, E> {
    fn from_term(term: &Term) -> Result<Self, FromTermError> {
        match term {
            Term::Tuple(t) if t.elements.len() == 2 => match atom_name(&t.elements[0]) {
                Some("ok") => T::from_term(&t.elements[1])
                    .map(Ok)
                    .map_err(|e| e.within("{ok, _}")),
                Some("error") => E::from_term(&t.elements[1])
                    .map(Err)
                    .map_err(|e| e.within("{error, _}")),
                _ => Err(FromTermError::expected("{ok, _} or {error, _}", term)),
            },
            Term::Atom(a) if a.name == "ok" => T::from_term(term).map(Ok),
            _ => Err(FromTermError::expected("{ok, _} or {error, _}", term)),
        }
    }
}

impl<T: ToTerm> ToTerm for [T] {
    fn to_term(&self) -> Term {
        Term::from(List::from(self.iter().map(T::to_term).collect::<Vec<_>>()))
    }
}

impl<T: ToTerm> ToTerm for Vec<T> {
    fn to_term(&self) -> Term {
        self.as_slice().to_term()
    }
    fn into_term(self) -> Term {
        Term::from(List::from(
            self.into_iter().map(T::into_term).collect::<Vec<_>>(),
        ))
    }
}

impl<T: FromTerm> FromTerm for Vec<T> {
    /// A proper list; a list of small non-negative integers may arrive as
    /// a string of bytes (Erlang writes `[1,2,3]` so), which is read the
    /// same.
    fn from_term(term: &Term) -> Result<Self, FromTermError> {
        let element =
            |(i, e): (usize, &Term)| T::from_term(e).map_err(|err| err.within(format!("[{i}]")));
        match term {
            Term::List(l) => l.elements.iter().enumerate().map(element).collect(),
            Term::ByteList(l) => l
                .bytes
                .iter()
                .map(|&b| Term::from(FixInteger::from(i32::from(b))))
                .collect::<Vec<_>>()
                .iter()
                .enumerate()
                .map(element)
                .collect(),
            _ => Err(FromTermError::expected("a list", term)),
        }
    }
}

impl<K: ToTerm, V: ToTerm, S> ToTerm for HashMap<K, V, S> {
    fn to_term(&self) -> Term {
        map_term(self.iter())
    }
}

impl<K: ToTerm, V: ToTerm> ToTerm for BTreeMap<K, V> {
    fn to_term(&self) -> Term {
        map_term(self.iter())
    }
}

fn map_term<'a, K: ToTerm + 'a, V: ToTerm + 'a>(
    pairs: impl Iterator<Item = (&'a K, &'a V)>,
) -> Term {
    Term::from(Map::from(
        pairs
            .map(|(k, v)| (k.to_term(), v.to_term()))
            .collect::<HashMap<_, _>>(),
    ))
}

fn map_pairs<K: FromTerm, V: FromTerm>(
    term: &Term,
) -> Result<impl Iterator<Item = Result<(K, V), FromTermError>> + '_, FromTermError> {
    match term {
        Term::Map(m) => Ok(m.map.iter().map(|(k, v)| {
            let key = K::from_term(k).map_err(|e| e.within("a map key"))?;
            let value =
                V::from_term(v).map_err(|e| e.within(format!("the value of {}", shorten(k))))?;
            Ok((key, value))
        })),
        _ => Err(FromTermError::expected("a map", term)),
    }
}

impl<K: FromTerm + Eq + Hash, V: FromTerm> FromTerm for HashMap<K, V> {
    fn from_term(term: &Term) -> Result<Self, FromTermError> {
        map_pairs(term)?.collect()
    }
}

impl<K: FromTerm + Ord, V: FromTerm> FromTerm for BTreeMap<K, V> {
    fn from_term(term: &Term) -> Result<Self, FromTermError> {
        map_pairs(term)?.collect()
    }
}

macro_rules! tuples {
    ($( ($n:expr; $($t:ident $i:tt),+) )*) => {$(
        impl<$($t: ToTerm),+> ToTerm for ($($t,)+) {
            fn to_term(&self) -> Term {
                super::tuple(vec![$(self.$i.to_term()),+])
            }
        }

        impl<$($t: FromTerm),+> FromTerm for ($($t,)+) {
            fn from_term(term: &Term) -> Result<Self, FromTermError> {
                match term {
                    Term::Tuple(t) if t.elements.len() == $n => Ok(($(
                        $t::from_term(&t.elements[$i]).map_err(|e| e.within(format!("element {}", $i + 1)))?,
                    )+)),
                    _ => Err(FromTermError::expected(concat!("a tuple of ", $n), term)),
                }
            }
        }
    )*};
}

tuples! {
    (1; A 0)
    (2; A 0, B 1)
    (3; A 0, B 1, C 2)
    (4; A 0, B 1, C 2, D 3)
    (5; A 0, B 1, C 2, D 3, E 4)
    (6; A 0, B 1, C 2, D 3, E 4, F 5)
    (7; A 0, B 1, C 2, D 3, E 4, F 5, G 6)
    (8; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7)
}

impl ToTerm for Pid {
    fn to_term(&self) -> Term {
        Pid::to_term(self)
    }
}

impl FromTerm for Pid {
    fn from_term(term: &Term) -> Result<Self, FromTermError> {
        Pid::from_term(term).ok_or_else(|| FromTermError::expected("a pid", term))
    }
}

impl ToTerm for Atom {
    fn to_term(&self) -> Term {
        Term::from(self.clone())
    }
    fn into_term(self) -> Term {
        Term::from(self)
    }
}

impl FromTerm for Atom {
    fn from_term(term: &Term) -> Result<Self, FromTermError> {
        match term {
            Term::Atom(a) => Ok(a.clone()),
            _ => Err(FromTermError::expected("an atom", term)),
        }
    }
}

impl ToTerm for Binary {
    fn to_term(&self) -> Term {
        Term::from(self.clone())
    }
    fn into_term(self) -> Term {
        Term::from(self)
    }
}

impl FromTerm for Binary {
    fn from_term(term: &Term) -> Result<Self, FromTermError> {
        match term {
            Term::Binary(b) => Ok(b.clone()),
            _ => Err(FromTermError::expected("a binary", term)),
        }
    }
}

/// What `#[derive(Term)]` expands to calls; not an API of its own.
#[doc(hidden)]
pub mod derive {
    use super::{FromTerm, FromTermError, Term, ToTerm, atom_name};
    use crate::term::{Atom, Map, Tuple};
    use std::collections::HashMap;

    pub use crate::term::atom;

    /// `{tag, elements...}`, or `{elements...}` without a tag.
    pub fn tuple(tag: Option<&str>, elements: Vec<Term>) -> Term {
        match tag {
            None => Term::from(Tuple::from(elements)),
            Some(tag) => {
                let mut all = Vec::with_capacity(elements.len() + 1);
                all.push(atom(tag));
                all.extend(elements);
                Term::from(Tuple::from(all))
            }
        }
    }

    /// A map with atom keys.
    pub fn map(pairs: Vec<(&str, Term)>) -> Term {
        Term::from(Map::from(
            pairs
                .into_iter()
                .map(|(k, v)| (atom(k), v))
                .collect::<HashMap<_, _>>(),
        ))
    }

    /// The fields of a tuple of `arity` fields after `tag` (if any).
    pub fn fields<'a>(
        term: &'a Term,
        ty: &'static str,
        tag: Option<&str>,
        arity: usize,
    ) -> Result<&'a [Term], FromTermError> {
        let skip = usize::from(tag.is_some());
        match term {
            Term::Tuple(t)
                if t.elements.len() == arity + skip
                    && tag.is_none_or(|tag| atom_name(&t.elements[0]) == Some(tag)) =>
            {
                Ok(&t.elements[skip..])
            }
            _ => Err(FromTermError::expected(
                match tag {
                    Some(tag) => format!("{ty} as {{{tag}, ...}} with {arity} fields"),
                    None => format!("{ty} as a tuple of {arity}"),
                },
                term,
            )),
        }
    }

    /// One field of `ty`, its errors placed at `ty.name`.
    pub fn field<T: FromTerm>(term: &Term, ty: &str, name: &str) -> Result<T, FromTermError> {
        T::from_term(term).map_err(|e| e.within(format!("{ty}.{name}")))
    }

    /// The map `ty` is written as.
    pub fn as_map<'a>(term: &'a Term, ty: &'static str) -> Result<&'a Map, FromTermError> {
        match term {
            Term::Map(m) => Ok(m),
            _ => Err(FromTermError::expected(format!("{ty} as a map"), term)),
        }
    }

    /// The value under the atom `key` of `map`, as a field of `ty`.
    pub fn key<T: FromTerm>(
        map: &Map,
        ty: &'static str,
        key: &'static str,
        name: &str,
    ) -> Result<T, FromTermError> {
        let value = map
            .map
            .get(&Term::from(Atom::from(key)))
            .ok_or(FromTermError::MissingKey { ty, key })?;
        field(value, ty, name)
    }

    /// The unit atom `name` of `ty`.
    pub fn unit(term: &Term, ty: &'static str, name: &str) -> Result<(), FromTermError> {
        match atom_name(term) {
            Some(a) if a == name => Ok(()),
            _ => Err(FromTermError::expected(format!("{ty} as {name}"), term)),
        }
    }

    /// An enum's tag, and its fields: `None` for a bare atom.
    pub fn variant<'a>(
        term: &'a Term,
        ty: &'static str,
    ) -> Result<(&'a str, Option<&'a [Term]>), FromTermError> {
        match term {
            Term::Atom(a) => Ok((&a.name, None)),
            Term::Tuple(t) => match t.elements.first().and_then(atom_name) {
                Some(tag) => Ok((tag, Some(&t.elements[1..]))),
                None => Err(unknown(term, ty)),
            },
            _ => Err(unknown(term, ty)),
        }
    }

    /// No variant of `ty` is `term`.
    pub fn unknown(term: &Term, ty: &'static str) -> FromTermError {
        FromTermError::UnknownVariant {
            ty,
            found: super::shorten(term),
        }
    }

    /// A field's term (so the expansion needs no trait import).
    pub fn to<T: ToTerm + ?Sized>(value: &T) -> Term {
        value.to_term()
    }
}
