//! `Mutex<T>`: an actor-aware lock for shared state, FIFO and bounded.
//!
//! ```
//! use smarm::{run, spawn, Mutex};
//!
//! run(|| {
//!     let counter = Mutex::new(0u32);
//!
//!     // Mutex::clone() is cheap and hands out another handle to the SAME
//!     // underlying value, much like Arc::clone: every clone shares one lock
//!     // and one value, so mutations through one are visible through all.
//!     let a = counter.clone();
//!     let b = counter.clone();
//!
//!     let h1 = spawn(move || {
//!         let mut guard = a.lock().unwrap();
//!         *guard += 1;
//!     });
//!     let h2 = spawn(move || {
//!         let mut guard = b.lock().unwrap();
//!         *guard += 1;
//!     });
//!     h1.join().unwrap();
//!     h2.join().unwrap();
//!
//!     assert_eq!(*counter.lock().unwrap(), 2);
//! });
//! ```

use crate::lock::{LockClass, RawMutex};
use crate::scheduler::WaitingOn;
use crate::scheduler::{self, BoundedWaiter, Deadline, Registered, Wait, WakeToken};
use crate::slot::Pid;
use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::thread::ThreadId;
use std::time::{Duration, Instant};
use thiserror::Error;

/// How long [`Mutex::lock`] waits unless told otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The lock was not granted within the timeout; nothing was acquired.
#[derive(Debug, PartialEq, Eq, Clone, Copy, Error)]
#[error(
    "smarm: Mutex lock timed out after {waited:?}: another actor held it that long; \
     shorten the critical section or pass a longer timeout to lock_timeout"
)]
pub struct LockTimeout {
    /// The timeout that elapsed.
    pub waited: Duration,
}

/// Who holds, or waits for, the lock. An actor is named by its pid and
/// its runtime's address: pids are per runtime, and one `Mutex` may be
/// shared by the actors of several (every run's root is `<0.0.1>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    Actor(Pid, usize),
    Thread(ThreadId),
}

/// The running actor as an owner, if this thread runs one.
fn current_actor() -> Option<Owner> {
    scheduler::with_worker(|w, shared| {
        w.actor
            .current
            .get()
            .map(|pid| Owner::Actor(pid, std::ptr::from_ref(shared) as usize))
    })
    .flatten()
}

enum Waiter {
    Actor(WakeToken),
    Thread {
        id: ThreadId,
        thread: std::thread::Thread,
    },
}

impl Waiter {
    fn owner(&self) -> Owner {
        match self {
            Waiter::Actor(token) => Owner::Actor(token.pid(), token.runtime_addr()),
            Waiter::Thread { id, .. } => Owner::Thread(*id),
        }
    }

    fn wake(&self) {
        match self {
            Waiter::Actor(token) => token.wake(),
            Waiter::Thread { thread, .. } => thread.unpark(),
        }
    }
}

struct State {
    /// The current holder; `None` = unlocked. On release the lock is handed
    /// to the first waiter directly (FIFO), never left up for grabs.
    owner: Option<Owner>,
    waiters: VecDeque<Waiter>,
    default_timeout: Duration,
    /// A holder was ended by a stack overflow while it held the lock.
    poisoned: bool,
}

struct Core<T> {
    state: RawMutex<State>,
    value: UnsafeCell<T>,
}

/// A mutual-exclusion lock for state shared between actors.
///
/// [`lock`](Self::lock) parks only the calling actor while another holds
/// the lock. Waiters are granted the lock in arrival order (FIFO), each
/// wait is bounded (by default [`DEFAULT_TIMEOUT`]), and a holder that
/// panics releases it as its guard drops, unpoisoned (the unwind ran the
/// holder's destructors). A holder ended by a stack overflow, which runs
/// none, releases it poisoned: see [`is_poisoned`](Self::is_poisoned). Clones
/// share one lock and one value, like an `Arc<Mutex<T>>`.
///
/// ```
/// use smarm::{run, spawn, Mutex};
///
/// run(|| {
///     let counter = Mutex::new(0u32);
///     let handles: Vec<_> = (0..10)
///         .map(|_| {
///             let counter = counter.clone();
///             spawn(move || *counter.lock().unwrap() += 1)
///         })
///         .collect();
///     for h in handles {
///         h.join().unwrap();
///     }
///     assert_eq!(*counter.lock().unwrap(), 10);
/// });
/// ```
///
/// Outside the runtime (setup code, a plain thread) `lock` blocks the OS
/// thread instead, with the same FIFO order and timeout. Locking a mutex
/// the caller already holds panics instead of deadlocking.
pub struct Mutex<T> {
    core: Arc<Core<T>>,
}

// SAFETY: the value is only reached through a guard, which exists only
// while `state.owner` names its holder (one at a time); moving the Mutex
// moves a handle, so T: Send suffices, as for std's Mutex.
unsafe impl<T: Send> Send for Mutex<T> {}
// SAFETY: as above: the state lock serialises ownership changes, and only
// the owner dereferences the value.
unsafe impl<T: Send> Sync for Mutex<T> {}

impl<T> Clone for Mutex<T> {
    /// Another handle to the same lock and value.
    fn clone(&self) -> Self {
        Mutex {
            core: self.core.clone(),
        }
    }
}

impl<T> Mutex<T> {
    /// A new, unlocked mutex around `value`.
    pub fn new(value: T) -> Self {
        Mutex {
            core: Arc::new(Core {
                state: RawMutex::new(
                    LockClass::Leaf,
                    State {
                        owner: None,
                        waiters: VecDeque::new(),
                        poisoned: false,
                        default_timeout: DEFAULT_TIMEOUT,
                    },
                ),
                value: UnsafeCell::new(value),
            }),
        }
    }

    /// Change the timeout of future [`lock`](Self::lock) calls (on every
    /// clone).
    pub fn set_default_timeout(&self, timeout: Duration) {
        self.core.state.lock().default_timeout = timeout;
    }

    /// Acquire the lock, waiting at most the default timeout.
    pub fn lock(&self) -> Result<MutexGuard<'_, T>, LockTimeout> {
        let timeout = self.core.state.lock().default_timeout;
        self.lock_timeout(timeout)
    }

    /// Acquire the lock, waiting at most `timeout`. A grant that races the
    /// deadline wins: the caller gets the lock rather than an error.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// smarm::run(|| {
    ///     let m = smarm::Mutex::new(());
    ///     let held = m.lock().unwrap();
    ///     let m2 = m.clone();
    ///     let waiter = smarm::spawn(move || {
    ///         let err = m2.lock_timeout(Duration::from_millis(5)).unwrap_err();
    ///         assert_eq!(err.waited, Duration::from_millis(5));
    ///     });
    ///     waiter.join().unwrap();
    ///     drop(held);
    /// });
    /// ```
    ///
    /// # Panics
    ///
    /// If the caller already holds this lock.
    pub fn lock_timeout(&self, timeout: Duration) -> Result<MutexGuard<'_, T>, LockTimeout> {
        // From queueing for the lock to releasing it: a section (an
        // overflow of the holder aborts rather than keep the lock forever).
        let section = scheduler::Section::enter();
        let me = current_actor().unwrap_or_else(|| Owner::Thread(std::thread::current().id()));
        {
            let mut st = self.core.state.lock();
            if st.owner.is_none() {
                st.owner = Some(me);
                return Ok(self.guard(section));
            }
            if st.owner == Some(me) {
                drop(st);
                panic!("smarm: Mutex::lock by its holder would deadlock: drop the guard first");
            }
        }
        let deadline = crate::clock::instant().checked_add(timeout);
        let granted = match me {
            Owner::Actor(..) => self.wait_as_actor(me, deadline),
            Owner::Thread(id) => self.wait_as_thread(me, id, deadline),
        };
        // Granted wins even if the deadline passed too.
        if granted {
            Ok(self.guard(section))
        } else {
            Err(LockTimeout { waited: timeout })
        }
    }

    /// Acquire the lock if it is free right now; never waits.
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        let me = current_actor().unwrap_or_else(|| Owner::Thread(std::thread::current().id()));
        let section = scheduler::Section::enter();
        let mut st = self.core.state.lock();
        if st.owner.is_some() {
            return None;
        }
        st.owner = Some(me);
        Some(self.guard(section))
    }

    /// Number of waiters queued for the lock (for introspection).
    pub fn waiting(&self) -> usize {
        self.core.state.lock().waiters.len()
    }

    /// The guard of a lock just granted, listed as held by the running
    /// actor (released poisoned if a stack overflow ends it); `section`,
    /// open since the caller asked for the lock, closes once it is listed.
    fn guard(&self, section: scheduler::Section) -> MutexGuard<'_, T> {
        let lock = &self.core.state as *const RawMutex<State> as usize;
        scheduler::with_worker(|w, _| scheduler::hold_lock(w, lock, release_poisoned));
        drop(section);
        MutexGuard {
            mutex: self,
            _not_send: PhantomData,
        }
    }

    /// Whether an actor holding the lock was ended by a stack overflow, so
    /// the value may be half-updated. The lock still works: it went to the
    /// next waiter. Like `std::sync::Mutex::is_poisoned`, but locking a
    /// poisoned smarm mutex does not fail.
    pub fn is_poisoned(&self) -> bool {
        self.core.state.lock().poisoned
    }

    /// Clear the poisoned mark, once the value is known to be consistent.
    pub fn clear_poison(&self) {
        self.core.state.lock().poisoned = false;
    }

    /// An actor's wait for the lock, queued: whether it was granted.
    fn wait_as_actor(&self, me: Owner, deadline: Option<Instant>) -> bool {
        let mut waiter = LockWait {
            core: &self.core,
            queued: Queued {
                core: &self.core,
                me,
                armed: false,
            },
        };
        scheduler::bounded_wait(
            "Mutex::lock",
            &mut waiter,
            deadline.map(Deadline::At),
            false,
        )
    }

    /// A plain thread's wait for the lock (lock::thread_wait): whether it
    /// was granted.
    fn wait_as_thread(&self, me: Owner, id: ThreadId, deadline: Option<Instant>) -> bool {
        self.core.state.lock().waiters.push_back(Waiter::Thread {
            id,
            thread: std::thread::current(),
        });
        // Queued: the unlock that grants the lock unparks this thread.
        crate::lock::thread_wait::wait_until(deadline, |expired| {
            let mut st = self.core.state.lock();
            if st.owner == Some(me) {
                return Some(true);
            }
            if expired {
                st.waiters.retain(|w| w.owner() != me);
                return Some(false);
            }
            None
        })
    }
}

impl<T: Default> Default for Mutex<T> {
    fn default() -> Self {
        Mutex::new(T::default())
    }
}

impl<T> std::fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.core.state.lock();
        f.debug_struct("Mutex")
            .field("locked", &st.owner.is_some())
            .field("waiting", &st.waiters.len())
            .finish()
    }
}

/// Hand the lock to the next waiter (FIFO), or unlock it.
fn release(state: &RawMutex<State>) {
    hand_over(&mut state.lock());
}

/// Release, for a holder ended by a stack overflow, the lock whose state
/// is at `lock` (registered by `MutexGuard`), marking it poisoned.
///
/// # Safety
///
/// `lock` must be the address of a live `RawMutex<State>` that the ended
/// actor held, released once.
unsafe fn release_poisoned(lock: usize) {
    // SAFETY: per the contract.
    let state = unsafe { &*(lock as *const RawMutex<State>) };
    let mut st = state.lock();
    st.poisoned = true;
    hand_over(&mut st);
}

/// Give the lock held under `st` to the next waiter, or unlock it.
fn hand_over(st: &mut State) {
    match st.waiters.pop_front() {
        Some(next) => {
            st.owner = Some(next.owner());
            next.wake(); // Leaf → Queue: allowed under the state lock
        }
        None => st.owner = None,
    }
}

/// An actor's side of the bounded-wait loop: `true` once it holds the
/// lock, `false` on a timeout. It keeps its place in the queue across
/// early wakes, updating the wait it is woken for.
struct LockWait<'a, T> {
    core: &'a Core<T>,
    /// Armed while this actor is queued.
    queued: Queued<'a, T>,
}

impl<T> BoundedWaiter for LockWait<'_, T> {
    const WAITS_ON: WaitingOn = WaitingOn::Lock;
    type Output = bool;

    fn ready(&mut self) -> Option<bool> {
        if !self.queued.armed {
            return None; // first pass: `register` takes a free lock
        }
        let granted = self.core.state.lock().owner == Some(self.queued.me);
        if granted {
            self.queued.armed = false;
        }
        granted.then_some(true)
    }

    fn timed_out(&mut self) -> Option<bool> {
        let mut st = self.core.state.lock();
        self.queued.armed = false;
        if st.owner == Some(self.queued.me) {
            return Some(true); // granted as the deadline passed
        }
        let me = self.queued.me;
        st.waiters.retain(|w| w.owner() != me);
        Some(false)
    }

    fn register(&mut self, wait: &Wait) -> Registered<bool> {
        let me = self.queued.me;
        let mut st = self.core.state.lock();
        if !self.queued.armed {
            if st.owner.is_none() {
                st.owner = Some(me);
                return Registered::Done(true);
            }
            st.waiters.push_back(Waiter::Actor(wait.token()));
            self.queued.armed = true;
            return Registered::Yes;
        }
        if st.owner == Some(me) {
            return Registered::Ready; // granted meanwhile
        }
        // Woken early: wait again from the same place in the queue.
        for w in st.waiters.iter_mut() {
            if w.owner() == me {
                *w = Waiter::Actor(wait.token());
            }
        }
        Registered::Yes
    }
}

/// A queued actor waiter's clean-up if its wait unwinds (a stop).
struct Queued<'a, T> {
    core: &'a Core<T>,
    me: Owner,
    armed: bool,
}

impl<T> Drop for Queued<'_, T> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let granted = {
            let mut st = self.core.state.lock();
            st.waiters.retain(|w| w.owner() != self.me);
            st.owner == Some(self.me)
        };
        if granted {
            release(&self.core.state); // never hold a lock for a dead waiter
        }
    }
}

/// Access to the value while the lock is held; releasing it hands the lock
/// to the next waiter.
pub struct MutexGuard<'a, T> {
    mutex: &'a Mutex<T>,
    /// Like std's guard, not `Send`: it stays with the actor that locked.
    _not_send: PhantomData<*const ()>,
}

impl<T> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard exists only while `owner` names its holder, so
        // no other guard (and no `&mut`) to the value exists.
        unsafe { &*self.mutex.core.value.get() }
    }
}

impl<T> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this the only borrow.
        unsafe { &mut *self.mutex.core.value.get() }
    }
}

impl<T> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        let state = &self.mutex.core.state;
        let lock = state as *const RawMutex<State> as usize;
        // Unlisted and released in one `with_worker` span: an overflow can
        // end the actor on neither side of the pair (`life.rs`).
        let on_actor = scheduler::with_worker(|w, _| {
            scheduler::unhold_lock(w, lock);
            release(state);
        });
        if on_actor.is_none() {
            release(state);
        }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}
