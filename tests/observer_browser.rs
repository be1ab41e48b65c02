//! The observer's page in a real browser (feature `observer`): headless
//! Chromium renders it against the shop example (`examples/observer`) and
//! the DOM, after the page's scripts ran, shows the supervision tree's
//! registered names and a non-empty top-N table. Also writes the
//! screenshot the guide shows (to the test's temporary directory; set
//! `SMARM_OBSERVER_SCREENSHOT=path` to write it elsewhere).
//!
//! Needs Debian's `chromium`, so it is ignored in the plain test run:
//! `cargo test --features observer --test observer_browser -- --ignored`
//! (`.ci/run` installs chromium when missing and runs it so).
#![cfg(feature = "observer")]
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

#[path = "../examples/observer/shop.rs"]
mod shop;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

const CHROMIUM: &str = "/usr/bin/chromium";

/// Headless Chromium with the flags a closed network needs, and a fresh
/// profile.
fn chromium(profile: &std::path::Path) -> Command {
    let mut cmd = Command::new(CHROMIUM);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,900",
        // Long enough for the first snapshots to arrive and render.
        "--virtual-time-budget=4000",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    cmd
}

#[test]
#[ignore = "needs Debian's chromium (apt-get install chromium); run: cargo test --features observer --test observer_browser -- --ignored"]
fn the_page_shows_the_tree_and_a_top_table_in_chromium() {
    assert!(
        std::path::Path::new(CHROMIUM).exists(),
        "this test drives Debian's chromium: install it (apt-get install chromium), \
         as .ci/run does"
    );
    let (url_tx, url_rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = smarm::channel::<()>();
    let runtime = std::thread::spawn(move || {
        smarm::run(move || {
            let shop = shop::start();
            let obs = smarm::observer::Observer::new()
                .token("guide")
                .serve("127.0.0.1:0")
                .unwrap();
            url_tx.send(obs.url()).unwrap();
            let _ = done_rx.recv();
            obs.stop();
            // The shop's clients run until stopped: end the tree, or the
            // runtime (which ends once every actor has) runs on.
            shop.shutdown().unwrap();
        })
    });
    let url = url_rx.recv_timeout(Duration::from_secs(30)).unwrap();
    // Let the history gather a few samples, so the plots have lines.
    std::thread::sleep(Duration::from_secs(3));
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let profile = tmp.join(format!("chromium-profile-{}", std::process::id()));
    // `poll`: the page polls instead of holding an event stream open, so
    // the headless run ends when its virtual time is spent.
    let page = format!("{url}&poll#%3C0.2.1%3E");

    let dom = chromium(&profile)
        .arg("--dump-dom")
        .arg(&page)
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&dom.stdout).into_owned();
    let tree_nodes: Vec<&str> = dom.split("class=\"tree-node").skip(1).collect();
    for name in [
        "shop.orders",
        "shop.stock",
        "shop.flaky",
        "shop.client.0",
        "shop.client.1",
    ] {
        assert!(
            tree_nodes.iter().any(|node| node.contains(name)),
            "{name} is not in the rendered tree:\n{dom}"
        );
    }
    assert!(dom.contains("id=\"top-table\""), "{dom}");
    assert!(
        dom.matches("class=\"top-row").count() >= 5,
        "the top table has no rows:\n{dom}"
    );

    let shot = std::env::var_os("SMARM_OBSERVER_SCREENSHOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| tmp.join("observer.png"));
    let status = chromium(&profile)
        .arg(format!("--screenshot={}", shot.display()))
        .arg(&page)
        .output()
        .unwrap()
        .status;
    assert!(status.success(), "chromium --screenshot failed: {status}");
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000);

    let _ = std::fs::remove_dir_all(&profile);
    done_tx.send(()).unwrap();
    runtime.join().unwrap();
}
