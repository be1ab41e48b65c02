//! RESP2, the Redis protocol: commands in (arrays of bulk strings, or
//! inline lines as typed into telnet), replies out.
//!
//! The parser is incremental: [`parse`] takes the bytes received so far
//! and returns the complete commands at their front and how many bytes
//! they used; an incomplete command waits for more bytes. Hostile input is
//! bounded: a bulk string longer than [`MAX_BULK`], more than
//! [`MAX_ARGS`] arguments, an inline line longer than [`MAX_INLINE`], a
//! nested array or anything else malformed is a [`ProtocolError`], after
//! which the connection is closed (as Redis does).

use std::fmt;

/// The longest bulk string accepted (Redis's default is 512 MB).
pub const MAX_BULK: usize = 64 << 20;
/// The most arguments in one command (Redis's limit).
pub const MAX_ARGS: usize = 1 << 20;
/// The longest inline command line.
pub const MAX_INLINE: usize = 64 << 10;

/// One command: its arguments, the name first.
pub type Command = Vec<Vec<u8>>;

/// Why the input is not RESP: the connection is closed after the reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub String);

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Protocol error: {}", self.0)
    }
}

fn error<T>(what: impl Into<String>) -> Result<T, ProtocolError> {
    Err(ProtocolError(what.into()))
}

/// Parse the complete commands at the front of `buf` into `out`; returns
/// the bytes they used. A trailing incomplete command is left for the next
/// call, once more bytes have arrived.
pub fn parse(buf: &[u8], out: &mut Vec<Command>) -> Result<usize, ProtocolError> {
    let mut used = 0;
    loop {
        let rest = &buf[used..];
        if rest.is_empty() {
            return Ok(used);
        }
        let step = if rest[0] == b'*' {
            parse_array(rest)?
        } else {
            parse_inline(rest)?
        };
        match step {
            Some((n, cmd)) => {
                used += n;
                if !cmd.is_empty() {
                    out.push(cmd);
                }
            }
            None => return Ok(used),
        }
    }
}

/// The line at the front of `buf` (without its `\r\n`) and the length
/// with it; `None` if it has not fully arrived. `limit` bounds the line.
fn line(buf: &[u8], limit: usize) -> Result<Option<(&[u8], usize)>, ProtocolError> {
    match buf.iter().take(limit + 2).position(|&b| b == b'\n') {
        Some(nl) => {
            let end = if nl > 0 && buf[nl - 1] == b'\r' {
                nl - 1
            } else {
                nl
            };
            Ok(Some((&buf[..end], nl + 1)))
        }
        None if buf.len() > limit + 1 => error("too big line"),
        None => Ok(None),
    }
}

/// A decimal length (`-1` allowed where `allow_nil`).
fn number(digits: &[u8], what: &str) -> Result<i64, ProtocolError> {
    std::str::from_utf8(digits)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .map_or_else(|| error(format!("invalid {what} length")), Ok)
}

/// `*<n>\r\n` then `n` bulk strings.
fn parse_array(buf: &[u8]) -> Result<Option<(usize, Command)>, ProtocolError> {
    let Some((header, mut at)) = line(buf, 32)? else {
        return Ok(None);
    };
    let n = number(&header[1..], "multibulk")?;
    if n <= 0 {
        return Ok(Some((at, Vec::new()))); // `*0` / `*-1`: nothing to run
    }
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    if n > MAX_ARGS {
        return error("invalid multibulk length");
    }
    // Do not trust `n` for the allocation: grow as arguments arrive.
    let mut args = Vec::with_capacity(n.min(16));
    for _ in 0..n {
        let rest = &buf[at..];
        let Some((head, h)) = line(rest, 32)? else {
            return Ok(None);
        };
        match head.first() {
            Some(b'$') => {}
            Some(&c) => return error(format!("expected '$', got '{}'", c as char)),
            None => return error("expected '$', got an empty line"),
        }
        let len = number(&head[1..], "bulk")?;
        let len = match usize::try_from(len) {
            Ok(len) if len <= MAX_BULK => len,
            _ => return error("invalid bulk length"),
        };
        let body = &rest[h..];
        if body.len() < len + 2 {
            return Ok(None);
        }
        if &body[len..len + 2] != b"\r\n" {
            return error("bulk string not terminated by CRLF");
        }
        args.push(body[..len].to_vec());
        at += h + len + 2;
    }
    Ok(Some((at, args)))
}

/// An inline command: words separated by spaces, ending at `\n`.
fn parse_inline(buf: &[u8]) -> Result<Option<(usize, Command)>, ProtocolError> {
    let Some((text, used)) = line(buf, MAX_INLINE)? else {
        return Ok(None);
    };
    let args = text
        .split(|b| b.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    Ok(Some((used, args)))
}

/// A reply, as the shards and the connection build it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`-style status.
    Status(&'static str),
    /// `-ERR ...`.
    Error(String),
    /// `:n`.
    Int(i64),
    /// `$len` and the bytes.
    Bulk(Vec<u8>),
    /// `$-1`.
    Nil,
    /// `*n` and the elements.
    Array(Vec<Reply>),
}

impl Reply {
    /// `-ERR <what>`.
    pub fn err(what: impl fmt::Display) -> Reply {
        Reply::Error(format!("ERR {what}"))
    }

    /// Append the wire form to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        match self {
            Reply::Status(s) => {
                out.push(b'+');
                out.extend_from_slice(s.as_bytes());
                out.extend_from_slice(b"\r\n");
            }
            Reply::Error(e) => {
                out.push(b'-');
                // An error line must not break the framing.
                out.extend(
                    e.bytes()
                        .map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
                );
                out.extend_from_slice(b"\r\n");
            }
            Reply::Int(n) => {
                out.push(b':');
                push_decimal(out, *n);
                out.extend_from_slice(b"\r\n");
            }
            Reply::Bulk(b) => write_bulk(out, b),
            Reply::Nil => out.extend_from_slice(b"$-1\r\n"),
            Reply::Array(items) => {
                out.push(b'*');
                push_decimal(out, items.len() as i64);
                out.extend_from_slice(b"\r\n");
                for item in items {
                    item.write(out);
                }
            }
        }
    }
}

/// `$len\r\n<bytes>\r\n`.
pub fn write_bulk(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'$');
    push_decimal(out, bytes.len() as i64);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
}

fn push_decimal(out: &mut Vec<u8>, n: i64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut v = n.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if n < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[at..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8]) -> (usize, Vec<Command>) {
        let mut out = Vec::new();
        let used = parse(input, &mut out).unwrap();
        (used, out)
    }

    #[test]
    fn arrays_inline_and_partial_input() {
        let input = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n*1\r\n$4\r\nPI";
        let (used, cmds) = all(input);
        assert_eq!(
            cmds,
            vec![vec![b"GET".to_vec(), b"k".to_vec()], vec![b"PING".to_vec()]]
        );
        assert_eq!(
            &input[used..],
            b"*1\r\n$4\r\nPI",
            "the partial command waits"
        );
    }

    #[test]
    fn hostile_input_is_an_error() {
        let mut out = Vec::new();
        assert!(parse(b"*1\r\n$99999999999\r\n", &mut out).is_err());
        assert!(
            parse(b"*1\r\n*1\r\n$1\r\nx\r\n", &mut out).is_err(),
            "nested array"
        );
        assert!(
            parse(b"*2\r\n$1\r\nab\r\n", &mut out).is_err(),
            "bad terminator"
        );
        assert!(parse(b"*x\r\n", &mut out).is_err());
        assert!(
            parse(&vec![b'a'; MAX_INLINE + 10], &mut out).is_err(),
            "endless line"
        );
    }

    #[test]
    fn replies_have_their_wire_form() {
        let mut out = Vec::new();
        Reply::Array(vec![
            Reply::Int(-12),
            Reply::Nil,
            Reply::Bulk(b"v".to_vec()),
        ])
        .write(&mut out);
        Reply::Status("OK").write(&mut out);
        Reply::Error("ERR a\r\nb".into()).write(&mut out);
        assert_eq!(out, b"*3\r\n:-12\r\n$-1\r\n$1\r\nv\r\n+OK\r\n-ERR a  b\r\n");
    }
}
