//! A stack overflow inside an actor is reported as one, naming the actor,
//! before the process aborts. Run in a child process (the test binary
//! re-executes itself), since the overflow ends that process.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

mod support;

const CHILD_ENV: &str = "SMARM_TEST_OVERFLOW_CHILD";

#[inline(never)]
#[allow(unconditional_recursion)] // the point: recurse until the guard page
fn recurse(depth: u64, sink: &mut [u8; 512]) -> u64 {
    let mut local = [0u8; 512];
    local[(depth % 512) as usize] = depth as u8;
    sink[0] = sink[0].wrapping_add(local[3]);
    // Not a tail call: the frame must stay live.
    recurse(depth + 1, &mut local) + u64::from(std::hint::black_box(local[7]))
}

#[test]
fn stack_overflow_in_an_actor_is_reported_with_its_pid() {
    if std::env::var_os(CHILD_ENV).is_some() {
        smarm::runtime::init(smarm::runtime::Config::exact(2)).run(|| {
            let h = smarm::spawn(|| {
                let mut sink = [0u8; 512];
                let _ = recurse(0, &mut sink);
            });
            println!("CHILD_PID={}", h.pid());
            let _ = h.join();
        });
        unreachable!("the overflow aborts the process");
    }
    let out = support::rerun_in_child(
        "stack_overflow_in_an_actor_is_reported_with_its_pid",
        CHILD_ENV,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "the child must not survive a stack overflow"
    );
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGABRT),
        "aborted, not a bare SIGSEGV: {stderr}"
    );
    let pid = stdout
        .lines()
        .find_map(|l| l.strip_prefix("CHILD_PID="))
        .unwrap_or_else(|| panic!("child printed no pid; stdout: {stdout}; stderr: {stderr}"));
    let expected = format!("smarm: stack overflow in actor {pid}");
    assert!(
        stderr.contains(&expected),
        "stderr lacks {expected:?}: {stderr}"
    );
}
