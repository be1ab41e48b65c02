//! smarm-core: the smarm runtime.
//!
//! Stackful actors on a few scheduler threads that park on per-thread
//! futexes: spawning and cooperative stop, timers, channels and select, an
//! actor-aware Mutex, monitors and links, and IO that parks only the actor.
//! Users depend on the `smarm` facade, which re-exports this crate.

pub mod actor; //         spawn, Pid, JoinHandle, yield_now, request_stop
pub mod channel; //       channels and select
pub mod config; //        Config and its limits
mod context; //           the assembly context switch
pub mod ext; //           the extension surface smarm-otp builds on
pub mod introspect; //    snapshot, actor_info, tree
pub mod io; //            blocking pool, fd readiness, FdArm, net sockets
mod loom; //              the sync facade (loom or std)
mod park; //              scheduler park/wake coordination
pub mod runtime; //       run, Runtime, the termination verdict
mod scheduler; //         worker loop, run queues, preemption gate
pub mod signal; //        monitors, links, exit trapping
mod slot; //              slot table, state word, park/wake protocol
mod stack; //             mmap'ed stacks, guard pages, overflow report
pub mod sync; //          Mutex; internally futex, RawMutex, lock classes
pub mod time; //          sleep, message timers, the timer heap

pub use actor::{
    request_stop, self_pid, spawn, spawn_under, try_spawn, yield_now, Addressable, JoinError,
    JoinHandle, Pid, SpawnError,
};
pub use channel::{
    channel, select, select_timeout, try_select, try_select_timeout, Receiver, RecvError,
    RecvTimeoutError, Selectable, SendError, Sender,
};
pub use introspect::{
    actor_info, snapshot, tree, tree_from, ActorInfo, ActorState, RuntimeSnapshot, RuntimeTree,
    SchedulerStats, TreeNode,
};
pub use runtime::run;
pub use scheduler::{check_timeslice, NoPreempt, PreemptingAlloc};
pub use signal::{
    demonitor, link, monitor, spawn_link, trap_exit, unlink, Down, DownReason, Exit, Killed,
    Monitor, MonitorId,
};
pub use sync::mutex::{LockTimeout, Mutex, MutexGuard};
pub use time::sleep;
