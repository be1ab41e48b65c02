//! Anonymous memory mappings: the one place smarm calls `mmap` and
//! `munmap` (actor stacks, the slot table's segments, signal stacks).
//!
//! # Safety
//!
//! [`map`] returns a fresh private mapping nothing else refers to;
//! [`unmap`] is `unsafe` because the caller must own the whole range and
//! hold no reference into it.

use std::io;
use std::ptr::NonNull;

/// How a new mapping's pages are committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Commit {
    /// On first touch, without reserving swap (`MAP_NORESERVE`): stacks,
    /// whose pages are mostly never touched.
    Lazily,
    /// On first touch.
    OnTouch,
    /// All at once (`MAP_POPULATE`): memory that is used densely, where a
    /// fault per page costs more than one call.
    Now,
}

/// Map `len` bytes of zeroed, readable and writable private memory.
pub(crate) fn map(len: usize, commit: Commit) -> io::Result<NonNull<u8>> {
    let extra = match commit {
        Commit::Lazily => libc::MAP_NORESERVE,
        Commit::OnTouch => 0,
        Commit::Now => libc::MAP_POPULATE,
    };
    // SAFETY: a fresh anonymous private mapping at an address the kernel
    // picks; no existing memory is touched.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | extra,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(crate::errno::last_os_error());
    }
    NonNull::new(p.cast()).ok_or_else(|| io::Error::from(io::ErrorKind::OutOfMemory))
}

/// Unmap `len` bytes at `ptr`.
///
/// # Safety
///
/// `ptr..ptr + len` must be (part of) a mapping made by [`map`] that the
/// caller owns, with no reference into it left alive.
pub(crate) unsafe fn unmap(ptr: NonNull<u8>, len: usize) {
    // SAFETY: the caller owns the range and nothing refers into it.
    unsafe { libc::munmap(ptr.as_ptr().cast(), len) };
}

/// Replace `len` bytes at `ptr` with a fresh lazily committed mapping, in
/// place (`MAP_FIXED`): the range never becomes unmapped, and the kernel
/// frees the page tables that mapped the old contents. Returns whether it
/// worked.
///
/// # Safety
///
/// `ptr..ptr + len` must be (part of) a [`Commit::Lazily`] mapping made by
/// [`map`] that the caller owns, with nothing in it in use: its contents,
/// and whatever `madvise` state it had (guard markers), are gone.
pub(crate) unsafe fn replace_lazily(ptr: *mut u8, len: usize) -> bool {
    // SAFETY: the caller owns the range and nothing in it is in use;
    // MAP_FIXED over our own range replaces it atomically.
    let p = unsafe {
        libc::mmap(
            ptr.cast(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED,
            -1,
            0,
        )
    };
    p == ptr.cast()
}

/// How many of the pages of `start..start + len` (page-aligned) are
/// resident in memory (`mincore`); `None` if any of the range is not
/// mapped. Any range may be asked about: nothing in it is touched.
pub(crate) fn resident_pages(start: usize, len: usize) -> Option<u64> {
    let pages = len.div_ceil(crate::stack::PAGE_SIZE);
    let mut resident = vec![0u8; pages];
    // SAFETY: `mincore` only reads the page tables of the range (failing
    // with ENOMEM where it is unmapped) and writes one byte per page into
    // `resident`, which has `pages` bytes.
    let rc = unsafe { libc::mincore(start as *mut libc::c_void, len, resident.as_mut_ptr()) };
    (rc == 0).then(|| resident.iter().filter(|&&b| b & 1 != 0).count() as u64)
}
