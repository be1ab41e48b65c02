//! The asymmetric fence: a full memory barrier forced on every thread of
//! the process (Linux `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`), so a
//! rare side of a Dekker-style protocol can pay for both, and the frequent
//! side needs only a compiler fence.
//!
//! The pairing: the frequent side stores, [`light`], then loads; the rare
//! side stores, [`heavy`], then loads. Either the frequent side's store is
//! visible to the rare side's load, or the frequent side's load sees the
//! rare side's store; both cannot miss. Under loom, [`light`] is a `SeqCst`
//! fence, which is what `heavy` makes of it.
//!
//! # Safety
//!
//! The only unsafe code is the `membarrier` syscall, which takes plain
//! integers and touches no memory of ours.

/// `MEMBARRIER_CMD_PRIVATE_EXPEDITED`.
#[cfg(all(target_os = "linux", not(loom)))]
const PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
/// `MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED`.
#[cfg(all(target_os = "linux", not(loom)))]
const REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

/// The frequent side's fence: keeps the compiler from moving its store
/// past its load; [`heavy`] supplies the hardware barrier.
#[inline(always)]
pub(crate) fn light() {
    #[cfg(not(loom))]
    std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
    #[cfg(loom)]
    crate::loom::fence(crate::loom::Ordering::SeqCst);
}

/// Whether [`heavy`] is available: registers the process for expedited
/// barriers on first use. `false` on kernels without them (before 4.14) or
/// other targets: callers then do without the protocol.
pub(crate) fn available() -> bool {
    #[cfg(all(target_os = "linux", not(loom)))]
    {
        static REGISTERED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *REGISTERED.get_or_init(|| {
            // SAFETY: membarrier takes a command and flags; no pointers.
            unsafe { libc::syscall(libc::SYS_membarrier, REGISTER_PRIVATE_EXPEDITED, 0) == 0 }
        })
    }
    #[cfg(loom)]
    {
        true
    }
    #[cfg(all(not(target_os = "linux"), not(loom)))]
    {
        false
    }
}

/// The rare side's fence: a full barrier on every running thread of the
/// process. `false` if it could not be issued (then the protocol must not
/// proceed); only call it after [`available`] said `true`.
pub(crate) fn heavy() -> bool {
    #[cfg(all(target_os = "linux", not(loom)))]
    {
        // SAFETY: membarrier takes a command and flags; no pointers.
        unsafe { libc::syscall(libc::SYS_membarrier, PRIVATE_EXPEDITED, 0) == 0 }
    }
    #[cfg(loom)]
    {
        crate::loom::fence(crate::loom::Ordering::SeqCst);
        true
    }
    #[cfg(all(not(target_os = "linux"), not(loom)))]
    {
        false
    }
}
