//! The little HTTP/1.1 the observer speaks: read one `GET` request head,
//! answer it, close (or stream server-sent events).
//!
//! Bounded: a request head over [`MAX_HEAD`] bytes gets 431, a client
//! that sends nothing for [`READ_TIMEOUT`] is dropped, so a slow or hostile
//! client holds one actor for a bounded time and nothing else.

use std::io::{self, Read, Write};
use std::time::Duration;

/// The longest request head accepted.
pub(crate) const MAX_HEAD: usize = 8 * 1024;

/// How long a client may take to send its request.
pub(crate) const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long an event stream waits for a client that stopped reading.
pub(crate) const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// A parsed request line and the one header the observer reads.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Request {
    pub(crate) method: String,
    pub(crate) path: String,
    /// `token` from the query string, percent-decoded.
    pub(crate) query_token: Option<String>,
    /// The `Bearer` credential of an `Authorization` header.
    pub(crate) bearer: Option<String>,
}

/// Why a request could not be read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The head exceeded [`MAX_HEAD`].
    TooLarge,
    /// Not an HTTP request line.
    Malformed,
    /// The connection failed, timed out or closed first.
    Closed,
}

/// Read one request head from `stream`.
pub(crate) fn read_request(stream: &mut impl Read) -> Result<Request, ReadError> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    loop {
        let n = stream.read(&mut buf).map_err(|_| ReadError::Closed)?;
        if n == 0 {
            return Err(ReadError::Closed);
        }
        head.extend_from_slice(&buf[..n]);
        if let Some(end) = find(&head, b"\r\n\r\n") {
            head.truncate(end);
            break;
        }
        if head.len() > MAX_HEAD {
            return Err(ReadError::TooLarge);
        }
    }
    parse(&head).ok_or(ReadError::Malformed)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn parse(head: &[u8]) -> Option<Request> {
    let head = std::str::from_utf8(head).ok()?;
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, target, version) = (first.next()?, first.next()?, first.next()?);
    if !version.starts_with("HTTP/1.") || first.next().is_some() {
        return None;
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let query_token = query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == "token")
        .and_then(|(_, v)| percent_decode(v));
    let bearer = lines
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("authorization"))
        .and_then(|(_, value)| value.trim().strip_prefix("Bearer ").map(str::to_string));
    Some(Request {
        method: method.to_string(),
        path: path.to_string(),
        query_token,
        bearer,
    })
}

/// `%XX` and `+` decoding of a query value; `None` if malformed.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Write a complete response and flush it.
pub(crate) fn respond(
    stream: &mut impl Write,
    status: &str,
    content_type: &str,
    body: &[u8],
) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()
}

/// Start a server-sent event stream.
pub(crate) fn begin_events(stream: &mut impl Write) -> io::Result<()> {
    stream.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n\
          Connection: keep-alive\r\n\r\n",
    )?;
    stream.flush()
}

/// Send one server-sent event (`data` must hold no newline: JSON from
/// `serde_json` does not).
pub(crate) fn send_event(stream: &mut impl Write, event: &str, data: &str) -> io::Result<()> {
    stream.write_all(format!("event: {event}\ndata: {data}\n\n").as_bytes())?;
    stream.flush()
}

/// Compare two secrets in time independent of where they differ.
pub(crate) fn same_secret(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_path_the_token_and_the_bearer() {
        let req = parse(
            b"GET /api/snapshot?x=1&token=a%20b+c HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer s3cret",
        )
        .unwrap_or_default();
        assert_eq!(req.method, "GET");
        assert_eq!(req.path, "/api/snapshot");
        assert_eq!(req.query_token.as_deref(), Some("a b c"));
        assert_eq!(req.bearer.as_deref(), Some("s3cret"));
    }

    #[test]
    fn rejects_what_is_not_a_request_line() {
        assert!(parse(b"hello").is_none());
        assert!(parse(b"GET / SMTP").is_none());
        assert!(parse(b"GET /?token=%zz HTTP/1.1").is_some_and(|r| r.query_token.is_none()));
    }

    #[test]
    fn an_endless_head_is_too_large() {
        let mut endless = std::io::repeat(b'a');
        assert!(matches!(
            read_request(&mut endless),
            Err(ReadError::TooLarge)
        ));
    }

    #[test]
    fn secrets_compare_by_content() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "abcd"));
    }
}
