//! Entry points for the coverage-guided fuzz targets (`smarm-dist/fuzz`,
//! built with the `fuzzing` feature): each takes arbitrary bytes, as a
//! hostile peer would send them, and must return without a panic, a
//! hang or an allocation out of proportion to its input.
//!
//! [`seeds`] makes each target's seed corpus from well-formed messages;
//! the unit tests run every target over its seeds and over the crashers
//! fuzzing found (`fuzz/regressions/<target>/`), so each stays fixed.

use super::wire::{FrameReader, Next};
use super::{Builder, Node};
use crate::control::decode_message;
use crate::flags::Flags;
use crate::handshake::{self, Local, Replay, Status};
use crate::term;
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::Duration;

/// The largest frame the targets read: a peer may claim more, and is
/// refused.
const MAX_FRAME: usize = 1 << 20;

fn local() -> Local {
    Local {
        name: "fuzz@localhost".into(),
        cookie: "cookie".into(),
        flags: Flags::offered(),
        creation: 1,
    }
}

/// A handshake with a peer that sends `bytes`: the first byte picks
/// the side this node takes (and, accepting, its answer to the peer's
/// name), the rest is what the peer says.
pub fn handshake(bytes: &[u8]) {
    let Some((&pick, peer)) = bytes.split_first() else {
        return;
    };
    let mut replay = Replay::new(peer);
    let timeout = Duration::from_secs(1);
    if pick & 1 == 0 {
        let _ = handshake::initiate(&mut replay, &local(), "peer@localhost", timeout, || {
            pick & 2 == 0
        });
    } else {
        let status = match (pick >> 1) & 3 {
            0 => Status::Ok,
            1 => Status::OkSimultaneous,
            2 => Status::Nok,
            _ => Status::Alive,
        };
        let _ = handshake::accept(&mut replay, &local(), timeout, |_| status);
    }
}

/// The frames of a connection that sends `bytes`, each read as a
/// distribution message.
pub fn frames(bytes: &[u8]) {
    let mut stream = bytes;
    let mut reader = FrameReader::new();
    while let Ok(Next::Frame(frame)) = reader.next(&mut stream, MAX_FRAME) {
        let frame = &reader.buf[frame];
        if !frame.is_empty() {
            let _ = decode_message(frame);
        }
    }
}

/// `bytes` as an external term: checked, decoded, and a term that decodes
/// encodes to bytes that decode to the same term.
///
/// # Panics
///
/// If a decoded term does not survive its own round trip.
pub fn term(bytes: &[u8]) {
    if let Ok(t) = term::decode(bytes) {
        let again = term::encode(&t);
        match term::decode(&again) {
            // Terms, not bytes: a map's pairs encode in hash order, and a list of
            // bytes as a string.
            Ok(back) => assert!(
                term::keys::exactly_equal(&back, &t),
                "a round trip changed {t:?} to {back:?}"
            ),
            Err(e) => panic!("{t:?} encodes to bytes that do not decode: {e}"),
        }
    }
}

/// The node the dispatch target feeds, in a runtime of its own.
fn fed_node() -> &'static mpsc::SyncSender<(Vec<u8>, mpsc::SyncSender<()>)> {
    static NODE: OnceLock<mpsc::SyncSender<(Vec<u8>, mpsc::SyncSender<()>)>> = OnceLock::new();
    NODE.get_or_init(|| {
        let (tx, rx) = mpsc::sync_channel::<(Vec<u8>, mpsc::SyncSender<()>)>(0);
        std::thread::spawn(move || {
            smarm_core::run(move || {
                let epmd = std::net::TcpListener::bind("127.0.0.1:0")
                    .and_then(|l| l.local_addr())
                    .map(|a| a.port())
                    .unwrap_or(4369);
                let node = match Builder::new("fuzz@localhost")
                    .cookie("cookie")
                    .epmd_port(epmd)
                    .start()
                {
                    Ok(node) => node,
                    Err(e) => panic!("smarm_dist::fuzz::dispatch: the node did not start: {e}"),
                };
                let _inbox = node.register("inbox");
                node.export("m", "f", |args| {
                    Ok(term::Term::from(term::List::from(args)))
                });
                // Frames come from a plain thread: take them on the
                // blocking pool, one at a time.
                let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
                loop {
                    let rx = rx.clone();
                    let next = smarm_core::io::block_on_io(move || {
                        rx.lock()
                            .map_err(|_| std::io::Error::other("poisoned"))?
                            .recv()
                            .map_err(std::io::Error::other)
                    });
                    let Ok((frame, done)) = next else { break };
                    dispatch_on(&node, &frame);
                    let _ = done.send(());
                }
                node.stop();
            });
        });
        tx
    })
}

fn dispatch_on(node: &Node, frame: &[u8]) {
    let _ = node.handle_frame(frame);
}

/// `bytes` as frames from a connected peer, each acted on by a live
/// node (a mailbox `inbox` and a function `m:f` there to be found).
pub fn dispatch(bytes: &[u8]) {
    let mut stream = bytes;
    let mut reader = FrameReader::new();
    while let Ok(Next::Frame(frame)) = reader.next(&mut stream, MAX_FRAME) {
        let frame = reader.buf[frame].to_vec();
        if frame.is_empty() {
            continue;
        }
        let (done_tx, done) = mpsc::sync_channel(1);
        let fed = fed_node().send((frame, done_tx)).is_ok() && done.recv().is_ok();
        assert!(
            fed,
            "smarm_dist::fuzz::dispatch: the fed node is gone (see its panic)"
        );
    }
}

/// Well-formed inputs for each target (its name, the bytes): the seed
/// corpus `fuzz/run.sh` starts from.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    use crate::control::{Control, PASS_THROUGH};
    use crate::pid::Pid;
    use term::{Term, atom, tuple};
    let message = |body: &[u8]| {
        let mut m = (body.len() as u16).to_be_bytes().to_vec();
        m.extend_from_slice(body);
        m
    };
    let name = |challenge: Option<u32>| {
        let mut body = vec![b'N'];
        body.extend_from_slice(&Flags::offered().bits().to_be_bytes());
        if let Some(c) = challenge {
            body.extend_from_slice(&c.to_be_bytes());
        }
        body.extend_from_slice(&7u32.to_be_bytes());
        let peer = b"peer@localhost";
        body.extend_from_slice(&(peer.len() as u16).to_be_bytes());
        body.extend_from_slice(peer);
        body
    };
    let mut reply = vec![b'r', 0, 0, 0, 9];
    reply.extend_from_slice(&handshake::digest(42, "cookie"));
    let mut ack = vec![b'a'];
    ack.extend_from_slice(&handshake::digest(42, "cookie"));
    // Accepting (odd first byte): send_name, then the challenge reply.
    let mut accept = vec![1];
    accept.extend(message(&name(None)));
    accept.extend(message(&reply));
    // Initiating (even): status ok, send_challenge, the ack.
    let mut initiate = vec![0];
    initiate.extend(message(b"sok"));
    initiate.extend(message(&name(Some(42))));
    initiate.extend(message(&ack));
    let a = Pid::new("peer@localhost", 5, 0, 7);
    let b = Pid::new("fuzz@localhost", 1, 0, 1);
    let frame = |control: &Control, payload: Option<&Term>| {
        let mut body = vec![PASS_THROUGH];
        term::encode_into(&control.to_term(), &mut body);
        if let Some(p) = payload {
            term::encode_into(p, &mut body);
        }
        let mut f = (body.len() as u32).to_be_bytes().to_vec();
        f.extend(body);
        f
    };
    let hello = tuple(vec![atom("hello"), Term::from(term::FixInteger::from(1))]);
    let controls = vec![
        frame(
            &Control::RegSend {
                from: a.clone(),
                name: "inbox".into(),
            },
            Some(&hello),
        ),
        frame(
            &Control::Send {
                from: Some(a.clone()),
                to: b.clone(),
            },
            Some(&hello),
        ),
        frame(
            &Control::Link {
                from: a.clone(),
                to: b.clone(),
            },
            None,
        ),
        frame(
            &Control::MonitorP {
                from: a.clone(),
                to: atom("inbox"),
                reference: atom("r"),
            },
            None,
        ),
        frame(
            &Control::SpawnRequest {
                id: atom("req"),
                from: a.clone(),
                group_leader: a.to_term(),
                module: "erpc".into(),
                function: "execute_call".into(),
                arity: 4,
                options: vec![atom("monitor")],
            },
            Some(&Term::from(term::List::from(vec![
                atom("res"),
                atom("m"),
                atom("f"),
                Term::from(term::List::from(vec![hello.clone()])),
            ]))),
        ),
        frame(
            &Control::Traced {
                control: Box::new(Control::RegSend {
                    from: a.clone(),
                    name: "inbox".into(),
                }),
                token: atom("token"),
            },
            Some(&hello),
        ),
        vec![0, 0, 0, 0], // a tick
    ];
    let mut seeds = vec![("handshake", accept), ("handshake", initiate)];
    for c in &controls {
        seeds.push(("frames", c.clone()));
        seeds.push(("dispatch", c.clone()));
    }
    seeds.push(("frames", controls.concat()));
    for t in [
        hello,
        Term::from(term::Map::from(
            [(atom("k"), Term::from(term::Binary::from(vec![1, 2])))]
                .into_iter()
                .collect::<std::collections::HashMap<_, _>>(),
        )),
        Term::from(term::Float { value: 1.5 }),
        Term::from(term::BigInteger::from(1u64 << 40)),
        a.to_term(),
    ] {
        seeds.push(("term", term::encode(&t)));
    }
    // A local fun (NEW_FUN_EXT), as `global` sends its default resolve
    // method: module, old index, old uniq, creator pid, no free variables.
    let mut fun = vec![term::VERSION, 112];
    let mut body = vec![3];
    body.extend_from_slice(&[7; 16]);
    body.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]);
    body.extend_from_slice(&[100, 0, 6]);
    body.extend_from_slice(b"global");
    body.extend_from_slice(&[97, 0, 98, 6, 186, 5, 77]);
    let mut creator = term::encode(&a.to_term());
    creator.remove(0);
    body.extend(creator);
    fun.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    fun.extend(body);
    seeds.push(("term", fun));
    seeds
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(target: &str, bytes: &[u8]) {
        match target {
            "handshake" => handshake(bytes),
            "frames" => frames(bytes),
            "term" => term(bytes),
            "dispatch" => dispatch(bytes),
            other => panic!("no fuzz target {other}"),
        }
    }

    /// Every target takes its seeds, and every crasher kept under
    /// `fuzz/regressions/<target>/` (each fixed when it was found).
    #[test]
    fn fuzz_seeds_and_regressions_pass_every_target() {
        for (target, bytes) in seeds() {
            run(target, &bytes);
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
        for target in ["handshake", "frames", "term", "dispatch"] {
            let Ok(dir) = std::fs::read_dir(root.join(target)) else {
                continue;
            };
            for entry in dir.flatten() {
                if let Ok(bytes) = std::fs::read(entry.path()) {
                    run(target, &bytes);
                }
            }
        }
    }

    /// The seeds reach past the first check of each parser: the
    /// handshake seeds complete a handshake, the frames decode.
    #[test]
    fn the_seeds_are_well_formed() {
        for (target, bytes) in seeds() {
            match target {
                "handshake" if bytes[0] & 1 == 1 => {
                    let mut replay = Replay::new(&bytes[1..]);
                    let peer =
                        handshake::accept(&mut replay, &local(), Duration::from_secs(1), |_| {
                            Status::Ok
                        });
                    // The reply's digest answers a challenge this side drew
                    // at random, so the seed ends at the cookie check.
                    assert!(
                        matches!(peer, Err(handshake::HandshakeError::BadCookie { .. })),
                        "{peer:?}"
                    );
                }
                "handshake" => {
                    let mut replay = Replay::new(&bytes[1..]);
                    let peer = handshake::initiate(
                        &mut replay,
                        &local(),
                        "peer@localhost",
                        Duration::from_secs(1),
                        || true,
                    );
                    assert!(
                        matches!(peer, Err(handshake::HandshakeError::BadCookie { .. })),
                        "{peer:?}"
                    );
                }
                "frames" | "dispatch" => {
                    // One frame, not a tick or several.
                    let len = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
                    if len > 0 && len as usize == bytes.len() - 4 {
                        decode_message(&bytes[4..]).unwrap();
                    }
                }
                "term" => {
                    term::decode(&bytes).unwrap();
                }
                _ => {}
            }
        }
    }

    /// Writes the seed corpus for `fuzz/run.sh`
    /// (`SMARM_FUZZ_SEEDS=<dir>`); does nothing otherwise.
    #[test]
    fn write_fuzz_seeds_when_asked() {
        let Some(dir) = std::env::var_os("SMARM_FUZZ_SEEDS") else {
            return;
        };
        for (i, (target, bytes)) in seeds().into_iter().enumerate() {
            let dir = std::path::Path::new(&dir).join(target);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(format!("seed-{i}")), bytes).unwrap();
        }
    }
}
