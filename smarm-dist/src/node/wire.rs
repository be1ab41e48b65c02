//! A connection's wire: frames read with a length limit ([`FrameReader`]),
//! frames encoded, and the sending side ([`Outbox`]): a sender that finds
//! the connection idle writes its frame itself, otherwise the connection's
//! writer batches what waits and keeps the peer ticking.

use crate::control::PASS_THROUGH;
use crate::stream::DistStream;
use crate::term;
use crate::term::Term;
use smarm_core::Mutex;
use smarm_core::channel::{Receiver, Sender};
use std::io;
use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use thiserror::Error;
/// What the writer of a connection is handed.
pub(super) enum Out {
    Frame(Vec<u8>),
    Close,
}

/// The writer of a connection: frames as they come, a tick when idle.
/// Frames waiting in the channel are written together, up to this many
/// bytes at once: one system call for a burst of messages.
pub(super) const WRITE_BATCH: usize = 64 << 10;

pub(super) fn write_loop(out: &Outbox, rx: Receiver<Out>, ticktime: Duration) {
    let mut batch = Vec::with_capacity(WRITE_BATCH);
    loop {
        // Wait for a frame without taking it: frames are taken only under
        // the stream's lock, so a direct write cannot overtake one (O1).
        let ready = smarm_core::select_timeout(&[&rx], ticktime / 4).is_some();
        let mut stream = out.direct.lock_stream();
        let (mut taken, mut closing) = (0, false);
        while batch.len() < WRITE_BATCH {
            match rx.try_recv() {
                Ok(Some(Out::Frame(frame))) => {
                    batch.extend_from_slice(&frame);
                    taken += 1;
                }
                Ok(None) => break,
                Ok(Some(Out::Close)) | Err(_) => {
                    closing = true;
                    break;
                }
            }
        }
        if !ready && taken == 0 && !closing {
            batch.extend_from_slice(&[0, 0, 0, 0]); // a tick
        }
        let written = batch.is_empty() || stream.write_all(&batch).is_ok();
        out.direct.wrote();
        out.direct.queued.fetch_sub(taken, Ordering::AcqRel);
        batch.clear();
        if !written || closing {
            let _ = stream.shutdown(std::net::Shutdown::Both);
            return;
        }
    }
}

/// The sending side of a connection: its writer's queue, and the socket
/// itself, written at once by a sender that finds the connection idle.
///
/// A round trip then crosses no writer actor: a frame sent while nothing
/// waits in the queue, the lock is free and nothing was written in the
/// last [`BURST`], is written by the sending actor itself. Anything else
/// goes to the writer, which batches a burst into one system call.
///
/// - (O1) Frames reach the socket in the order they were sent by each
///   sender: a direct write happens only under the stream lock with
///   `queued` at 0, and `queued` counts every frame from before it enters
///   the queue until the writer has written it (under the same lock).
#[derive(Clone)]
pub(super) struct Outbox {
    pub(super) tx: Sender<Out>,
    pub(super) direct: Arc<Direct>,
}

impl Outbox {
    /// Send one frame (O1): written at once if the connection is idle,
    /// else queued for the writer. `Err` if the connection is closed.
    pub(super) fn send(&self, frame: Vec<u8>) -> Result<(), ()> {
        let d = &*self.direct;
        let idle = || {
            d.queued.load(Ordering::Acquire) == 0
                && d.now().saturating_sub(d.last_write.load(Ordering::Relaxed))
                    > BURST.as_nanos() as u64
        };
        // Only an actor may park in a write; callbacks queue.
        if smarm_core::in_actor()
            && idle()
            && let Some(mut stream) = d.stream.try_lock()
            && d.queued.load(Ordering::Acquire) == 0
        {
            let written = stream.write_all(&frame);
            d.wrote();
            return written.map_err(|_| ());
        }
        d.queued.fetch_add(1, Ordering::AcqRel);
        self.tx.send(Out::Frame(frame)).map_err(|_| {
            d.queued.fetch_sub(1, Ordering::AcqRel);
        })
    }

    pub(super) fn try_send(&self, out: Out) {
        let _ = self.tx.try_send(out);
    }
}

pub(super) struct Direct {
    pub(super) stream: Mutex<DistStream>,
    /// Frames handed to the writer and not yet written (O1).
    pub(super) queued: AtomicUsize,
    /// When the socket was last written, in ns since `epoch`.
    pub(super) last_write: AtomicU64,
    pub(super) epoch: Instant,
}

impl Direct {
    pub(super) fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    pub(super) fn wrote(&self) {
        self.last_write.store(self.now(), Ordering::Relaxed);
    }

    /// The stream, waiting as long as a direct write holds it (that
    /// writer is parked on a full socket: the peer's backpressure).
    pub(super) fn lock_stream(&self) -> smarm_core::MutexGuard<'_, DistStream> {
        loop {
            if let Ok(guard) = self.stream.lock() {
                return guard;
            }
        }
    }
}

/// Frames closer together than this go to the writer, to be batched.
pub(super) const BURST: Duration = Duration::from_micros(50);

/// Frames read through a buffer, so a burst of small messages costs one
/// system call per buffer, not two per message.
/// Why a connection's reader could not read its next frame.
#[derive(Debug, Error)]
pub(super) enum FrameError {
    /// The socket failed, or the peer closed it.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The frame's length is over the node's `max_frame`: not read.
    #[error("a frame of {len} bytes, over the limit of {max}")]
    TooLong {
        /// The length the frame claims.
        len: usize,
        /// The node's limit.
        max: usize,
    },
}

pub(super) struct FrameReader {
    pub(super) buf: Vec<u8>,
    pub(super) start: usize,
    pub(super) end: usize,
}

impl FrameReader {
    pub(super) fn new() -> FrameReader {
        FrameReader {
            buf: vec![0; WRITE_BATCH],
            start: 0,
            end: 0,
        }
    }

    /// Make `n` bytes available from `start`, reading as needed; `false`
    /// if the read timed out with none of them buffered.
    pub(super) fn fill(&mut self, stream: &mut impl Read, n: usize) -> io::Result<bool> {
        if self.end - self.start >= n {
            return Ok(true);
        }
        if self.buf.len() - self.start < n {
            // Move what is buffered to the front, and grow for a big frame.
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if self.buf.len() < n {
                self.buf.resize(n, 0);
            }
        }
        while self.end - self.start < n {
            match stream.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the peer closed the connection",
                    ));
                }
                Ok(k) => self.end += k,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    if self.end == self.start {
                        return Ok(false);
                    }
                    // Mid-frame: the rest is on its way.
                }
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// The next frame, no longer than `max`.
    pub(super) fn next(&mut self, stream: &mut impl Read, max: usize) -> Result<Next, FrameError> {
        if !self.fill(stream, 4)? {
            return Ok(Next::Idle);
        }
        let b = &self.buf[self.start..self.start + 4];
        let n = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
        if n > max {
            return Err(FrameError::TooLong { len: n, max });
        }
        while !self.fill(stream, 4 + n)? {}
        let frame = self.start + 4..self.start + 4 + n;
        self.start += 4 + n;
        Ok(Next::Frame(frame))
    }
}

/// What the reader found.
pub(super) enum Next {
    /// A frame (empty: a tick).
    Frame(std::ops::Range<usize>),
    /// The read timed out with nothing buffered: the peer is idle.
    Idle,
}

/// A frame: length, pass-through, control, message.
pub(super) fn encode_frame(control: &Term, message: Option<&Term>) -> Vec<u8> {
    let mut frame = vec![0, 0, 0, 0, PASS_THROUGH];
    term::encode_into(control, &mut frame);
    if let Some(m) = message {
        term::encode_into(m, &mut frame);
    }
    let len = (frame.len() - 4) as u32;
    frame[..4].copy_from_slice(&len.to_be_bytes());
    frame
}
