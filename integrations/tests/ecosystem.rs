//! The async crates Rust services are built from, used from smarm actors
//! through `smarm::future::block_on` (feature `tokio`), and calling actors
//! back: a hyper server inside actors with its default settings, reqwest
//! from 100 actors, an axum API whose handlers call a gen_server, an sqlx
//! SQLite query, a tonic unary call from an actor.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

use smarm::Reply;
use smarm::future::block_on;
use smarm::gen_server::{self, Ctx, Flow, GenServer, InitError};
use smarm::runtime::{Config, init};
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// hyper's http1 server, one actor per connection, with hyper's default
/// settings (no `half_close` workaround), answering reqwest GETs made from
/// 100 actors at once.
#[test]
fn reqwest_from_100_actors_against_a_hyper_server_inside_actors() {
    init(Config::exact(2)).run(|| {
        let listener =
            block_on(async { tokio::net::TcpListener::bind("127.0.0.1:0").await }).unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let c = connections.clone();
        let server = smarm::spawn(move || {
            loop {
                let (stream, _) = block_on(async { listener.accept().await }).unwrap();
                c.fetch_add(1, Ordering::SeqCst);
                smarm::spawn(move || {
                    let service = hyper::service::service_fn(|req: hyper::Request<_>| async move {
                        let body = format!("hello {}", req.uri().path());
                        Ok::<_, Infallible>(hyper::Response::new(http_body_util::Full::new(
                            hyper::body::Bytes::from(body),
                        )))
                    });
                    let conn = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
                    let _ = block_on(conn); // until the client closes
                });
            }
        });
        let client = reqwest::Client::new();
        let gets: Vec<_> = (0..100)
            .map(|i| {
                let client = client.clone();
                smarm::spawn(move || {
                    block_on(async move {
                        let resp = client.get(format!("http://{addr}/{i}")).send().await?;
                        assert_eq!(resp.status(), 200);
                        resp.text().await
                    })
                })
            })
            .collect();
        for (i, get) in gets.into_iter().enumerate() {
            assert_eq!(get.join().unwrap().unwrap(), format!("hello /{i}"));
        }
        assert!(connections.load(Ordering::SeqCst) >= 1);
        drop(client); // its pooled connections close, and their actors end
        smarm::request_stop(server.pid()); // the accept loop's future is dropped
        // The loop never returns (`!`): it joins with how it ended.
        let ended = server.join().unwrap_err();
        assert_eq!(ended.reason(), smarm::DownReason::Stopped);
    });
}

/// A counter that crashes on request: the store an axum API calls.
struct Counter(u64);

enum Req {
    Add(u64),
    Crash,
}

impl GenServer for Counter {
    type Args = ();
    type Call = Req;
    type Reply = u64;
    type Cast = ();
    type Info = ();

    fn init(_: (), _: &mut Ctx<Self>) -> Result<Self, InitError> {
        Ok(Counter(0))
    }

    fn handle_call(&mut self, req: Req, reply: Reply<u64>, _: &mut Ctx<Self>) -> Flow {
        match req {
            Req::Add(n) => {
                self.0 += n;
                reply.reply(self.0);
            }
            Req::Crash => panic!("asked to crash"),
        }
        Flow::Continue
    }
}

const COUNTER: gen_server::ServerName<Counter> = gen_server::ServerName::new("counter");

/// axum served from an actor (its connections run on the tokio threads),
/// with handlers that call a supervised gen_server through `call_async`:
/// a crash is a 500 and the next request is served by the restarted
/// server.
#[test]
fn an_axum_api_whose_handlers_call_a_supervised_gen_server() {
    use axum::extract::{Path, State};
    use axum::http::StatusCode;
    use axum::routing::post;
    use smarm::supervisor::{self, ChildSpec, Strategy, SupFlags};

    init(Config::exact(2)).run(|| {
        let _tree = supervisor::start_link(
            SupFlags::new(Strategy::OneForOne),
            vec![ChildSpec::named_server::<Counter>(
                "counter",
                COUNTER,
                || (),
            )],
        )
        .unwrap();
        let rt = smarm::runtime::current();
        async fn add(
            State(rt): State<smarm::runtime::RuntimeHandle>,
            Path(n): Path<u64>,
        ) -> Result<String, StatusCode> {
            let counter = gen_server::whereis_server_in(&rt, COUNTER)
                .ok_or(StatusCode::SERVICE_UNAVAILABLE)?;
            let req = if n == 0 { Req::Crash } else { Req::Add(n) };
            match counter.call_async(req).await {
                Ok(total) => Ok(total.to_string()),
                Err(_) => Err(StatusCode::INTERNAL_SERVER_ERROR),
            }
        }
        let app = axum::Router::new()
            .route("/add/{n}", post(add))
            .with_state(rt);
        let listener =
            block_on(async { tokio::net::TcpListener::bind("127.0.0.1:0").await }).unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let server = smarm::spawn(move || {
            block_on(async move {
                axum::serve(listener, app)
                    .with_graceful_shutdown(async move {
                        let _ = stop_rx.await;
                    })
                    .await
            })
        });
        let client = reqwest::Client::new();
        let post = |n: u64| {
            let client = client.clone();
            block_on(async move {
                let resp = client
                    .post(format!("http://{addr}/add/{n}"))
                    .send()
                    .await
                    .unwrap();
                (resp.status().as_u16(), resp.text().await.unwrap())
            })
        };
        assert_eq!(post(2), (200, "2".to_string()));
        assert_eq!(post(3), (200, "5".to_string()));
        assert_eq!(post(0).0, 500, "the call crashed the server");
        // Restarted (fresh state); until then a request may see it down.
        let mut after = post(4);
        for _ in 0..100 {
            if after.0 == 200 {
                break;
            }
            smarm::sleep(std::time::Duration::from_millis(5));
            after = post(4);
        }
        assert_eq!(
            after,
            (200, "4".to_string()),
            "served by the restarted server"
        );
        drop(client);
        stop_tx.send(()).unwrap();
        server.join().unwrap().unwrap();
    });
}

/// An async database driver from an actor: sqlx's SQLite.
#[test]
fn an_sqlx_sqlite_query_from_an_actor() {
    init(Config::exact(2)).run(|| {
        let sum: i64 = block_on(async {
            let pool = sqlx::SqlitePool::connect("sqlite::memory:").await?;
            sqlx::query("create table t (x integer)")
                .execute(&pool)
                .await?;
            for x in 1..=10 {
                sqlx::query("insert into t (x) values (?)")
                    .bind(x)
                    .execute(&pool)
                    .await?;
            }
            let (sum,): (i64,) = sqlx::query_as("select sum(x) from t")
                .fetch_one(&pool)
                .await?;
            pool.close().await;
            Ok::<_, sqlx::Error>(sum)
        })
        .unwrap();
        assert_eq!(sum, 55);
    });
}

mod grpc {
    //! A unary gRPC service written as tonic's code generator writes it
    //! (no `protoc` needed): `hello.Greeter/SayHello`.
    use tonic::codegen::{Body, BoxFuture, Service, StdError, http};

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct HelloRequest {
        #[prost(string, tag = "1")]
        pub name: String,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct HelloReply {
        #[prost(string, tag = "1")]
        pub message: String,
    }

    pub const SAY_HELLO: &str = "/hello.Greeter/SayHello";

    #[derive(Clone)]
    pub struct Greeter;

    impl tonic::server::NamedService for Greeter {
        const NAME: &'static str = "hello.Greeter";
    }

    struct SayHello;

    impl tonic::server::UnaryService<HelloRequest> for SayHello {
        type Response = HelloReply;
        type Future = BoxFuture<tonic::Response<HelloReply>, tonic::Status>;

        fn call(&mut self, request: tonic::Request<HelloRequest>) -> Self::Future {
            Box::pin(async move {
                let name = request.into_inner().name;
                Ok(tonic::Response::new(HelloReply {
                    message: format!("hello {name}"),
                }))
            })
        }
    }

    impl<B> Service<http::Request<B>> for Greeter
    where
        B: Body + Send + 'static,
        B::Error: Into<StdError> + Send + 'static,
    {
        type Response = http::Response<tonic::body::BoxBody>;
        type Error = std::convert::Infallible;
        type Future = BoxFuture<Self::Response, Self::Error>;

        fn poll_ready(
            &mut self,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), Self::Error>> {
            std::task::Poll::Ready(Ok(()))
        }

        fn call(&mut self, req: http::Request<B>) -> Self::Future {
            if req.uri().path() == SAY_HELLO {
                Box::pin(async move {
                    let mut grpc = tonic::server::Grpc::new(tonic::codec::ProstCodec::default());
                    Ok(grpc.unary(SayHello, req).await)
                })
            } else {
                Box::pin(async move {
                    let unimplemented = http::Response::builder()
                        .status(200)
                        .header("grpc-status", tonic::Code::Unimplemented as i32)
                        .header("content-type", "application/grpc")
                        .body(tonic::body::empty_body());
                    match unimplemented {
                        Ok(response) => Ok(response),
                        Err(e) => panic!("a fixed response failed to build: {e}"),
                    }
                })
            }
        }
    }
}

/// A tonic server (its tasks on the tokio threads) and a tonic client in
/// an actor: a unary call each way of the bridge.
#[test]
fn a_tonic_unary_call_from_an_actor() {
    init(Config::exact(2)).run(|| {
        let listener =
            block_on(async { tokio::net::TcpListener::bind("127.0.0.1:0").await }).unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(grpc::Greeter)
                .serve_with_incoming_shutdown(
                    tokio_stream::wrappers::TcpListenerStream::new(listener),
                    async move {
                        let _ = stop_rx.await;
                    },
                ),
        );
        let replies: Vec<_> = (0..4)
            .map(|i| {
                smarm::spawn(move || {
                    block_on(async move {
                        let channel =
                            tonic::transport::Channel::from_shared(format!("http://{addr}"))
                                .unwrap()
                                .connect()
                                .await
                                .unwrap();
                        let mut client = tonic::client::Grpc::new(channel);
                        client.ready().await.unwrap();
                        let reply: tonic::Response<grpc::HelloReply> = client
                            .unary(
                                tonic::Request::new(grpc::HelloRequest {
                                    name: format!("actor {i}"),
                                }),
                                tonic::codegen::http::uri::PathAndQuery::from_static(
                                    grpc::SAY_HELLO,
                                ),
                                tonic::codec::ProstCodec::default(),
                            )
                            .await
                            .unwrap();
                        reply.into_inner().message
                    })
                })
            })
            .collect();
        for (i, r) in replies.into_iter().enumerate() {
            assert_eq!(r.join().unwrap(), format!("hello actor {i}"));
        }
        stop_tx.send(()).unwrap();
        block_on(server).unwrap().unwrap();
    });
}

/// The ureq case: actors make blocking HTTP calls (ureq, a sync client,
/// straight from actor code) to an axum API whose handler calls a
/// gen_server in the same runtime. Each call blocks a scheduler thread;
/// the gen_server runs only because spare schedulers keep coming, one per
/// blocked thread. At 2 schedulers, 8 such calls at once all complete.
#[test]
fn eight_actors_blocked_in_sync_http_calls_to_the_same_runtime_all_complete() {
    use axum::extract::State;
    use axum::routing::get;

    let (done_tx, done) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        init(Config::exact(2)).run(move || {
            let counter = gen_server::start::<Counter>(()).unwrap();
            async fn bump(
                State(counter): State<gen_server::GenServerRef<Counter>>,
            ) -> Result<String, axum::http::StatusCode> {
                // Slow enough that all eight calls overlap.
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                counter
                    .call_async(Req::Add(1))
                    .await
                    .map(|n| n.to_string())
                    .map_err(|_| axum::http::StatusCode::INTERNAL_SERVER_ERROR)
            }
            let app = axum::Router::new()
                .route("/bump", get(bump))
                .with_state(counter.clone());
            let listener =
                block_on(async { tokio::net::TcpListener::bind("127.0.0.1:0").await }).unwrap();
            let addr = listener.local_addr().unwrap();
            let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
            let server = smarm::spawn(move || {
                block_on(async move {
                    axum::serve(listener, app)
                        .with_graceful_shutdown(async move {
                            let _ = stop_rx.await;
                        })
                        .await
                })
            });
            let agent = ureq::AgentBuilder::new()
                .timeout(std::time::Duration::from_secs(30))
                .build();
            let calls: Vec<_> = (0..8)
                .map(|_| {
                    let agent = agent.clone();
                    smarm::spawn(move || {
                        // Blocks this scheduler thread for the whole call.
                        agent
                            .get(&format!("http://{addr}/bump"))
                            .call()
                            .unwrap()
                            .into_string()
                            .unwrap()
                    })
                })
                .collect();
            let mut totals: Vec<u64> = calls
                .into_iter()
                .map(|c| c.join().unwrap().parse().unwrap())
                .collect();
            totals.sort_unstable();
            assert_eq!(totals, (1..=8).collect::<Vec<u64>>());
            stop_tx.send(()).unwrap();
            server.join().unwrap().unwrap();
            counter.shutdown().unwrap();
            done_tx.send(()).unwrap();
        })
    });
    done.recv_timeout(std::time::Duration::from_secs(120))
        .expect("the blocked calls did not all complete within 120 s");
}
