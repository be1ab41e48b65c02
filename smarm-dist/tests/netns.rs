//! Three hosts on one machine: two smarm nodes and an Erlang node, each in
//! a network namespace of its own (its own address, its own EPMD, its own
//! `/etc/hosts`), joined by veth pairs to a bridge, speaking TLS. Taking
//! the Erlang host's link down partitions it: both sides see `nodedown`,
//! monitors fire with `noconnection`, pg members and global names of the
//! other side go. With the link back, a ping from each side reconnects
//! and the pg members and global names converge again.
//!
//! Needs root (`ip netns`), iproute2 and `erl` with ssl, so it is ignored
//! by default: `cargo test -p smarm-dist --features tls --test netns --
//! --ignored`, as `.ci/run` does.
#![cfg(feature = "tls")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::dist::term::atom;
use smarm::dist::{Node, NodeEvent};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use support::certs::{self, Ca};

const LONG: Duration = Duration::from_secs(60);
const ROLE: &str = "SMARM_NETNS_ROLE";
const CERTS: &str = "SMARM_NETNS_CERTS";
const HOSTS: [&str; 3] = ["hosta", "hostb", "hostc"];
/// Ticks every second: a silent peer is down within about 4 s.
const TICKTIME: Duration = Duration::from_secs(4);

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {args:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The namespaces: `<tag>sw` holds the bridge, `<tag>a` .. `<tag>c` the
/// hosts, 10.77.0.1 to .3, named hosta to hostc in each host's
/// `/etc/hosts`. Removed when dropped.
struct Net {
    tag: String,
}

impl Net {
    fn up() -> Result<Net, String> {
        let net = Net {
            tag: format!("sm{}", std::process::id() % 100_000),
        };
        let sw = format!("{}sw", net.tag);
        ip(&["netns", "add", &sw])?;
        ip(&["-n", &sw, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &sw, "link", "set", "br0", "up"])?;
        let hosts: String = HOSTS
            .iter()
            .enumerate()
            .map(|(i, h)| format!("10.77.0.{} {h}\n", i + 1))
            .collect();
        for (i, h) in ["a", "b", "c"].iter().enumerate() {
            let ns = net.ns(h);
            let (inner, outer) = (format!("{ns}0"), format!("{ns}1"));
            ip(&["netns", "add", &ns])?;
            ip(&[
                "link", "add", &inner, "netns", &ns, "type", "veth", "peer", "name", &outer,
                "netns", &sw,
            ])?;
            let addr = format!("10.77.0.{}/24", i + 1);
            ip(&["-n", &ns, "addr", "add", &addr, "dev", &inner])?;
            ip(&["-n", &ns, "link", "set", &inner, "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
            ip(&["-n", &sw, "link", "set", &outer, "master", "br0"])?;
            ip(&["-n", &sw, "link", "set", &outer, "up"])?;
            let etc = format!("/etc/netns/{ns}");
            std::fs::create_dir_all(&etc).map_err(|e| format!("{etc}: {e}"))?;
            std::fs::write(
                format!("{etc}/hosts"),
                format!("127.0.0.1 localhost\n{hosts}"),
            )
            .map_err(|e| format!("{etc}/hosts: {e}"))?;
        }
        Ok(net)
    }

    fn ns(&self, host: &str) -> String {
        format!("{}{host}", self.tag)
    }

    /// Take `host`'s link to the bridge down (`false`) or up.
    fn link(&self, host: &str, up: bool) {
        let outer = format!("{}1", self.ns(host));
        let state = if up { "up" } else { "down" };
        ip(&[
            "-n",
            &format!("{}sw", self.tag),
            "link",
            "set",
            &outer,
            state,
        ])
        .unwrap();
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for h in ["a", "b", "c", "sw"] {
            let ns = self.ns(h);
            let _ = ip(&["netns", "del", &ns]);
            let _ = std::fs::remove_dir_all(format!("/etc/netns/{ns}"));
        }
    }
}

/// A process on one of the hosts: its stdout lines, its stdin.
struct Host {
    name: &'static str,
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Host {
    fn start(name: &'static str, mut cmd: Command) -> Host {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("start {name}: {e}"));
        let (stdin, out) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if std::env::var_os("ERL_ECHO").is_some() {
                    eprintln!("{name}| {line}");
                }
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Host {
            name,
            child,
            stdin,
            lines,
        }
    }

    /// Wait for the event `what` (a line `EVENT what`), failing on
    /// another `EVENT` line or after `within`.
    fn expect(&self, what: &str, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("{}: no `{what}` within {within:?}", self.name));
            // The test harness may have printed a test name before it.
            if let Some((_, event)) = line.split_once("EVENT ") {
                assert_eq!(event, what, "{}: events out of order", self.name);
                return;
            }
        }
    }

    fn tell(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The Erlang host's script: the same events as a smarm host prints.
const ERLANG: &str = "\
    {ok, _} = pg:start_link(), ok = pg:join(g, self()), register(cproc, self()), \
    yes = global:register_name(c_name, self()), \
    Ev = fun(E) -> io:format(\"EVENT ~s~n\", [E]) end, \
    Ping = fun P(_, 0) -> Ev(\"unreachable\"); \
               P(N, K) -> case net_adm:ping(N) of pong -> ok; pang -> timer:sleep(200), P(N, K - 1) end end, \
    Sees = fun S(Want, 0) -> io:format(\"EVENT never ~p: ~p ~p~n\", [Want, pg:get_members(g), global:registered_names()]); \
               S(Want, K) -> case length(pg:get_members(g)) =:= Want andalso length(global:registered_names()) =:= Want of \
                   true -> ok; false -> timer:sleep(50), S(Want, K - 1) end end, \
    ok = net_kernel:monitor_nodes(true), \
    Ping('a@hosta', 150), Ping('b@hostb', 150), \
    Sees(3, 1200), Ev(\"sees3\"), \
    receive {nodedown, _} -> ok end, receive {nodedown, _} -> ok end, Ev(\"down\"), \
    Sees(1, 1200), Ev(\"alone\"), \
    \"heal\\n\" = io:get_line(\"\"), \
    Ping('a@hosta', 150), Ping('b@hostb', 150), Ev(\"reconnected\"), \
    Sees(3, 1200), Ev(\"sees3\"), \
    io:get_line(\"\"), halt().";

/// Two smarm hosts and an Erlang host partitioned and healed (module
/// docs).
#[test]
#[ignore = "needs root for ip netns, iproute2, and erl with ssl (apt-get install iproute2 erlang-base erlang-ssl); run: cargo test -p smarm-dist --features tls --test netns -- --ignored"]
fn a_partition_between_hosts_heals_and_the_cluster_converges() {
    support::require_erl();
    let net = Net::up().unwrap_or_else(|e| {
        panic!("this test makes network namespaces and needs root and iproute2: {e}")
    });
    let dir = certs::dir("netns");
    let ca = Ca::new("smarm test CA");
    let ids: Vec<_> = HOSTS.iter().map(|h| ca.identity(&dir, h, h, &ca)).collect();
    let optfile = ids[2].erlang_optfile(&dir, "c.conf");
    let exe = std::env::current_exe().unwrap();
    let smarm_host = |role: &'static str| {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &net.ns(role)])
            .arg(&exe)
            .args([
                "--exact",
                "smarm_host",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(ROLE, role)
            .env(CERTS, &dir);
        Host::start(role, cmd)
    };
    let mut erl_cmd = Command::new("ip");
    erl_cmd.args(["netns", "exec", &net.ns("c")]).args([
        "erl",
        "-sname",
        "c@hostc",
        "-setcookie",
        "netns",
        "-proto_dist",
        "inet_tls",
        "-ssl_dist_optfile",
        optfile.to_str().unwrap(),
        "-kernel",
        "net_ticktime",
        "4",
        "-noshell",
        "-eval",
        ERLANG,
    ]);
    let mut c = Host::start("c", erl_cmd);
    let mut a = smarm_host("a");
    let mut b = smarm_host("b");
    for h in [&a, &b, &c] {
        h.expect("sees3", LONG);
    }
    // The partition: the Erlang host's link goes down.
    let cut = Instant::now();
    net.link("c", false);
    for h in [&a, &b] {
        h.expect("down", LONG);
        h.expect("noconnection", LONG);
        h.expect("alone", LONG);
    }
    c.expect("down", LONG);
    c.expect("alone", LONG);
    let seen_down = cut.elapsed();
    assert!(
        seen_down < TICKTIME * 5,
        "the partition took {seen_down:?} to be seen"
    );
    // Healed: a ping from each side reconnects.
    net.link("c", true);
    let healed = Instant::now();
    for h in [&mut a, &mut b, &mut c] {
        h.tell("heal");
    }
    for h in [&a, &b, &c] {
        h.expect("reconnected", LONG);
    }
    let reconnected = Instant::now();
    for h in [&a, &b, &c] {
        h.expect("sees3", LONG);
    }
    let converged = reconnected.elapsed();
    assert!(
        converged < Duration::from_secs(10),
        "pg and global took {converged:?} to converge"
    );
    eprintln!(
        "partition seen by all in {seen_down:?}; after the heal, reconnected and converged in {:?} \
         ({converged:?} after the last reconnect)",
        healed.elapsed()
    );
    for h in [&mut a, &mut b, &mut c] {
        h.tell("stop");
    }
    for h in [&mut a, &mut b] {
        assert!(h.child.wait().unwrap().success(), "{} failed", h.name);
    }
    drop(net);
}

/// One smarm host of the test above, run in its namespace as a process of
/// its own (a namespace belongs to a process, and a node's sockets are
/// opened by every scheduler thread).
#[test]
fn smarm_host() {
    let Ok(role) = std::env::var(ROLE) else {
        return; // run only as a child of the test above
    };
    let dir = std::path::PathBuf::from(std::env::var(CERTS).unwrap());
    let host = format!("host{role}");
    let me = format!("{role}@{host}");
    let others: Vec<String> = ["a@hosta", "b@hostb", "c@hostc"]
        .iter()
        .filter(|n| **n != me)
        .map(|n| n.to_string())
        .collect();
    let (lines_tx, lines) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    smarm::run(move || {
        let event = |e: &str| {
            println!("EVENT {e}");
        };
        let wait_line = |want: &str| loop {
            match lines.try_recv() {
                Ok(l) if l == want => return,
                Ok(_) => {}
                Err(mpsc::TryRecvError::Empty) => smarm::sleep(Duration::from_millis(20)),
                Err(e) => panic!("stdin closed: {e}"),
            }
        };
        let eventually = |what: &str, cond: &dyn Fn() -> bool, state: &dyn Fn() -> String| {
            let deadline = Instant::now() + LONG;
            while !cond() {
                if Instant::now() > deadline {
                    event(&format!("never {what}: {}", state()));
                    panic!("never {what}: {}", state());
                }
                smarm::sleep(Duration::from_millis(20));
            }
        };
        let tls = smarm::dist::TlsConfig::from_pem_files(
            dir.join(format!("{host}.pem")),
            dir.join(format!("{host}.key")),
            dir.join(format!("{host}-ca.pem")),
        )
        .unwrap();
        let node = Node::builder(&me)
            .cookie("netns")
            .ticktime(TICKTIME)
            .tls(tls)
            .start()
            .unwrap();
        let events = node.monitor_nodes();
        let (pg, global) = (node.pg().unwrap(), node.global().unwrap());
        let member = node.mailbox();
        pg.join(atom("g"), member.pid()).unwrap();
        global
            .register_name(atom(&format!("{role}_name")), member.pid())
            .unwrap();
        let ping_all = || {
            for peer in &others {
                eventually(&format!("ping {peer}"), &|| node.ping(peer), &|| {
                    format!("{:?}", node.nodes())
                });
            }
        };
        let names = ["a_name", "b_name", "c_name"];
        let sees = |n: usize| {
            pg.members(atom("g")).len() == n
                && names
                    .iter()
                    .filter(|x| global.whereis_name(atom(x)).is_some())
                    .count()
                    == n
        };
        // What the node sees, for a failure's message.
        let seen = || {
            let held: Vec<_> = names
                .iter()
                .map(|x| (*x, global.whereis_name(atom(x))))
                .collect();
            format!(
                "members {:?}, names {held:?}, nodes {:?}",
                pg.members(atom("g")),
                node.nodes()
            )
        };
        ping_all();
        eventually("three members and names", &|| sees(3), &seen);
        let watcher = node.mailbox();
        let watch = watcher.monitor(("cproc", "c@hostc"));
        event("sees3");
        // The partition.
        loop {
            if let Ok(NodeEvent::Down(n)) = events.recv_timeout(LONG)
                && n == "c@hostc"
            {
                break;
            }
        }
        event("down");
        let down = watcher.recv_timeout(LONG).unwrap().term;
        let smarm::dist::term::Term::Tuple(t) = &down else {
            panic!("{down:?}")
        };
        assert_eq!(t.elements[1], watch);
        assert_eq!(t.elements[4], atom("noconnection"));
        event("noconnection");
        eventually("the other side's member and name gone", &|| sees(2), &seen);
        event("alone");
        // Healed.
        wait_line("heal");
        ping_all();
        event("reconnected");
        eventually("three members and names again", &|| sees(3), &seen);
        event("sees3");
        wait_line("stop");
        node.stop();
    });
}
