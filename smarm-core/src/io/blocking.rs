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
        let mut q = crate::lock::lock_std(&self.state.queue);
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

/// The blocking pool's threads run outside a simulation's order (feature
/// `sim`): refused there, saying so.
fn refuse_in_simulation(what: &str) {
    #[cfg(feature = "sim")]
    if crate::scheduler::simulated::active() {
        panic!(
            "smarm::io::{what} called inside a simulation (smarm::sim): the blocking pool's \
             threads cannot be simulated; give the simulated actor a stand-in for the blocking \
             work (a gen_server, or a function that returns at once)"
        );
    }
    #[cfg(not(feature = "sim"))]
    let _ = what;
}

/// Run `f`, which may block (a synchronous file or DNS call, a blocking C
/// library), on the blocking pool while the calling actor parks; return
/// its result. A panic in `f` is re-raised in the calling actor.
///
/// It needs a `'static` closure; [`block_on_io_scoped`] takes one that
/// borrows from the caller. Each call costs a pool round trip (about
/// 35 µs where measured; see `block_on_io_scoped`).
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
/// Outside an actor, inside a simulation (`smarm::sim`), if the pool
/// cannot start a thread, or when `f` panics.
pub fn block_on_io<F, T>(f: F) -> T
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let slot: Arc<Mutex<Option<std::thread::Result<T>>>> = Arc::new(Mutex::new(None));
    let out = slot.clone();
    let run: Job = Box::new(move || {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        *out.lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
    });
    refuse_in_simulation("block_on_io");
    let mut wait = submit("block_on_io", run);
    loop {
        // The job was handed this wait once: park on it until it is done.
        wait.park_and_stay_open();
        let result = crate::lock::lock_std(&slot).take();
        match result {
            Some(Ok(value)) => return value,
            Some(Err(payload)) => std::panic::resume_unwind(payload),
            None => {} // not done yet (an early wake): wait again
        }
    }
}

/// Open the caller's wait and hand `run` to the pool, wrapped so that its
/// end wakes that wait; `what` names the public call for its panics.
fn submit(what: &'static str, run: Job) -> Wait {
    let wait = Wait::open(what, WaitingOn::BlockingJob);
    let woken = wait.id();
    let submitted = scheduler::with_current_actor(what, |_, shared| {
        let driver = super::driver(shared)?;
        let rt = driver.pool.rt.clone();
        // Counted before submission, undone by the job (io (I2)).
        shared.blocking_job_submitted();
        let job: Job = Box::new(move || {
            run();
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
        panic!("smarm: {what} could not start a pool thread: {e}");
    }
    wait
}

/// [`block_on_io`] for a closure that borrows from the caller: a
/// database connection, a buffer, anything on the actor's stack, with no
/// `'static` bound and no moving it out and back. The actor stays parked
/// until the job is done, as [`std::thread::scope`] waits for its
/// threads: a stop request that arrives meanwhile takes effect once the
/// job has returned (the job cannot be interrupted either way). A panic in
/// `f` is re-raised in the calling actor.
///
/// ```
/// smarm::run(|| {
///     let mut conn = vec![1u32, 2, 3]; // a connection owned by this actor
///     let sum = smarm::io::block_on_io_scoped(|| {
///         conn.push(4); // borrowed mutably, on a pool thread
///         conn.iter().sum::<u32>()
///     });
///     assert_eq!((sum, conn.len()), (10, 4));
/// });
/// ```
///
/// Cost: a pool round trip, as [`block_on_io`]: a thread hand-off each
/// way, about 35 µs per call on the 2-core machine it was measured on
/// (`cargo bench --bench async_bridge`, median of 7 rounds; a direct call
/// of the same closure: 1 ns). Worth it for a call that blocks for longer
/// than that (a disk read, a remote query), not for one that returns from
/// a cache: call that one directly, or keep it on an actor of its own.
///
/// # Panics
///
/// Outside an actor, inside a simulation (`smarm::sim`), if the pool
/// cannot start a thread, or when `f` panics.
pub fn block_on_io_scoped<'a, F, T>(f: F) -> T
where
    F: FnOnce() -> T + Send + 'a,
    T: Send + 'a,
{
    let slot: Arc<Mutex<Option<std::thread::Result<T>>>> = Arc::new(Mutex::new(None));
    let out = slot.clone();
    refuse_in_simulation("block_on_io_scoped");
    let run: Box<dyn FnOnce() + Send + 'a> = Box::new(move || {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        *out.lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
    });
    // SAFETY: `run` borrows for `'a` only what `f` borrows (and `out`, a
    // count of a heap slot whose `T: 'a` it leaves empty once taken). The
    // pool may run it after `'a` would end only if this function returned
    // or unwound first, and it does neither until `slot` holds the job's
    // result: the loop below parks deaf to stop requests until then. By
    // the time `run` stores the result, `f` has returned and `run` touches
    // nothing borrowed again; what follows (its drop of `out`, the wake)
    // touches only the heap slot and the runtime. So every use of a
    // borrow happens within `'a`, as with `std::thread::scope`.
    let run: Job = unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + 'a>, Job>(run) };
    let mut wait = submit("block_on_io_scoped", run);
    let result = loop {
        // The job was handed this wait once: park on it until it is done,
        // and let a stop wait for the job (see the SAFETY note above).
        wait.park_staying_for_the_waker();
        if let Some(result) = crate::lock::lock_std(&slot).take() {
            break result;
        }
    };
    wait.retire(); // a stop request that came meanwhile unwinds here
    match result {
        Ok(value) => value,
        Err(payload) => std::panic::resume_unwind(payload),
    }
}
