//! gdb on a smarm program: `bt` in an actor walks through the context
//! switch into the scheduler (`run_worker`), and `smarm-gdb.py` lists the
//! actors with a parked actor's stack.
//!
//! The test runs gdb on this test binary, which re-runs itself as the
//! child (the program debugged). The child first maps actor stacks in one
//! run, so that in the next run, on scheduler threads started after them,
//! actors run on stacks above their thread's: the layout gdb rejected as
//! "previous frame inner to this frame (corrupt stack?)" until the
//! trampoline was marked a signal frame (`context/x86_64.rs`). Optimised
//! code is the case that matters (`cargo test --release`); the debug build
//! is checked the same way.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

mod support;

use smarm::{ActorState, channel};
use std::hint::black_box;
use std::process::Command;
use std::time::Duration;
use support::{HangGuard, run_with};

const CHILD: &str = "SMARM_GDB_TEST_CHILD";
const TEST: &str = "gdb_walks_through_the_switch_and_lists_parked_actors";
const SLEEPERS: usize = 3;
const PROBES: usize = 12;

/// Where gdb stops in each probing actor.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn smarm_gdb_test_probe(n: usize) -> usize {
    black_box(n)
}

/// Where gdb stops to list the actors, once the sleepers are parked.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn smarm_gdb_test_listing() {
    black_box(());
}

/// A frame every sleeper's stack must show.
#[inline(never)]
fn wait_in_gdb_test(rx: smarm::Receiver<u32>) -> u32 {
    black_box(rx.recv().unwrap_or(0))
}

#[inline(never)]
fn probe_from_an_actor(n: usize) -> usize {
    black_box(smarm_gdb_test_probe(n)) + 1
}

fn child() {
    // Actor stacks mapped now lie above the stacks of threads started later.
    run_with(1, || {
        let early: Vec<_> = (0..200).map(|_| smarm::spawn(smarm::yield_now)).collect();
        for h in early {
            h.join().unwrap();
        }
    });
    run_with(4, || {
        println!("root {}", smarm::self_pid());
        let mut senders = Vec::new();
        let mut sleepers = Vec::new();
        for _ in 0..SLEEPERS {
            let (tx, rx) = channel::<u32>();
            senders.push(tx);
            sleepers.push(smarm::spawn(move || wait_in_gdb_test(rx)));
        }
        let parked = |h: &smarm::JoinHandle<u32>| {
            smarm::actor_info(h.pid()).is_some_and(|i| i.state == ActorState::Parked)
        };
        while !sleepers.iter().all(parked) {
            smarm::sleep(Duration::from_millis(1));
        }
        smarm_gdb_test_listing();
        let probes: Vec<_> = (0..PROBES)
            .map(|n| smarm::spawn(move || probe_from_an_actor(n)))
            .collect();
        for (n, h) in probes.into_iter().enumerate() {
            assert_eq!(h.join().unwrap(), n + 1);
        }
        for tx in &senders {
            tx.send(7).unwrap();
        }
        for h in sleepers {
            assert_eq!(h.join().unwrap(), 7);
        }
    });
}

#[test]
#[ignore = "needs gdb: .ci/run installs it and runs `cargo test --release --test gdb -- --ignored`"]
fn gdb_walks_through_the_switch_and_lists_parked_actors() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    let _guard = HangGuard::new(Duration::from_secs(300), "gdb session");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/smarm-core/debugger/smarm-gdb.py"
    );
    let commands = format!(
        "set pagination off
set confirm off
set print thread-events off
set breakpoint pending on
source {script}
break smarm_gdb_test_probe
commands
silent
echo == probe\\n
bt
continue
end
break smarm_gdb_test_listing
commands
silent
echo == listing\\n
smarm actors --stacks
echo == end listing\\n
continue
end
run
"
    );
    let file = std::env::temp_dir().join(format!("smarm-gdb-test-{}.gdb", std::process::id()));
    std::fs::write(&file, commands).unwrap();
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("gdb")
        .args(["-batch", "-nx", "-x"])
        .arg(&file)
        .arg("--args")
        .arg(&exe)
        .args([
            "--exact",
            TEST,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .output()
        .expect("gdb runs (install it: apt-get install gdb)");
    let _ = std::fs::remove_file(&file);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let all = format!("{stdout}\n--- stderr ---\n{stderr}");
    assert!(
        stdout.contains("test result: ok. 1 passed"),
        "the child did not finish under gdb:\n{all}"
    );
    assert!(
        !all.contains("corrupt stack") && !all.contains("inner to this frame"),
        "gdb stopped at the switch:\n{all}"
    );

    // Every probe's backtrace reaches the scheduler loop.
    let probes: Vec<&str> = stdout.split("== probe").skip(1).collect();
    assert_eq!(
        probes.len(),
        PROBES,
        "each probing actor stops once:\n{all}"
    );
    for bt in &probes {
        let bt = bt.split("== ").next().unwrap();
        assert!(
            bt.contains("probe_from_an_actor"),
            "the actor's own frame:\n{bt}"
        );
        assert!(bt.contains("actor_entry"), "the actor's entry:\n{bt}");
        assert!(
            bt.contains("run_worker"),
            "through the switch into run_worker:\n{bt}"
        );
    }

    // The listing names each sleeper as parked on a message, with its stack.
    let listing = stdout
        .split("== listing")
        .nth(1)
        .and_then(|s| s.split("== end listing").next())
        .unwrap_or_else(|| panic!("no listing:\n{all}"));
    assert!(listing.contains("runtime "), "{listing}");
    assert_eq!(
        listing.matches("parked on message").count(),
        SLEEPERS,
        "the sleepers, parked on their channels:\n{listing}"
    );
    assert_eq!(
        listing.matches("wait_in_gdb_test").count(),
        SLEEPERS,
        "each sleeper's stack shows the function it waits in:\n{listing}"
    );
    assert_eq!(
        listing.matches("the actor's stack ends").count(),
        SLEEPERS,
        "each stack is walked down to the switch:\n{listing}"
    );
    let root = stdout
        .lines()
        .find_map(|l| l.split("root ").nth(1))
        .unwrap_or_else(|| panic!("the child names its root:\n{all}"));
    assert!(
        listing.contains(&format!("{root:<16} running")),
        "the root, listing, runs:\n{listing}"
    );
    assert_eq!(
        listing.matches(&format!("parent {root}")).count(),
        SLEEPERS,
        "each sleeper's parent is the root:\n{listing}"
    );
}
