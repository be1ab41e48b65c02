//! An HTTP JSON API on axum whose handlers call a smarm supervision tree.
//!
//! The tree (one_for_one, started in this order, stopped in reverse):
//!
//! - `upstream`: a second local HTTP service (axum, in an actor) that
//!   hands out quotes;
//! - `store`: a gen_server over SQLite through sqlx (a file, so the items
//!   outlive a restart);
//! - `quotes`: a gen_server that asks `upstream` with reqwest;
//! - `front`: the public API, axum served from an actor. Its handlers run
//!   on the tokio threads and call the servers with `call_async`, looking
//!   them up by name per request, so a restarted server is found again.
//!
//! | request | what it does |
//! | --- | --- |
//! | `GET /items` | the stored items, as JSON |
//! | `POST /items` `{"name": ...}` | stores one: `201` and the item |
//! | `GET /quote` | a quote from the upstream service, through `quotes` |
//! | `POST /crash` | makes the store crash mid-call: `500`, and the supervisor restarts it |
//! | `GET /slow?ms=N` | answers after N ms (to watch a drain) |
//!
//! On `SIGTERM` or `SIGINT` the application's `before_stop` hook tells
//! the front to stop accepting and waits until its in-flight requests are
//! answered; then the tree stops in order. Settings come from the
//! environment: `HTTP_API_ADDR` (default `127.0.0.1:3000`; port 0 picks
//! one), `HTTP_API_DB` (default a file in the temp directory). It prints
//! `listening on <addr>` and, once the tree is up, `ready`.

use axum::extract::{Json, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use smarm::Reply;
use smarm::application::{AppExit, Application};
use smarm::future::block_on;
use smarm::gen_server::{self, CallError, Ctx, Flow, GenServer, InitError, ServerName, StopReason};
use smarm::runtime::{Config, RuntimeHandle};
use smarm::supervisor::{self, ChildSpec, Restart, Strategy, SupFlags};
use std::io::Write;
use std::process::{ExitCode, Termination};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One stored item.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, PartialEq)]
struct Item {
    id: i64,
    name: String,
}

#[derive(serde::Deserialize)]
struct NewItem {
    name: String,
}

fn say(line: &str) {
    println!("{line}");
    let _ = std::io::stdout().flush();
}

// ----- the store: a gen_server over SQLite -----

struct Store {
    db: sqlx::SqlitePool,
}

enum StoreCall {
    List,
    Add(String),
    Crash,
}

enum StoreReply {
    Items(Vec<Item>),
    Added(Item),
}

impl GenServer for Store {
    type Args = String;
    type Call = StoreCall;
    type Reply = Result<StoreReply, String>;
    type Cast = ();
    type Info = ();

    fn init(path: String, _: &mut Ctx<Self>) -> Result<Self, InitError> {
        let opened = block_on(async move {
            let options = sqlx::sqlite::SqliteConnectOptions::new()
                .filename(path)
                .create_if_missing(true);
            let db = sqlx::SqlitePool::connect_with(options).await?;
            sqlx::query(
                "create table if not exists items (id integer primary key, name text not null)",
            )
            .execute(&db)
            .await?;
            Ok::<_, sqlx::Error>(db)
        });
        match opened {
            Ok(db) => Ok(Store { db }),
            Err(e) => Err(format!("the store's database: {e}").into()),
        }
    }

    fn handle_call(
        &mut self,
        call: StoreCall,
        reply: Reply<Self::Reply>,
        _: &mut Ctx<Self>,
    ) -> Flow {
        let db = self.db.clone();
        let answer = match call {
            StoreCall::List => block_on(async move {
                let rows: Vec<(i64, String)> =
                    sqlx::query_as("select id, name from items order by id")
                        .fetch_all(&db)
                        .await?;
                Ok(StoreReply::Items(
                    rows.into_iter()
                        .map(|(id, name)| Item { id, name })
                        .collect(),
                ))
            }),
            StoreCall::Add(name) => block_on(async move {
                let id = sqlx::query("insert into items (name) values (?)")
                    .bind(&name)
                    .execute(&db)
                    .await?
                    .last_insert_rowid();
                Ok(StoreReply::Added(Item { id, name }))
            }),
            StoreCall::Crash => panic!("the store was asked to crash"),
        };
        reply.reply(answer.map_err(|e: sqlx::Error| e.to_string()));
        Flow::Continue
    }

    fn terminate(&mut self, _: &StopReason, _: &mut Ctx<Self>) {
        let db = self.db.clone();
        block_on(async move { db.close().await });
        say("store stopped");
    }
}

const STORE: ServerName<Store> = ServerName::new("store");

// ----- quotes: a gen_server that calls the upstream service -----

struct Quotes {
    client: reqwest::Client,
    url: String,
}

impl GenServer for Quotes {
    type Args = String;
    type Call = ();
    type Reply = Result<String, String>;
    type Cast = ();
    type Info = ();

    fn init(url: String, _: &mut Ctx<Self>) -> Result<Self, InitError> {
        Ok(Quotes {
            client: reqwest::Client::new(),
            url,
        })
    }

    /// Each call's upstream request runs in an actor of its own, which
    /// answers the call (a deferred reply, as an OTP server hands slow
    /// work to a worker): the server takes the next call meanwhile, so
    /// calls are not serialised behind each other's round trips.
    fn handle_call(&mut self, _: (), reply: Reply<Self::Reply>, _: &mut Ctx<Self>) -> Flow {
        let request = self.client.get(&self.url).timeout(Duration::from_secs(2));
        smarm::spawn(move || {
            let answer = block_on(async move {
                let resp = request.send().await?.error_for_status()?;
                resp.text().await
            });
            reply.reply(answer.map_err(|e| e.to_string()));
        });
        Flow::Continue
    }

    fn terminate(&mut self, _: &StopReason, _: &mut Ctx<Self>) {
        say("quotes stopped");
    }
}

const QUOTES: ServerName<Quotes> = ServerName::new("quotes");

// ----- the HTTP front -----

/// Tells the front to stop accepting, and learns when it has drained.
/// It holds the front's listening socket, so that once drained the
/// socket closes and a new connection is refused, not queued.
#[derive(Clone)]
struct Drain {
    listener: Arc<Mutex<Option<std::net::TcpListener>>>,
    stop: Arc<tokio::sync::Notify>,
    drained: Arc<(Mutex<bool>, std::sync::Condvar)>,
}

impl Drain {
    fn new(listener: std::net::TcpListener) -> Self {
        Drain {
            listener: Arc::new(Mutex::new(Some(listener))),
            stop: Arc::default(),
            drained: Arc::default(),
        }
    }

    /// A handle on the front's socket for one incarnation of the front.
    fn listener(&self) -> std::io::Result<std::net::TcpListener> {
        match &*self.listener.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(l) => l.try_clone(),
            None => Err(std::io::Error::other("the front was drained")),
        }
    }

    /// The `before_stop` hook: ask the front to stop accepting, and wait
    /// (parking only this actor) until its in-flight requests are done.
    fn drain(&self) {
        say("drain begins");
        self.stop.notify_one();
        let drained = self.drained.clone();
        smarm::io::block_on_io(move || {
            let (done, cv) = &*drained;
            let mut done = done.lock().unwrap_or_else(|e| e.into_inner());
            while !*done {
                done = cv.wait(done).unwrap_or_else(|e| e.into_inner());
            }
        });
        // The serving incarnation dropped its handle on stopping; this
        // was the last one.
        drop(
            self.listener
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        );
        say("front drained");
    }

    fn mark_drained(&self) {
        let (done, cv) = &*self.drained;
        *done.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
    }
}

/// A call's failure as an HTTP status: a server between incarnations is
/// unavailable, one that went down mid-call failed the request.
fn status_of(e: CallError) -> StatusCode {
    match e {
        CallError::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

async fn store_call(rt: &RuntimeHandle, call: StoreCall) -> Result<StoreReply, StatusCode> {
    let store = gen_server::whereis_server_in(rt, STORE).ok_or(StatusCode::SERVICE_UNAVAILABLE)?;
    match store.call_async(call).await {
        Ok(Ok(reply)) => Ok(reply),
        Ok(Err(_db)) => Err(StatusCode::INTERNAL_SERVER_ERROR),
        Err(e) => Err(status_of(e)),
    }
}

async fn list(State(rt): State<RuntimeHandle>) -> Result<Json<Vec<Item>>, StatusCode> {
    match store_call(&rt, StoreCall::List).await? {
        StoreReply::Items(items) => Ok(Json(items)),
        StoreReply::Added(_) => Err(StatusCode::INTERNAL_SERVER_ERROR),
    }
}

async fn add(
    State(rt): State<RuntimeHandle>,
    Json(new): Json<NewItem>,
) -> Result<(StatusCode, Json<Item>), StatusCode> {
    match store_call(&rt, StoreCall::Add(new.name)).await? {
        StoreReply::Added(item) => Ok((StatusCode::CREATED, Json(item))),
        StoreReply::Items(_) => Err(StatusCode::INTERNAL_SERVER_ERROR),
    }
}

async fn crash(State(rt): State<RuntimeHandle>) -> StatusCode {
    match store_call(&rt, StoreCall::Crash).await {
        Ok(_) => StatusCode::OK,
        Err(status) => status,
    }
}

async fn quote(State(rt): State<RuntimeHandle>) -> Result<Json<serde_json::Value>, StatusCode> {
    let quotes =
        gen_server::whereis_server_in(&rt, QUOTES).ok_or(StatusCode::SERVICE_UNAVAILABLE)?;
    match quotes.call_async(()).await {
        Ok(Ok(text)) => Ok(Json(serde_json::json!({ "quote": text }))),
        Ok(Err(_upstream)) => Err(StatusCode::BAD_GATEWAY),
        Err(e) => Err(status_of(e)),
    }
}

#[derive(serde::Deserialize)]
struct Slow {
    ms: u64,
}

async fn slow(Query(q): Query<Slow>) -> &'static str {
    tokio::time::sleep(Duration::from_millis(q.ms)).await;
    "slow done"
}

/// Serve `router` on (a clone of) `listener` from this actor until
/// `stop` is notified, then until its in-flight requests are answered.
fn serve(
    listener: std::io::Result<std::net::TcpListener>,
    router: axum::Router,
    stop: Option<Drain>,
) {
    let listener = listener.and_then(tokio::net::TcpListener::from_std);
    let listener = match listener {
        Ok(l) => l,
        Err(e) => panic!("the listening socket: {e}"),
    };
    let stopping = stop.clone();
    let served = block_on(async move {
        let server = axum::serve(listener, router);
        match stopping {
            Some(drain) => {
                server
                    .with_graceful_shutdown(async move { drain.stop.notified().await })
                    .await
            }
            None => server.await,
        }
    });
    if let Some(drain) = stop {
        drain.mark_drained();
    }
    if let Err(e) = served {
        panic!("serving HTTP: {e}");
    }
}

fn main() -> ExitCode {
    let addr = std::env::var("HTTP_API_ADDR").unwrap_or_else(|_| "127.0.0.1:3000".into());
    let db = std::env::var("HTTP_API_DB").unwrap_or_else(|_| {
        let path = std::env::temp_dir().join("smarm-http-api.sqlite");
        path.to_string_lossy().into_owned()
    });
    let listen = |addr: &str| {
        let l = std::net::TcpListener::bind(addr)?;
        l.set_nonblocking(true)?;
        let at = l.local_addr()?;
        Ok::<_, std::io::Error>((l, at))
    };
    let ((front, front_addr), (upstream, upstream_addr)) =
        match (listen(&addr), listen("127.0.0.1:0")) {
            (Ok(f), Ok(u)) => (f, u),
            (Err(e), _) | (_, Err(e)) => {
                eprintln!("http_api: cannot listen on {addr}: {e}");
                return ExitCode::from(2);
            }
        };
    say(&format!("listening on {front_addr}"));
    let drain = Drain::new(front);
    let hook = drain.clone();
    // The HTTP front's connections, reqwest's and sqlx's IO run on the
    // tokio threads beside the schedulers: as many as cores, as a tokio
    // service would have.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let runtime = match smarm::runtime::init(Config::default()).with_tokio_threads(cores) {
        Ok(rt) => rt,
        Err(e) => panic!("the tokio runtime: {e}"),
    };
    let exit: AppExit = Application::new()
        .runtime(runtime)
        .shutdown_timeout(Duration::from_secs(10))
        .before_stop(move || hook.drain())
        .run(move || {
            let rt = smarm::runtime::current();
            let upstream_router = axum::Router::new().route(
                "/quote",
                get(|| async { "The best way to predict the future is to invent it." }),
            );
            let front_router = axum::Router::new()
                .route("/items", get(list).post(add))
                .route("/quote", get(quote))
                .route("/crash", post(crash))
                .route("/slow", get(slow))
                .with_state(rt);
            let top = supervisor::start(
                SupFlags::new(Strategy::OneForOne).intensity(100, Duration::from_secs(10)),
                vec![
                    ChildSpec::actor("upstream", move || {
                        serve(upstream.try_clone(), upstream_router.clone(), None)
                    }),
                    ChildSpec::named_server::<Store>("store", STORE, move || db.clone()),
                    ChildSpec::named_server::<Quotes>("quotes", QUOTES, move || {
                        format!("http://{upstream_addr}/quote")
                    }),
                    // Transient: it returns only once drained, and a
                    // drained front stays down.
                    ChildSpec::actor("front", move || {
                        serve(drain.listener(), front_router.clone(), Some(drain.clone()))
                    })
                    .restart(Restart::Transient),
                ],
            );
            say("ready");
            top
        });
    exit.report()
}
