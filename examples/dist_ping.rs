//! A smarm node to talk to from an Erlang shell.
//!
//! ```sh
//! cargo run --features dist --example dist_ping          # shop@localhost, cookie "secret"
//! erl -sname erl@localhost -setcookie secret -start_epmd false
//! ```
//!
//! In the shell: `{inbox, 'shop@localhost'} ! {self(), ping}.` then
//! `flush().` shows `{pong,'shop@localhost'}`; any other `{Pid, Term}` is
//! echoed back as `{echo, Term}`, and `stop` ends the node.
//! `erpc:call('shop@localhost', shop, price, [apple, 2])` answers `6`
//! (`rpc:call` too), and a fruit the shop does not sell throws
//! `{unknown_item, Fruit}`. The node
//! serves EPMD itself when none runs (so `-start_epmd false` finds it);
//! `ERL_EPMD_PORT` moves both to another port.
//!
//! Over TLS (the guide's "TLS" makes the files):
//!
//! ```sh
//! SMARM_TLS_DIR=certs cargo run --features dist-tls --example dist_ping   # certs/node.pem, node.key, ca.pem
//! erl -sname erl@localhost -setcookie secret -start_epmd false \
//!     -proto_dist inet_tls -ssl_dist_optfile ssl.conf
//! ```

use smarm::dist::term::{Term, atom, tuple};
use smarm::dist::{Node, NodeEvent, Pid, Raise};

fn main() {
    let name = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "shop@localhost".into());
    let cookie = std::env::args().nth(2).unwrap_or_else(|| "secret".into());
    smarm::run(move || {
        let builder = Node::builder(&name).cookie(&cookie);
        #[cfg(feature = "dist-tls")]
        let builder = match std::env::var_os("SMARM_TLS_DIR") {
            Some(dir) => {
                let dir = std::path::PathBuf::from(dir);
                let files = ["node.pem", "node.key", "ca.pem"].map(|f| dir.join(f));
                match smarm::dist::TlsConfig::from_pem_files(&files[0], &files[1], &files[2]) {
                    Ok(tls) => builder.tls(tls),
                    Err(e) => {
                        eprintln!("{e}");
                        std::process::exit(1);
                    }
                }
            }
            None => builder,
        };
        let node = match builder.start() {
            Ok(node) => node,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        };
        println!(
            "{} up on port {} ({}); send to {{inbox, '{}'}}",
            node.name(),
            node.port(),
            if node.serves_epmd() {
                "serving EPMD"
            } else {
                "registered with EPMD"
            },
            node.name()
        );
        node.export_typed(
            "shop",
            "price",
            |(fruit, qty): (smarm::dist::term::Atom, u32)| match fruit.name.as_str() {
                "apple" => Ok(qty * 3),
                "pear" => Ok(qty * 4),
                _ => Err(Raise::throw((atom("unknown_item"), Term::from(fruit)))),
            },
        );
        let events = node.monitor_nodes();
        smarm::spawn(move || {
            while let Ok(e) = events.recv() {
                match e {
                    NodeEvent::Up(n) => println!("nodeup {n}"),
                    NodeEvent::Down(n) => println!("nodedown {n}"),
                }
            }
        });
        let inbox = match node.register("inbox") {
            Ok(inbox) => inbox,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        };
        while let Ok(msg) = inbox.recv() {
            println!("got {}", msg.term);
            if msg.term == atom("stop") {
                break;
            }
            let Term::Tuple(t) = &msg.term else { continue };
            let [from, what] = t.elements.as_slice() else {
                continue;
            };
            let Some(from) = Pid::from_term(from) else {
                continue;
            };
            let reply = if *what == atom("ping") {
                tuple(vec![atom("pong"), atom(node.name())])
            } else {
                tuple(vec![atom("echo"), what.clone()])
            };
            if let Err(e) = inbox.send(&from, reply) {
                eprintln!("reply to {from} failed: {e}");
            }
        }
        node.stop();
    });
}
