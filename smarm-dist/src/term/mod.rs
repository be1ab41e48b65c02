//! External terms: Erlang's External Term Format, through the `eetf`
//! codec, behind a check that bounds what a peer can make us allocate.
//!
//! The codec trusts the lengths it reads (a list that claims 2^32
//! elements is allocated as such) and recurses once per nesting level.
//! Bytes from the network therefore pass [`check`] first: every declared
//! length must fit in the bytes that follow (each element takes at least
//! one), nesting is at most [`MAX_DEPTH`] deep, and the tags a
//! distribution message cannot carry without an atom cache or
//! compression (which smarm does not negotiate) are refused. A term that
//! passes decodes in memory proportional to its size. Once decoded, a map
//! that holds one key twice is refused, as Erlang's decoder refuses it
//! (`keys`).
//!
//! [`ToTerm`] and [`FromTerm`] turn Rust values into terms and back (the
//! mapping is in their module's table, `convert`), for the usual types and,
//! by `#[derive(Term)]`, for yours.

pub use eetf::{
    Atom, BigInteger, Binary, BitBinary, ByteList, ExternalFun, FixInteger, Float, ImproperList,
    List, Map, Pid as PidTerm, Reference, Term, Tuple,
};
use thiserror::Error;

pub mod convert;
pub(crate) mod keys;
#[doc(hidden)]
pub use convert::derive as __derive;
pub use convert::{FromTerm, FromTermError, ToTerm};

/// How deep a term from the network may nest.
pub const MAX_DEPTH: usize = 256;

/// Why bytes are not an acceptable external term.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TermError {
    /// The bytes end inside the term.
    #[error("the term ends early (at byte {0})")]
    Truncated(usize),
    /// A tag this decoder does not accept here.
    #[error("unsupported term tag {tag} at byte {at}")]
    Tag {
        /// The tag.
        tag: u8,
        /// Where it stands.
        at: usize,
    },
    /// A declared length larger than the bytes that follow.
    #[error("a length of {len} at byte {at} runs past the message")]
    Length {
        /// The length.
        len: u64,
        /// Where it stands.
        at: usize,
    },
    /// Nested deeper than [`MAX_DEPTH`].
    #[error("the term nests deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// A bitstring whose last byte claims a number of bits outside 1-8.
    #[error("a bitstring at byte {at} uses {bits} bits of its last byte (1 to 8)")]
    BitCount {
        /// The count.
        bits: u8,
        /// Where it stands.
        at: usize,
    },
    /// A map holds one key twice (as Erlang compares keys: `=:=`), which
    /// Erlang's own decoder refuses too.
    #[error("a map holds the same key twice")]
    DuplicateKey,
    /// The term does not start with the format's version byte, 131.
    #[error("no version byte (131) at byte {0}")]
    Version(usize),
    /// The codec refused it.
    #[error("the term does not decode: {0}")]
    Decode(String),
}

/// The format's version byte.
pub const VERSION: u8 = 131;

struct Checker<'a> {
    b: &'a [u8],
    at: usize,
    /// The pairs of every map met so far.
    pairs: u64,
}

impl Checker<'_> {
    fn need(&self, n: u64) -> Result<(), TermError> {
        let left = (self.b.len() - self.at) as u64;
        if n > left {
            return Err(TermError::Length {
                len: n,
                at: self.at,
            });
        }
        Ok(())
    }
    fn skip(&mut self, n: usize) -> Result<(), TermError> {
        if self.b.len() - self.at < n {
            return Err(TermError::Truncated(self.at));
        }
        self.at += n;
        Ok(())
    }
    fn u8(&mut self) -> Result<u8, TermError> {
        let v = *self.b.get(self.at).ok_or(TermError::Truncated(self.at))?;
        self.at += 1;
        Ok(v)
    }
    fn u16(&mut self) -> Result<u16, TermError> {
        let s = self
            .b
            .get(self.at..self.at + 2)
            .ok_or(TermError::Truncated(self.at))?;
        self.at += 2;
        Ok(u16::from_be_bytes([s[0], s[1]]))
    }
    fn u32(&mut self) -> Result<u32, TermError> {
        let s = self
            .b
            .get(self.at..self.at + 4)
            .ok_or(TermError::Truncated(self.at))?;
        self.at += 4;
        Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }
    /// `count` elements, each at least a byte.
    fn elements(&mut self, count: u64, depth: usize) -> Result<(), TermError> {
        self.need(count)?;
        for _ in 0..count {
            self.term(depth + 1)?;
        }
        Ok(())
    }
    fn atom(&mut self) -> Result<(), TermError> {
        let at = self.at;
        match self.u8()? {
            100 | 118 => {
                let n = self.u16()?;
                self.skip(n as usize)
            }
            115 | 119 => {
                let n = self.u8()?;
                self.skip(n as usize)
            }
            tag => Err(TermError::Tag { tag, at }),
        }
    }
    fn term(&mut self, depth: usize) -> Result<(), TermError> {
        if depth > MAX_DEPTH {
            return Err(TermError::TooDeep);
        }
        let at = self.at;
        match self.u8()? {
            97 => self.skip(1),
            98 => self.skip(4),
            70 => self.skip(8),
            99 => self.skip(31),
            106 => Ok(()),
            100 | 115 | 118 | 119 => {
                self.at = at;
                self.atom()
            }
            104 => {
                let n = self.u8()?;
                self.elements(u64::from(n), depth)
            }
            105 => {
                let n = self.u32()?;
                self.elements(u64::from(n), depth)
            }
            107 => {
                let n = self.u16()?;
                self.skip(n as usize)
            }
            108 => {
                let n = self.u32()?;
                self.elements(u64::from(n), depth)?;
                self.term(depth + 1) // the tail
            }
            109 => {
                let n = self.u32()?;
                self.need(u64::from(n))?;
                self.skip(n as usize)
            }
            77 => {
                let n = self.u32()?;
                let bits_at = self.at;
                let bits = self.u8()?;
                // The bits used of the last byte: 1 to 8, none for no byte
                // (the codec shifts by 8 - bits).
                if (n == 0 && bits != 0) || (n > 0 && !(1..=8).contains(&bits)) {
                    return Err(TermError::BitCount { bits, at: bits_at });
                }
                self.need(u64::from(n))?;
                self.skip(n as usize)
            }
            110 => {
                let n = self.u8()?;
                self.skip(1 + n as usize)
            }
            111 => {
                let n = self.u32()?;
                self.need(u64::from(n) + 1)?;
                self.skip(1 + n as usize)
            }
            116 => {
                let n = self.u32()?;
                self.pairs += u64::from(n);
                self.elements(2 * u64::from(n), depth)
            }
            tag => self.reference_or_fun(tag, at, depth),
        }
    }

    /// The rest of [`term`](Self::term): pids, ports, references, funs and
    /// exports, each an atom (node or module) and fixed or counted parts.
    fn reference_or_fun(&mut self, tag: u8, at: usize, depth: usize) -> Result<(), TermError> {
        match tag {
            103 => {
                self.atom()?;
                self.skip(9)
            }
            88 => {
                self.atom()?;
                self.skip(12)
            }
            102 => {
                self.atom()?;
                self.skip(5)
            }
            89 => {
                self.atom()?;
                self.skip(8)
            }
            120 => {
                self.atom()?;
                self.skip(12)
            }
            101 => {
                self.atom()?;
                self.skip(5)
            }
            114 | 90 => {
                let tag = self.b[at];
                let n = self.u16()?;
                self.atom()?;
                self.skip(if tag == 114 { 1 } else { 4 })?;
                self.need(4 * u64::from(n))?;
                self.skip(4 * n as usize)
            }
            113 => {
                self.atom()?;
                self.atom()?;
                self.term(depth + 1)
            }
            112 => {
                // size, arity, uniq, index, free count, then module,
                // old index, old uniq, pid and the free variables.
                self.skip(4 + 1 + 16 + 4)?;
                let free = self.u32()?;
                self.atom()?;
                for _ in 0..3 {
                    self.term(depth + 1)?;
                }
                self.elements(u64::from(free), depth)
            }
            tag => Err(TermError::Tag { tag, at }),
        }
    }
}

/// Check the term that starts at `start` of `bytes` (its version byte
/// first, module docs); returns where it ends.
pub fn check(bytes: &[u8], start: usize) -> Result<usize, TermError> {
    checked(bytes, start).map(|(end, _)| end)
}

/// [`check`], also returning how many map pairs the term holds.
fn checked(bytes: &[u8], start: usize) -> Result<(usize, u64), TermError> {
    let mut c = Checker {
        b: bytes,
        at: start,
        pairs: 0,
    };
    if c.u8().map_err(|_| TermError::Version(start))? != VERSION {
        return Err(TermError::Version(start));
    }
    c.term(0)?;
    Ok((c.at, c.pairs))
}

/// Check and decode the term at `start` of `bytes`; returns it and where
/// it ends.
pub fn decode_at(bytes: &[u8], start: usize) -> Result<(Term, usize), TermError> {
    let (end, pairs) = checked(bytes, start)?;
    let term = Term::decode(std::io::Cursor::new(&bytes[start..end]))
        .map_err(|e| TermError::Decode(e.to_string()))?;
    if pairs > 0 {
        keys::check(&term, pairs)?;
    }
    Ok((term, end))
}

/// Decode one whole external term (as `binary_to_term/1`, with the checks
/// above).
///
/// ```
/// use smarm_dist::term::{decode, encode, Atom, Term};
///
/// let bytes = encode(&Term::from(Atom::from("hello")));
/// assert_eq!(decode(&bytes).unwrap(), Term::from(Atom::from("hello")));
/// // A list that claims more elements than there are bytes is refused.
/// assert!(decode(&[131, 108, 255, 255, 255, 255, 106]).is_err());
/// ```
pub fn decode(bytes: &[u8]) -> Result<Term, TermError> {
    let (term, end) = decode_at(bytes, 0)?;
    if end != bytes.len() {
        return Err(TermError::Length {
            len: (bytes.len() - end) as u64,
            at: end,
        });
    }
    Ok(term)
}

/// Encode `term` (as `term_to_binary/1`).
pub fn encode(term: &Term) -> Vec<u8> {
    let mut out = Vec::new();
    encode_into(term, &mut out);
    out
}

/// Append the encoding of `term` to `out`. Only an atom longer than
/// 65,535 bytes or a reference of more than 65,535 words cannot be
/// encoded: it is written as the atom `'$smarm_unencodable'` instead.
///
/// Containers are written here and only their leaves by the codec: its
/// list encoder writes a list of small integers as a string of bytes
/// without checking that they are not negative (`[-5]` would arrive as
/// `[251]`).
pub fn encode_into(term: &Term, out: &mut Vec<u8>) {
    let mark = out.len();
    out.push(VERSION);
    if encode_body(term, out).is_err() {
        out.truncate(mark);
        let _ = Term::from(Atom::from("$smarm_unencodable")).encode(&mut *out);
    }
}

/// A term without the version byte.
fn encode_body(term: &Term, out: &mut Vec<u8>) -> Result<(), eetf::EncodeError> {
    let len32 = |n: usize| {
        u32::try_from(n)
            .map(u32::to_be_bytes)
            .map_err(|_| eetf::EncodeError::Io(std::io::Error::other("too many elements")))
    };
    match term {
        Term::List(l) if l.elements.is_empty() => out.push(106),
        Term::List(l) => {
            let bytes: Option<Vec<u8>> = l
                .elements
                .iter()
                .map(|e| match e {
                    Term::FixInteger(FixInteger { value }) => u8::try_from(*value).ok(),
                    _ => None,
                })
                .collect();
            match bytes {
                Some(b) if b.len() <= usize::from(u16::MAX) => {
                    out.push(107);
                    out.extend_from_slice(&(b.len() as u16).to_be_bytes());
                    out.extend_from_slice(&b);
                }
                _ => {
                    out.push(108);
                    out.extend_from_slice(&len32(l.elements.len())?);
                    for e in &l.elements {
                        encode_body(e, out)?;
                    }
                    out.push(106);
                }
            }
        }
        Term::ImproperList(l) => {
            out.push(108);
            out.extend_from_slice(&len32(l.elements.len())?);
            for e in &l.elements {
                encode_body(e, out)?;
            }
            encode_body(&l.last, out)?;
        }
        Term::Tuple(t) => {
            match u8::try_from(t.elements.len()) {
                Ok(n) => out.extend_from_slice(&[104, n]),
                Err(_) => {
                    out.push(105);
                    out.extend_from_slice(&len32(t.elements.len())?);
                }
            }
            for e in &t.elements {
                encode_body(e, out)?;
            }
        }
        Term::Map(m) => {
            out.push(116);
            out.extend_from_slice(&len32(m.map.len())?);
            for (k, v) in &m.map {
                encode_body(k, out)?;
                encode_body(v, out)?;
            }
        }
        leaf => {
            let mark = out.len();
            leaf.encode(&mut *out)?;
            out.remove(mark); // the codec's own version byte
        }
    }
    Ok(())
}

/// The atom `name`.
pub fn atom(name: &str) -> Term {
    Term::from(Atom::from(name))
}

/// The name of an atom; `None` for any other term.
pub fn atom_name(t: &Term) -> Option<&str> {
    match t {
        Term::Atom(a) => Some(&a.name),
        _ => None,
    }
}

/// The elements of a proper list (a `LIST_EXT`, the empty list, or a
/// `STRING_EXT` of bytes); `None` for any other term.
pub fn list_elements(t: &Term) -> Option<Vec<Term>> {
    match t {
        Term::List(List { elements }) => Some(elements.clone()),
        Term::ByteList(b) => Some(
            b.bytes
                .iter()
                .map(|&c| Term::from(FixInteger::from(i32::from(c))))
                .collect(),
        ),
        _ => None,
    }
}

/// The tuple of `elements`.
pub fn tuple(elements: Vec<Term>) -> Term {
    Term::from(Tuple::from(elements))
}

/// `term` as Erlang writes it (`io:format("~w")`, with printable
/// binaries as `<<"text">>` and map keys sorted), for logs and error
/// messages.
///
/// ```
/// use smarm_dist::term::{atom, display, tuple, Term};
/// use smarm_dist::ToTerm;
///
/// let t = tuple(vec![atom("ok"), atom("Hello"), "tea".to_term(), vec![1, 2].to_term()]);
/// assert_eq!(display(&t).to_string(), r#"{ok,'Hello',<<"tea">>,[1,2]}"#);
/// ```
pub fn display(term: &Term) -> Display<'_> {
    Display(term)
}

/// The [`display`] of a term.
pub struct Display<'a>(&'a Term);

impl std::fmt::Display for Display<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write_term(self.0, f)
    }
}

/// Whether `name` is written without quotes: a lowercase letter, then
/// letters, digits, `_` and `@`, and not a reserved word.
fn bare_atom(name: &str) -> bool {
    const RESERVED: [&str; 28] = [
        "after", "and", "andalso", "band", "begin", "bnot", "bor", "bsl", "bsr", "bxor", "case",
        "catch", "cond", "div", "else", "end", "fun", "if", "let", "maybe", "not", "of", "or",
        "orelse", "receive", "rem", "try", "when",
    ];
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '@')
        && !RESERVED.contains(&name)
}

fn write_atom(name: &str, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    if bare_atom(name) {
        f.write_str(name)
    } else {
        write!(f, "'{}'", name.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

fn write_all<'t>(
    items: impl IntoIterator<Item = &'t Term>,
    f: &mut std::fmt::Formatter<'_>,
) -> std::fmt::Result {
    for (i, t) in items.into_iter().enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        write_term(t, f)?;
    }
    Ok(())
}

fn write_bytes(
    bytes: &[u8],
    (open, close): (&str, &str),
    f: &mut std::fmt::Formatter<'_>,
) -> std::fmt::Result {
    f.write_str(open)?;
    for (i, byte) in bytes.iter().enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        write!(f, "{byte}")?;
    }
    f.write_str(close)
}

fn write_term(term: &Term, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    match term {
        Term::Atom(a) => write_atom(&a.name, f),
        Term::FixInteger(i) => write!(f, "{}", i.value),
        Term::BigInteger(b) => write!(f, "{}", b.value),
        Term::Float(x) => write!(f, "{:?}", x.value),
        Term::Binary(b) => match std::str::from_utf8(&b.bytes) {
            Ok(s) if !s.is_empty() && s.chars().all(|c| !c.is_control()) => {
                write!(f, "<<{s:?}>>")
            }
            _ => write_bytes(&b.bytes, ("<<", ">>"), f),
        },
        Term::ByteList(l) => write_bytes(&l.bytes, ("[", "]"), f),
        Term::List(l) => {
            f.write_str("[")?;
            write_all(&l.elements, f)?;
            f.write_str("]")
        }
        Term::ImproperList(l) => {
            f.write_str("[")?;
            write_all(&l.elements, f)?;
            f.write_str("|")?;
            write_term(&l.last, f)?;
            f.write_str("]")
        }
        Term::Tuple(t) => {
            f.write_str("{")?;
            write_all(&t.elements, f)?;
            f.write_str("}")
        }
        Term::Map(m) => {
            let mut pairs: Vec<(String, &Term)> = m
                .map
                .iter()
                .map(|(k, v)| (display(k).to_string(), v))
                .collect();
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            f.write_str("#{")?;
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    f.write_str(",")?;
                }
                write!(f, "{k} => ")?;
                write_term(v, f)?;
            }
            f.write_str("}")
        }
        Term::Pid(p) => {
            f.write_str("<")?;
            write_atom(&p.node.name, f)?;
            write!(f, ".{}.{}>", p.id, p.serial)
        }
        other => write!(f, "{other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_round_trip_through_the_check() {
        let t = tuple(vec![
            atom("ok"),
            Term::from(FixInteger::from(-5)),
            Term::from(Binary::from(vec![1, 2, 3])),
            Term::from(List::from(vec![atom("a"), atom("b")])),
            Term::from(Float::try_from(1.5).unwrap()),
        ]);
        assert_eq!(decode(&encode(&t)).unwrap(), t);
    }

    #[test]
    fn a_list_of_negative_small_integers_keeps_its_signs() {
        let t = Term::from(List::from(vec![
            Term::from(FixInteger::from(-5)),
            Term::from(FixInteger::from(7)),
        ]));
        let bytes = encode(&t);
        assert_eq!(bytes[1], 108, "a LIST_EXT, not a string of bytes");
        assert_eq!(decode(&bytes).unwrap(), t);
        let s = Term::from(List::from(vec![
            Term::from(FixInteger::from(5)),
            Term::from(FixInteger::from(255)),
        ]));
        assert_eq!(
            encode(&s)[1],
            107,
            "non-negative bytes still go as a string"
        );
    }

    #[test]
    fn a_bitstring_must_use_one_to_eight_bits_of_its_last_byte() {
        // The codec shifts the last byte by 8 - bits: 0 or 9 overflows.
        for bits in [0u8, 9, 255] {
            assert_eq!(
                decode(&[131, 77, 0, 0, 0, 1, bits, 0xff]),
                Err(TermError::BitCount { bits, at: 6 })
            );
        }
        assert!(decode(&[131, 77, 0, 0, 0, 0, 1]).is_err());
        assert!(decode(&[131, 77, 0, 0, 0, 1, 3, 0xe0]).is_ok());
        assert!(decode(&[131, 77, 0, 0, 0, 0, 0]).is_ok());
    }

    /// A map of `pairs`, each key and value already encoded (no version
    /// byte).
    fn map_bytes(pairs: &[(&[u8], &[u8])]) -> Vec<u8> {
        let mut out = vec![116];
        out.extend_from_slice(&(pairs.len() as u32).to_be_bytes());
        for (k, v) in pairs {
            out.extend_from_slice(k);
            out.extend_from_slice(v);
        }
        out
    }

    fn with_version(body: &[u8]) -> Vec<u8> {
        [&[VERSION][..], body].concat()
    }

    #[test]
    fn a_map_that_holds_a_key_twice_is_refused_as_erlang_refuses_it() {
        let a: &[u8] = &[119, 1, b'a'];
        let b: &[u8] = &[119, 1, b'b'];
        let (one, two): (&[u8], &[u8]) = (&[97, 1], &[97, 2]);
        // The same atom twice: the codec would keep one pair of the two.
        let twice = map_bytes(&[(a, one), (a, two)]);
        assert_eq!(decode(&with_version(&twice)), Err(TermError::DuplicateKey));
        // Equal maps as keys, their pairs in two orders.
        let ab = map_bytes(&[(a, one), (b, two)]);
        let ba = map_bytes(&[(b, two), (a, one)]);
        let keyed = map_bytes(&[(&ab, a), (&ba, b)]);
        assert_eq!(decode(&with_version(&keyed)), Err(TermError::DuplicateKey));
        // "a" and [97]: one list, two encodings.
        let string: &[u8] = &[107, 0, 1, b'a'];
        let list: &[u8] = &[108, 0, 0, 0, 1, 97, b'a', 106];
        let lists = map_bytes(&[(string, one), (list, two)]);
        assert_eq!(decode(&with_version(&lists)), Err(TermError::DuplicateKey));
        // 1 and a bignum 1; [1 | [2]] and [1, 2].
        let big: &[u8] = &[110, 1, 0, 1];
        let ints = map_bytes(&[(one, a), (&[97, 1], b)]);
        let wide = map_bytes(&[(&[97, 1], a), (big, b)]);
        assert_eq!(decode(&with_version(&ints)), Err(TermError::DuplicateKey));
        assert_eq!(decode(&with_version(&wide)), Err(TermError::DuplicateKey));
        let improper: &[u8] = &[108, 0, 0, 0, 1, 97, 1, 108, 0, 0, 0, 1, 97, 2, 106];
        let proper: &[u8] = &[108, 0, 0, 0, 2, 97, 1, 97, 2, 106];
        let spliced = map_bytes(&[(improper, a), (proper, b)]);
        assert_eq!(
            decode(&with_version(&spliced)),
            Err(TermError::DuplicateKey)
        );
        // Nested: the inner map is checked too.
        let inner = map_bytes(&[(&twice, a)]);
        let outer = [&[104, 1][..], &inner].concat();
        assert_eq!(decode(&with_version(&outer)), Err(TermError::DuplicateKey));
    }

    #[test]
    fn keys_erlang_tells_apart_stay_apart() {
        let (a, b): (&[u8], &[u8]) = (&[119, 1, b'a'], &[119, 1, b'b']);
        let int: &[u8] = &[97, 1];
        let float: &[u8] = &[70, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0]; // 1.0
        let improper: &[u8] = &[108, 0, 0, 0, 1, 97, 1, 97, 2]; // [1 | 2]
        let proper: &[u8] = &[108, 0, 0, 0, 2, 97, 1, 97, 2, 106];
        let ab = map_bytes(&[(a, int), (b, int)]);
        let ab2 = map_bytes(&[(a, int), (b, float)]);
        for (x, y) in [(int, float), (improper, proper), (&ab[..], &ab2[..])] {
            let m = decode(&with_version(&map_bytes(&[(x, a), (y, b)]))).unwrap();
            let Term::Map(m) = m else { panic!("{m:?}") };
            assert_eq!(m.map.len(), 2);
        }
    }

    #[test]
    fn erlang_funs_pass_the_check_and_round_trip() {
        // `fun random_exit_name/3` inside `global` (global:register_name/2's
        // method), and an erl_eval fun with one free variable, as OTP 25's
        // term_to_binary wrote them.
        let global_fun: &[u8] = &[
            131, 112, 0, 0, 0, 72, 3, 215, 64, 169, 178, 165, 243, 6, 57, 45, 13, 118, 130, 71,
            140, 64, 34, 0, 0, 0, 0, 0, 0, 0, 0, 100, 0, 6, 103, 108, 111, 98, 97, 108, 97, 0, 98,
            6, 186, 5, 77, 88, 100, 0, 11, 102, 117, 110, 98, 121, 116, 101, 115, 64, 118, 109, 0,
            0, 0, 9, 0, 0, 0, 0, 107, 20, 249, 79,
        ];
        let eval_fun: &[u8] = &[
            131, 112, 0, 0, 0, 187, 1, 6, 83, 97, 170, 70, 21, 144, 209, 189, 241, 235, 98, 209,
            166, 235, 8, 0, 0, 0, 42, 0, 0, 0, 1, 100, 0, 8, 101, 114, 108, 95, 101, 118, 97, 108,
            97, 42, 98, 0, 50, 155, 13, 88, 100, 0, 11, 102, 117, 110, 98, 121, 116, 101, 115, 64,
            118, 109, 0, 0, 0, 9, 0, 0, 0, 0, 107, 20, 249, 79, 104, 6, 97, 1, 106, 100, 0, 4, 110,
            111, 110, 101, 100, 0, 4, 110, 111, 110, 101, 116, 0, 0, 0, 0, 108, 0, 0, 0, 1, 104, 5,
            100, 0, 6, 99, 108, 97, 117, 115, 101, 97, 1, 108, 0, 0, 0, 1, 104, 3, 100, 0, 3, 118,
            97, 114, 97, 1, 100, 0, 1, 65, 106, 106, 108, 0, 0, 0, 1, 104, 5, 100, 0, 2, 111, 112,
            97, 1, 100, 0, 1, 43, 104, 3, 100, 0, 3, 118, 97, 114, 97, 1, 100, 0, 1, 65, 104, 3,
            100, 0, 7, 105, 110, 116, 101, 103, 101, 114, 97, 1, 97, 1, 106, 106,
        ];
        for bytes in [global_fun, eval_fun] {
            assert_eq!(check(bytes, 0), Ok(bytes.len()));
            let t = decode(bytes).unwrap();
            assert!(matches!(t, Term::InternalFun(_)), "{t:?}");
            assert_eq!(decode(&encode(&t)).unwrap(), t);
        }
    }

    #[test]
    fn lengths_past_the_end_and_deep_nesting_are_refused() {
        // A binary claiming 4 GiB.
        assert!(matches!(
            decode(&[131, 109, 255, 255, 255, 255]),
            Err(TermError::Length { .. })
        ));
        // A map claiming 2^31 pairs.
        assert!(matches!(
            decode(&[131, 116, 128, 0, 0, 0]),
            Err(TermError::Length { .. })
        ));
        // 1,000 nested one-tuples.
        let mut deep = vec![131];
        deep.extend(std::iter::repeat_n([104, 1], 1000).flatten());
        deep.push(106);
        assert_eq!(decode(&deep), Err(TermError::TooDeep));
        // Truncated, wrong version, compressed.
        assert!(matches!(
            decode(&[131, 104, 1, 98, 0]),
            Err(TermError::Truncated(_))
        ));
        assert_eq!(decode(&[130, 106]), Err(TermError::Version(0)));
        assert!(matches!(
            decode(&[131, 80, 0, 0, 0, 1]),
            Err(TermError::Tag { tag: 80, .. })
        ));
    }
}
