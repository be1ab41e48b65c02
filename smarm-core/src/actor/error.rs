//! `SpawnError`: why an actor could not be started.

use thiserror::Error;

/// Why [`try_spawn`](crate::try_spawn) could not start an actor.
///
/// ```
/// use smarm::runtime::{self, Config};
///
/// runtime::init(Config::default().max_actors(2)).run(|| {
///     // The root is one actor; one more fits.
///     let a = smarm::try_spawn(|| smarm::sleep(std::time::Duration::from_millis(20)));
///     assert!(a.is_ok());
///     let b = smarm::try_spawn(|| {});
///     assert!(matches!(b, Err(smarm::SpawnError::AtCapacity { max_actors: 2 })));
/// });
/// ```
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum SpawnError {
    /// Every slot holds an actor that is alive or finished but not joined.
    #[error(
        "smarm: cannot spawn: the runtime already holds max_actors = {max_actors} actors \
         (alive, or finished with a JoinHandle not yet joined or dropped); raise \
         runtime::Config::max_actors or join finished actors"
    )]
    AtCapacity {
        /// The configured limit.
        max_actors: usize,
    },
    /// A new stack chunk would exceed the process's memory-mapping budget.
    #[error(
        "smarm: cannot spawn: mapping more actor stacks would exceed the kernel limit \
         vm.max_map_count = {max_map_count}; keep fewer actors alive at once"
    )]
    MapLimit {
        /// The kernel's `vm.max_map_count` as read at start.
        max_map_count: usize,
    },
    /// The kernel refused memory for a new segment of the actor table.
    #[error(
        "smarm: cannot spawn: out of memory growing the actor table by {bytes} bytes; keep \
         fewer actors alive or lower runtime::Config::max_actors"
    )]
    TableOutOfMemory {
        /// The size of the segment that could not be mapped.
        bytes: usize,
    },
    /// The kernel refused memory for a new stack chunk.
    #[error(
        "smarm: cannot spawn: out of memory mapping {stack_size}-byte actor stacks; keep \
         fewer actors alive or lower runtime::Config::stack_size"
    )]
    OutOfMemory {
        /// The configured stack size.
        stack_size: usize,
    },
    /// A heap limit was asked for ([`Builder::max_heap_size`](crate::Builder::max_heap_size))
    /// and the actor could not be given a heap account.
    #[error(
        "smarm: cannot spawn with a heap limit: no heap account could be made for the actor \
         (install PreemptingAlloc::system().with_heap_accounting() as the #[global_allocator]; \
         if it is installed, memory for the account table ran out)"
    )]
    NoHeapAccount,
    /// A spawn from outside the runtime (`RuntimeHandle::spawn`) found it
    /// not running, or its root already finished.
    #[error(
        "smarm: cannot spawn through a RuntimeHandle: the runtime is not running or its root has \
         finished; spawn while the run's root is alive (Runtime::start), or from an actor"
    )]
    NotRunning,
}

impl From<crate::slot::SlotError> for SpawnError {
    fn from(e: crate::slot::SlotError) -> Self {
        use crate::slot::SlotError;
        match e {
            SlotError::AtCapacity { max_actors } => SpawnError::AtCapacity { max_actors },
            SlotError::TableOutOfMemory { bytes } => SpawnError::TableOutOfMemory { bytes },
        }
    }
}

impl From<crate::stack::StackError> for SpawnError {
    fn from(e: crate::stack::StackError) -> Self {
        use crate::stack::StackError;
        match e {
            StackError::MapLimit { max_map_count } => SpawnError::MapLimit { max_map_count },
            StackError::OutOfMemory { stack_size } => SpawnError::OutOfMemory { stack_size },
        }
    }
}
