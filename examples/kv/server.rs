//! The kv server's tree: options, the start function, the acceptor.

use crate::{conn, shard};
use smarm::gen_server::StartError;
use smarm::net::{TcpListener, TcpStream};
use smarm::supervisor::{
    self, ChildSpec, DynamicName, DynamicSpec, DynamicSupervisor, StartChildError, Strategy,
    SupFlags, SupervisorRef,
};
use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// The connection supervisor's name.
const CONNS: DynamicName<TcpStream> = DynamicName::new("kv-connections");

/// Command-line options.
#[derive(Debug, Clone)]
pub struct Options {
    /// The address to listen on.
    pub bind: String,
    /// The port (0: any free port; the chosen one is printed).
    pub port: u16,
    /// How many shard servers split the keyspace.
    pub shards: usize,
    /// Most clients at once; more are refused with an error.
    pub max_clients: usize,
    /// Scheduler threads (default: one per core).
    pub threads: Option<usize>,
    /// Accept `DEBUG CRASH-SHARD n` (for the fault test).
    pub debug: bool,
    /// Where the acceptor reports the address it listens on (each time it
    /// binds), besides printing it.
    pub announce: Option<smarm::Sender<SocketAddr>>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            bind: "127.0.0.1".into(),
            port: 6379,
            shards: 8,
            max_clients: 10_000,
            threads: None,
            debug: false,
            announce: None,
        }
    }
}

const USAGE: &str = "usage: kv [--port N] [--bind ADDR] [--shards N] [--max-clients N] \
                     [--threads N] [--enable-debug]";

/// Parse `args` (without the program name).
pub fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
    let mut opts = Options::default();
    let mut args = args.into_iter();
    while let Some(flag) = args.next() {
        let mut value = |what: &str| args.next().ok_or_else(|| format!("{flag} needs {what}"));
        match flag.as_str() {
            "--port" => opts.port = number(&value("a port")?, &flag)?,
            "--bind" => opts.bind = value("an address")?,
            "--shards" => opts.shards = number(&value("a count")?, &flag)?,
            "--max-clients" => opts.max_clients = number(&value("a count")?, &flag)?,
            "--threads" => opts.threads = Some(number(&value("a count")?, &flag)?),
            "--enable-debug" => opts.debug = true,
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown option {other}\n{USAGE}")),
        }
    }
    if opts.shards == 0 {
        return Err("--shards must be at least 1".into());
    }
    Ok(opts)
}

fn number<T: std::str::FromStr>(text: &str, flag: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("{flag}: {text:?} is not a valid number"))
}

/// Start the tree (the application's start function).
pub fn start(opts: Options) -> Result<SupervisorRef, StartError> {
    let shard_names: Vec<_> = (0..opts.shards).map(shard::name).collect();
    let shared = Arc::new(conn::Shared {
        shards: shard_names.clone(),
        debug: opts.debug,
        clients: Box::new(|| {
            DynamicSupervisor::whereis(CONNS)
                .and_then(|c| c.count_children().ok())
                .unwrap_or(0)
        }),
    });
    let max_clients = opts.max_clients;
    let addr = format!("{}:{}", opts.bind, opts.port);
    let announce = opts.announce.clone();
    supervisor::start(
        SupFlags::new(Strategy::RestForOne).intensity(10, Duration::from_secs(10)),
        vec![
            ChildSpec::supervisor(
                "shards",
                // A shard that keeps crashing is restarted many times
                // before the tree gives up: its keys are lost, the others'
                // are not.
                SupFlags::new(Strategy::OneForOne).intensity(1000, Duration::from_secs(10)),
                move || {
                    shard_names
                        .iter()
                        .enumerate()
                        .map(|(i, name)| {
                            ChildSpec::named_server::<shard::Shard>(
                                format!("shard-{i}"),
                                *name,
                                || (),
                            )
                        })
                        .collect()
                },
            ),
            ChildSpec::dynamic_supervisor("connections", move || {
                let shared = shared.clone();
                DynamicSpec::actor(move |stream| conn::serve(stream, shared.clone()))
                    .max_children(max_clients)
                    .name(CONNS)
            }),
            ChildSpec::actor("acceptor", move || accept_loop(&addr, announce.as_ref())),
        ],
    )
}

/// Bind `addr` and hand every accepted connection to the connection
/// supervisor, for ever. Out of file descriptors: back off and go on.
fn accept_loop(addr: &str, announce: Option<&smarm::Sender<SocketAddr>>) {
    let listener = match TcpListener::bind(addr) {
        Ok(listener) => listener,
        Err(e) => panic!("kv: cannot listen on {addr}: {e}"),
    };
    let local: Option<SocketAddr> = listener.local_addr().ok();
    if let Some(local) = local {
        println!("kv: listening on {local}");
        let _ = std::io::stdout().flush();
        if let Some(announce) = announce {
            let _ = announce.send(local);
        }
    }
    let Some(conns) = DynamicSupervisor::whereis(CONNS) else {
        panic!("kv: the connection supervisor is not running");
    };
    loop {
        match listener.accept() {
            Ok((stream, _)) => match conns.start_child(stream) {
                Ok(_) => {}
                Err(StartChildError::MaxChildren { arg: stream, .. }) => {
                    let _ = (&stream).write_all(b"-ERR max number of clients reached\r\n");
                }
                Err(e) => panic!("kv: cannot start a connection: {e}"),
            },
            Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                smarm::sleep(Duration::from_millis(50));
            }
            Err(e) => eprintln!("kv: accept failed: {e}"),
        }
    }
}
