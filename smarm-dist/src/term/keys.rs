//! Map keys compared as Erlang compares them, so a map that holds one key
//! twice is refused as `binary_to_term` refuses it, instead of losing a
//! pair or keeping two.
//!
//! The codec builds maps as `HashMap<Term, Term>`, whose `Hash` for a map
//! key that is itself a map follows its pairs' iteration order, and whose
//! `Eq` tells a `LIST_EXT` from a `STRING_EXT` of the same integers and a
//! small integer from a bignum of the same value (and an improper list
//! whose tail is a list from the proper list it is). Two keys Erlang calls
//! equal may therefore merge (a pair silently dropped) or stay apart (a
//! map no encoding can carry: once re-encoded they merge). So every term
//! gets a fingerprint that is the same for terms Erlang finds exactly
//! equal (`=:=`): maps hashed as their sorted pairs, lists whatever their
//! encoding, integers whatever their width. A map is refused when two of
//! its keys share a fingerprint and compare equal, or when the codec
//! merged pairs the bytes carried (the map has fewer pairs than encoded).
//!
//! The fingerprints are computed once per subterm, bottom up, with keys
//! drawn at random for the process (std's `RandomState`), so a peer cannot
//! aim for collisions; a collision between unequal keys is harmless (the
//! keys are then compared).

use super::{Term, TermError};
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::OnceLock;

fn hasher() -> std::collections::hash_map::DefaultHasher {
    static STATE: OnceLock<std::collections::hash_map::RandomState> = OnceLock::new();
    STATE
        .get_or_init(std::collections::hash_map::RandomState::new)
        .build_hasher()
}

/// Check every map in `term`: no key twice, and `pairs` (the pairs the
/// bytes held, counted by the checker) all there.
pub(super) fn check(term: &Term, pairs: u64) -> Result<(), TermError> {
    let mut kept = 0u64;
    fingerprint(term, &mut kept)?;
    if kept != pairs {
        return Err(TermError::DuplicateKey);
    }
    Ok(())
}

/// The term's fingerprint (module docs); adds the pairs of every map in
/// it to `kept`.
fn fingerprint(term: &Term, kept: &mut u64) -> Result<u64, TermError> {
    let mut h = hasher();
    match term {
        Term::Map(m) => {
            *kept += m.map.len() as u64;
            let mut keys: HashMap<u64, Vec<&Term>> = HashMap::new();
            let mut pairs = Vec::with_capacity(m.map.len());
            for (k, v) in &m.map {
                let fk = fingerprint(k, kept)?;
                let same = keys.entry(fk).or_default();
                if same.iter().any(|other| exactly_equal(other, k)) {
                    return Err(TermError::DuplicateKey);
                }
                same.push(k);
                pairs.push((fk, fingerprint(v, kept)?));
            }
            pairs.sort_unstable();
            (b'M', pairs).hash(&mut h);
        }
        Term::Tuple(t) => {
            b'T'.hash(&mut h);
            for e in &t.elements {
                fingerprint(e, kept)?.hash(&mut h);
            }
        }
        Term::List(_) | Term::ByteList(_) | Term::ImproperList(_) => {
            let (items, tail) = flatten(term);
            b'L'.hash(&mut h);
            for e in items {
                e.fingerprint(kept)?.hash(&mut h);
            }
            match tail {
                Some(t) => fingerprint(t, kept)?.hash(&mut h),
                None => b'N'.hash(&mut h),
            }
        }
        Term::FixInteger(i) => return Ok(integer(i64::from(i.value))),
        Term::BigInteger(b) => match i64::try_from(&b.value) {
            Ok(small) => return Ok(integer(small)),
            Err(_) => (b'B', term).hash(&mut h),
        },
        leaf => (b'X', leaf).hash(&mut h),
    }
    Ok(h.finish())
}

fn integer(v: i64) -> u64 {
    let mut h = hasher();
    (b'N', v).hash(&mut h);
    h.finish()
}

/// Erlang's `=:=` on terms the codec decoded: maps compared pair by pair
/// whatever their order, lists whatever their encoding, integers whatever
/// their width. Called only for keys whose fingerprints match.
pub(crate) fn exactly_equal(a: &Term, b: &Term) -> bool {
    let all = |x: &[Term], y: &[Term]| {
        x.len() == y.len() && x.iter().zip(y).all(|(x, y)| exactly_equal(x, y))
    };
    match (a, b) {
        (Term::Map(x), Term::Map(y)) => {
            x.map.len() == y.map.len()
                && x.map.iter().all(|(k, v)| {
                    y.map
                        .iter()
                        .any(|(k2, v2)| exactly_equal(k, k2) && exactly_equal(v, v2))
                })
        }
        (Term::Tuple(x), Term::Tuple(y)) => all(&x.elements, &y.elements),
        (
            Term::List(_) | Term::ByteList(_) | Term::ImproperList(_),
            Term::List(_) | Term::ByteList(_) | Term::ImproperList(_),
        ) => {
            let ((x, xt), (y, yt)) = (flatten(a), flatten(b));
            x.len() == y.len()
                && x.iter().zip(&y).all(|(a, b)| a.equal(*b))
                && match (xt, yt) {
                    (None, None) => true,
                    (Some(xt), Some(yt)) => exactly_equal(xt, yt),
                    _ => false,
                }
        }
        (Term::FixInteger(_) | Term::BigInteger(_), Term::FixInteger(_) | Term::BigInteger(_)) => {
            as_big(a) == as_big(b)
        }
        _ => a == b,
    }
}

/// An element of a list: a term, or a byte of a `STRING_EXT`.
#[derive(Clone, Copy)]
enum Item<'a> {
    Term(&'a Term),
    Byte(u8),
}

impl Item<'_> {
    fn fingerprint(self, kept: &mut u64) -> Result<u64, TermError> {
        match self {
            Item::Term(t) => fingerprint(t, kept),
            Item::Byte(c) => Ok(integer(i64::from(c))),
        }
    }

    fn equal(self, other: Item<'_>) -> bool {
        match (self, other) {
            (Item::Term(a), Item::Term(b)) => exactly_equal(a, b),
            (Item::Byte(a), Item::Byte(b)) => a == b,
            (Item::Term(t), Item::Byte(c)) | (Item::Byte(c), Item::Term(t)) => {
                as_big(t) == Some(super::BigInteger::from(i32::from(c)))
            }
        }
    }
}

/// A list's elements however it was encoded (`LIST_EXT`, `STRING_EXT`,
/// an improper list whose tail is itself a list), and its tail when that
/// is not `[]`.
fn flatten(t: &Term) -> (Vec<Item<'_>>, Option<&Term>) {
    let mut items = Vec::new();
    let mut at = t;
    loop {
        match at {
            Term::List(l) => {
                items.extend(l.elements.iter().map(Item::Term));
                return (items, None);
            }
            Term::ByteList(b) => {
                items.extend(b.bytes.iter().map(|&c| Item::Byte(c)));
                return (items, None);
            }
            Term::ImproperList(l) => {
                items.extend(l.elements.iter().map(Item::Term));
                at = &l.last;
            }
            other => return (items, Some(other)),
        }
    }
}

fn as_big(t: &Term) -> Option<super::BigInteger> {
    match t {
        Term::FixInteger(i) => Some(super::BigInteger::from(i.value)),
        Term::BigInteger(b) => Some(b.clone()),
        _ => None,
    }
}
