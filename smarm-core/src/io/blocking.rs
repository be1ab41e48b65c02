//! The blocking pool: run closures that block, off the scheduler threads.

use crate::scheduler::Shared;
use crate::scheduler::WaitingOn;
use crate::scheduler::{self, Wait};
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Duration;

/// Most threads the blocking pool runs at once; more requests queue.
pub const MAX_BLOCKING_THREADS: usize = 64;
/// How long an idle pool thread waits for work before it exits.
pub const BLOCKING_KEEP_ALIVE: Duration = Duration::from_secs(10);

type Job = Box<dyn FnOnce() + Send>;

struct Queue {
    jobs: VecDeque<Job>,
    threads: usize,
    idle: usize,
    shutdown: bool,
}

struct PoolState {
    queue: Mutex<Queue>,
    work: Condvar,
    exited: Condvar,
}

pub(super) struct Pool {
    state: Arc<PoolState>,
    rt: Weak<Shared>,
}

impl Pool {
    pub(super) fn new(rt: Weak<Shared>) -> Pool {
        Pool {
            state: Arc::new(PoolState {
                queue: Mutex::new(Queue {
                    jobs: VecDeque::new(),
                    threads: 0,
                    idle: 0,
                    shutdown: false,
                }),
                work: Condvar::new(),
                exited: Condvar::new(),
            }),
            rt,
        }
    }

    fn submit(&self, job: Job) -> std::io::Result<()> {
        let mut q = crate::sync::lock_std(&self.state.queue);
        q.jobs.push_back(job);
        if q.idle >= q.jobs.len() {
            self.state.work.notify_one();
            return Ok(());
        }
        self.state.work.notify_one();
        if q.threads < MAX_BLOCKING_THREADS {
            let state = self.state.clone();
            std::thread::Builder::new()
                .name("smarm-io-blocking".into())
                .spawn(move || worker(state))?;
            q.threads += 1;
        }
        Ok(())
    }
}

impl Drop for Pool {
    /// Wait for every pool thread to finish its job and exit (io (I4)).
    fn drop(&mut self) {
        let mut q = self.state.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.shutdown = true;
        self.state.work.notify_all();
        while q.threads > 0 {
            q = self.state.exited.wait(q).unwrap_or_else(|e| e.into_inner());
        }
    }
}

fn worker(state: Arc<PoolState>) {
    let mut q = state.queue.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if let Some(job) = q.jobs.pop_front() {
            drop(q);
            job();
            q = state.queue.lock().unwrap_or_else(|e| e.into_inner());
            continue;
        }
        if q.shutdown {
            break;
        }
        q.idle += 1;
        let (guard, timeout) = state
            .work
            .wait_timeout(q, BLOCKING_KEEP_ALIVE)
            .unwrap_or_else(|e| e.into_inner());
        q = guard;
        q.idle -= 1;
        if timeout.timed_out() && q.jobs.is_empty() {
            break;
        }
    }
    q.threads -= 1;
    state.exited.notify_all();
}

/// Run `f`, which may block (a synchronous file or DNS call, a blocking C
/// library), on the blocking pool while the calling actor parks; return
/// its result. A panic in `f` is re-raised in the calling actor.
///
/// The pool starts threads on demand, up to [`MAX_BLOCKING_THREADS`] at
/// once (more calls queue), and a thread idle for
/// [`BLOCKING_KEEP_ALIVE`] exits. For socket and pipe IO prefer
/// [`wait_readable`](crate::io::wait_readable) and friends, which use no
/// thread per wait.
///
/// ```
/// smarm::run(|| {
///     let len = smarm::io::block_on_io(|| std::fs::read("Cargo.toml").map(|b| b.len()));
///     assert!(len.unwrap() > 0);
///     let r = std::panic::catch_unwind(|| smarm::io::block_on_io(|| panic!("in the pool")));
///     assert!(r.is_err(), "the panic comes back to the caller");
/// });
/// ```
///
/// # Panics
///
/// Outside an actor, if the pool cannot start a thread, or when `f`
/// panics.
pub fn block_on_io<F, T>(f: F) -> T
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let slot: Arc<Mutex<Option<std::thread::Result<T>>>> = Arc::new(Mutex::new(None));
    let mut wait = Wait::open("block_on_io", WaitingOn::BlockingJob);
    let woken = wait.id();
    let submitted = scheduler::with_current_actor("block_on_io", |_, shared| {
        let driver = super::driver(shared)?;
        let rt = driver.pool.rt.clone();
        let out = slot.clone();
        // Counted before submission, undone by the job (io (I2)).
        shared.blocking_job_submitted();
        let job: Job = Box::new(move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
            *out.lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
            if let Some(shared) = rt.upgrade() {
                shared.blocking_job_done();
                shared.wake(woken);
            }
        });
        driver.pool.submit(job).inspect_err(|_| {
            shared.blocking_job_done();
        })
    });
    if let Err(e) = submitted {
        wait.retire();
        panic!("smarm: block_on_io could not start a pool thread: {e}");
    }
    loop {
        // The job was handed this wait once: park on it until it is done.
        wait.park_and_stay_open();
        let result = crate::sync::lock_std(&slot).take();
        match result {
            Some(Ok(value)) => return value,
            Some(Err(payload)) => std::panic::resume_unwind(payload),
            None => {} // not done yet (an early wake): wait again
        }
    }
}
