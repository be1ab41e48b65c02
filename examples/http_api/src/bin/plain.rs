//! The same API written in plain tokio + axum, for comparison in
//! `benches/http_api.sh`: the store is a tokio task fed by an mpsc
//! channel, answering on oneshots; the quotes call the same kind of
//! upstream service with reqwest. No supervision: a crash is not part of
//! this peer. `HTTP_API_ADDR` and `HTTP_API_DB` as for the smarm version.

use axum::extract::{Json, Query, State};
use axum::http::StatusCode;
use axum::routing::get;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

#[derive(Clone, Debug, serde::Serialize)]
struct Item {
    id: i64,
    name: String,
}

#[derive(serde::Deserialize)]
struct NewItem {
    name: String,
}

enum StoreCall {
    List(oneshot::Sender<Result<Vec<Item>, String>>),
    Add(String, oneshot::Sender<Result<Item, String>>),
}

/// The store task: one request at a time, as the gen_server serves them.
async fn store(db: sqlx::SqlitePool, mut calls: mpsc::Receiver<StoreCall>) {
    while let Some(call) = calls.recv().await {
        match call {
            StoreCall::List(reply) => {
                let rows: Result<Vec<(i64, String)>, _> =
                    sqlx::query_as("select id, name from items order by id")
                        .fetch_all(&db)
                        .await;
                let items = rows
                    .map(|r| r.into_iter().map(|(id, name)| Item { id, name }).collect())
                    .map_err(|e| e.to_string());
                let _ = reply.send(items);
            }
            StoreCall::Add(name, reply) => {
                let added = sqlx::query("insert into items (name) values (?)")
                    .bind(&name)
                    .execute(&db)
                    .await
                    .map(|r| Item {
                        id: r.last_insert_rowid(),
                        name,
                    })
                    .map_err(|e| e.to_string());
                let _ = reply.send(added);
            }
        }
    }
}

#[derive(Clone)]
struct App {
    store: mpsc::Sender<StoreCall>,
    client: reqwest::Client,
    quote_url: String,
}

async fn list(State(app): State<App>) -> Result<Json<Vec<Item>>, StatusCode> {
    let (tx, rx) = oneshot::channel();
    let down = |_| StatusCode::INTERNAL_SERVER_ERROR;
    app.store.send(StoreCall::List(tx)).await.map_err(down)?;
    let items = tokio::time::timeout(Duration::from_secs(5), rx)
        .await
        .map_err(|_| StatusCode::GATEWAY_TIMEOUT)?
        .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?;
    items
        .map(Json)
        .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)
}

async fn add(
    State(app): State<App>,
    Json(new): Json<NewItem>,
) -> Result<(StatusCode, Json<Item>), StatusCode> {
    let (tx, rx) = oneshot::channel();
    let down = |_| StatusCode::INTERNAL_SERVER_ERROR;
    app.store
        .send(StoreCall::Add(new.name, tx))
        .await
        .map_err(down)?;
    let item = tokio::time::timeout(Duration::from_secs(5), rx)
        .await
        .map_err(|_| StatusCode::GATEWAY_TIMEOUT)?
        .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?;
    item.map(|i| (StatusCode::CREATED, Json(i)))
        .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)
}

async fn quote(State(app): State<App>) -> Result<Json<serde_json::Value>, StatusCode> {
    let text = async {
        let resp = app
            .client
            .get(&app.quote_url)
            .timeout(Duration::from_secs(2))
            .send()
            .await?
            .error_for_status()?;
        resp.text().await
    };
    match text.await {
        Ok(text) => Ok(Json(serde_json::json!({ "quote": text }))),
        Err(_) => Err(StatusCode::BAD_GATEWAY),
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

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::var("HTTP_API_ADDR").unwrap_or_else(|_| "127.0.0.1:3001".into());
    let db_path = std::env::var("HTTP_API_DB").unwrap_or_else(|_| {
        let path = std::env::temp_dir().join("smarm-http-api-plain.sqlite");
        path.to_string_lossy().into_owned()
    });
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(db_path)
        .create_if_missing(true);
    let db = sqlx::SqlitePool::connect_with(options).await?;
    sqlx::query("create table if not exists items (id integer primary key, name text not null)")
        .execute(&db)
        .await?;
    let (store_tx, store_rx) = mpsc::channel(1024);
    tokio::spawn(store(db, store_rx));

    let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let quote_url = format!("http://{}/quote", upstream.local_addr()?);
    let upstream_router = axum::Router::new().route(
        "/quote",
        get(|| async { "The best way to predict the future is to invent it." }),
    );
    tokio::spawn(async move { axum::serve(upstream, upstream_router).await });

    let app = App {
        store: store_tx,
        client: reqwest::Client::new(),
        quote_url,
    };
    let router = axum::Router::new()
        .route("/items", get(list).post(add))
        .route("/quote", get(quote))
        .route("/slow", get(slow))
        .with_state(app);
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on {}", listener.local_addr()?);
    println!("ready");
    axum::serve(listener, router)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
