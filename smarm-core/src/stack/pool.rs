//! The stack pool: chunked `mmap`, guard installation, the mapping budget.

use super::StackError;
use super::{overflow, Stack, GUARD_SIZE};
use crate::mapping::Commit;
use crate::sync::{LockClass, RawMutex};

/// Stacks carved from one `mmap`.
const STACKS_PER_CHUNK: usize = 64;
/// Free stacks kept resident when a runtime finishes (I3).
const WARM_STACKS: usize = 256;
/// `madvise` advice that installs guard markers (Linux 6.13+).
const MADV_GUARD_INSTALL: libc::c_int = 102;
/// Mappings left to the rest of the process when budgeting ours.
const MAP_RESERVE: usize = 4096;

#[derive(Clone, Copy, PartialEq, Eq)]
enum GuardKind {
    /// Page-table guard markers: one mapping per chunk.
    Marker,
    /// `mprotect(PROT_NONE)`: two mappings per stack.
    Protect,
}

struct PoolState {
    free: Vec<*mut u8>,
    guard: Option<GuardKind>,
    /// Mappings this pool created (an upper bound of what it costs).
    maps_used: usize,
}

/// A pool of equally sized stacks, shared by the runtimes that use that
/// size.
pub(crate) struct StackPool {
    size: usize,
    state: RawMutex<PoolState>,
    max_map_count: usize,
}

// SAFETY: the raw pointers in `free` are addresses of stacks the pool owns
// (I2); they are only handed out under the pool lock.
unsafe impl Send for StackPool {}
// SAFETY: as above; all access goes through the RawMutex.
unsafe impl Sync for StackPool {}

impl StackPool {
    /// A pool of stacks of `size` usable bytes (rounded up to pages).
    pub(crate) fn new(size: usize) -> Self {
        let size = super::round_to_pages(size);
        StackPool {
            size,
            state: RawMutex::new(
                LockClass::Pool,
                PoolState {
                    free: Vec::new(),
                    guard: None,
                    maps_used: 0,
                },
            ),
            max_map_count: read_max_map_count(),
        }
    }

    /// Usable size of each stack.
    pub(crate) fn stack_size(&self) -> usize {
        self.size
    }

    /// Take a stack, mapping a new chunk if the free list is empty.
    pub(crate) fn take(&self) -> Result<Stack, StackError> {
        let mut state = self.state.lock();
        if let Some(base) = state.free.pop() {
            return Ok(Stack {
                base,
                size: self.size,
            });
        }
        self.grow(&mut state)?;
        match state.free.pop() {
            Some(base) => Ok(Stack {
                base,
                size: self.size,
            }),
            None => Err(StackError::OutOfMemory {
                stack_size: self.size,
            }),
        }
    }

    /// Return a stack no actor runs on any more (I2).
    pub(crate) fn give_back(&self, stack: Stack) {
        debug_assert_eq!(stack.size, self.size);
        self.state.lock().free.push(stack.base);
    }

    /// Move up to `n` stacks into `out` under one lock hold (a scheduler's
    /// cache refill), mapping a chunk if the pool is empty.
    pub(crate) fn take_batch(&self, n: usize, out: &mut Vec<Stack>) -> Result<(), StackError> {
        let mut state = self.state.lock();
        if state.free.is_empty() {
            self.grow(&mut state)?;
        }
        let keep = state.free.len().saturating_sub(n);
        out.extend(state.free.drain(keep..).map(|base| Stack {
            base,
            size: self.size,
        }));
        Ok(())
    }

    /// Return many stacks under one lock hold (a scheduler's cache spill).
    pub(crate) fn give_back_batch(&self, stacks: impl Iterator<Item = Stack>) {
        let mut state = self.state.lock();
        state.free.extend(stacks.map(|s| s.base));
    }

    /// Return the pages of free stacks beyond the warm set to the kernel
    /// (I3). Called when a runtime finishes.
    pub(crate) fn trim(&self) {
        let state = self.state.lock();
        let n = state.free.len();
        if n <= WARM_STACKS {
            return;
        }
        // The oldest entries are at the front (take pops from the back).
        for &base in &state.free[..n - WARM_STACKS] {
            // SAFETY: `base..base+size` is a free stack of ours (I2): no
            // actor runs on it, so discarding its contents is unobservable.
            unsafe {
                libc::madvise(base.cast(), self.size, libc::MADV_DONTNEED);
            }
        }
    }

    fn grow(&self, state: &mut PoolState) -> Result<(), StackError> {
        let stride = self.size + GUARD_SIZE;
        let len = stride * STACKS_PER_CHUNK;
        let cost = match state.guard {
            Some(GuardKind::Protect) => 2 * STACKS_PER_CHUNK,
            _ => 1,
        };
        let budget = self.max_map_count.saturating_sub(MAP_RESERVE);
        if state.maps_used + cost > budget {
            return Err(StackError::MapLimit {
                max_map_count: self.max_map_count,
            });
        }
        let mapped = match crate::mapping::map(len, Commit::Lazily) {
            Ok(mapped) => mapped,
            Err(err) => {
                return Err(
                    if err.raw_os_error() == Some(libc::ENOMEM) && state.maps_used > 0 {
                        StackError::MapLimit {
                            max_map_count: self.max_map_count,
                        }
                    } else {
                        StackError::OutOfMemory {
                            stack_size: self.size,
                        }
                    },
                )
            }
        };
        let chunk = mapped.as_ptr();
        let kind = match state.guard {
            Some(kind) => kind,
            None => {
                let kind = probe_guard_kind(chunk);
                state.guard = Some(kind);
                kind
            }
        };
        let batched = kind == GuardKind::Marker && install_markers_batched(chunk, stride);
        for i in 0..STACKS_PER_CHUNK {
            if batched {
                break;
            }
            let guard = chunk.wrapping_add(i * stride);
            // SAFETY: `guard..guard+GUARD_SIZE` lies inside the chunk we
            // just mapped and nothing uses it yet.
            let rc = unsafe {
                match kind {
                    GuardKind::Marker => {
                        libc::madvise(guard.cast(), GUARD_SIZE, MADV_GUARD_INSTALL)
                    }
                    GuardKind::Protect => libc::mprotect(guard.cast(), GUARD_SIZE, libc::PROT_NONE),
                }
            };
            if rc != 0 {
                // SAFETY: unmapping the chunk we just mapped; no stack of it
                // has been handed out.
                unsafe { crate::mapping::unmap(mapped, len) };
                return Err(StackError::MapLimit {
                    max_map_count: self.max_map_count,
                });
            }
        }
        state.maps_used += if kind == GuardKind::Protect {
            2 * STACKS_PER_CHUNK
        } else {
            1
        };
        overflow::register_chunk(chunk as usize, len, stride);
        // Push in reverse so the lowest stack is handed out first.
        for i in (0..STACKS_PER_CHUNK).rev() {
            state.free.push(chunk.wrapping_add(i * stride + GUARD_SIZE));
        }
        Ok(())
    }
}

/// Install the guard markers of a whole chunk with one
/// `process_madvise(2)` call (half the cost of one `madvise` per guard).
/// `false` if the kernel refuses it; the caller then installs them one by
/// one.
fn install_markers_batched(chunk: *mut u8, stride: usize) -> bool {
    static PIDFD: std::sync::OnceLock<libc::c_int> = std::sync::OnceLock::new();
    // SAFETY: pidfd_open on our own pid; the fd is kept for the process's
    // life (one per process, in the OnceLock).
    let pidfd = *PIDFD.get_or_init(|| unsafe {
        libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) as libc::c_int
    });
    if pidfd < 0 {
        return false;
    }
    let iov: [libc::iovec; STACKS_PER_CHUNK] = std::array::from_fn(|i| libc::iovec {
        iov_base: chunk.wrapping_add(i * stride).cast(),
        iov_len: GUARD_SIZE,
    });
    // SAFETY: every iovec names the guard page of a stack in the chunk we
    // just mapped, and nothing uses the chunk yet; the kernel only reads
    // `iov`, which outlives the call.
    let done = unsafe {
        libc::syscall(
            libc::SYS_process_madvise,
            pidfd,
            iov.as_ptr(),
            STACKS_PER_CHUNK,
            MADV_GUARD_INSTALL,
            0,
        )
    };
    done == (STACKS_PER_CHUNK * GUARD_SIZE) as libc::c_long
}

/// Does this kernel support guard markers? Tried on the first guard page
/// of the first chunk.
fn probe_guard_kind(chunk: *mut u8) -> GuardKind {
    // SAFETY: the first page of a chunk we own and have not handed out;
    // the marker is what `grow` installs there next anyway.
    let rc = unsafe { libc::madvise(chunk.cast(), GUARD_SIZE, MADV_GUARD_INSTALL) };
    if rc == 0 {
        GuardKind::Marker
    } else {
        GuardKind::Protect
    }
}

/// `vm.max_map_count`, or the kernel default if it cannot be read.
fn read_max_map_count() -> usize {
    std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(65_530)
}
