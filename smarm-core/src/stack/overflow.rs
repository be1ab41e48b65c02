//! Stack-overflow handling: a `SIGSEGV`/`SIGBUS` handler on an alternate
//! signal stack that recognises our guard pages, names the actor, and
//! either ends that actor alone or aborts (see the module docs of `stack`
//! for when each happens and why it is sound).
//!
//! The handler is async-signal-safe: it reads atomics and `const`
//! thread-locals, calls the scheduler's recovery hook (which reads and
//! writes only its own thread's cells), formats into a stack buffer and
//! calls `write(2)` and `abort(3)`. To end the actor it rewrites the
//! interrupted context so that returning from the handler (`sigreturn`,
//! which also restores the signal mask and leaves the alternate stack)
//! resumes the scheduler's saved context instead of the faulting
//! instruction. A fault that is not in one of our guard pages is handed to
//! the previously installed handler (Rust's own thread-stack handler, or
//! the default action) by restoring it and returning, which re-runs the
//! faulting instruction.

use super::GUARD_SIZE;
use std::cell::Cell;
use std::sync::Once;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Most chunks the handler can recognise (64 stacks each: 4M stacks).
const MAX_CHUNKS: usize = 65_536;

struct ChunkRecord {
    base: AtomicUsize,
    len: AtomicUsize,
    stride: AtomicUsize,
}

#[allow(clippy::declare_interior_mutable_const)] // only used to build the array
const EMPTY_RECORD: ChunkRecord = ChunkRecord {
    base: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    stride: AtomicUsize::new(0),
};

static CHUNKS: [ChunkRecord; MAX_CHUNKS] = [EMPTY_RECORD; MAX_CHUNKS];
static CHUNK_COUNT: AtomicUsize = AtomicUsize::new(0);
static REGISTER: std::sync::Mutex<()> = std::sync::Mutex::new(());

std::thread_local! {
    /// The pid (index << 32 | generation) of the actor running on this
    /// thread, or 0. Written by the scheduler around every resume.
    static RUNNING: Cell<u64> = const { Cell::new(0) };
}

/// Record the actor now running on this thread (0 = none).
#[inline]
pub(crate) fn set_running_pid(bits: u64) {
    RUNNING.with(|r| r.set(bits));
}

/// Make a new chunk's guard pages known to the handler.
pub(crate) fn register_chunk(base: usize, len: usize, stride: usize) {
    let _serial = REGISTER.lock().unwrap_or_else(|e| e.into_inner());
    let i = CHUNK_COUNT.load(Ordering::Relaxed);
    if i >= MAX_CHUNKS {
        return; // beyond the table: such a fault is reported as a plain SIGSEGV
    }
    CHUNKS[i].base.store(base, Ordering::Relaxed);
    CHUNKS[i].len.store(len, Ordering::Relaxed);
    CHUNKS[i].stride.store(stride, Ordering::Relaxed);
    CHUNK_COUNT.store(i + 1, Ordering::Release);
}

fn in_guard_page(addr: usize) -> bool {
    let n = CHUNK_COUNT.load(Ordering::Acquire);
    CHUNKS[..n].iter().any(|c| {
        let base = c.base.load(Ordering::Relaxed);
        let len = c.len.load(Ordering::Relaxed);
        let stride = c.stride.load(Ordering::Relaxed);
        addr >= base && addr < base + len && (addr - base) % stride < GUARD_SIZE
    })
}

/// The scheduler's answer to "may the actor that overflowed on this thread
/// be ended here?": the stack pointer to resume (its scheduler's saved
/// context, the actor's end already recorded), or `None` to abort. Given
/// the fault address. Must be async-signal-safe.
pub(crate) type RecoverHook = fn(fault_addr: usize) -> Option<*mut u8>;

/// The installed `RecoverHook` (as a function address), or 0.
static RECOVER: AtomicUsize = AtomicUsize::new(0);

/// The executable's own code: up to 8 executable segments of the main
/// program, as (start, end) address pairs. An overflow whose faulting
/// instruction lies elsewhere (the C library's allocator or stdio, another
/// shared library) may have left that library's state half-updated, so it
/// aborts.
const MAX_TEXT: usize = 8;
#[allow(clippy::declare_interior_mutable_const)] // only used to build the array
const NO_RANGE: (AtomicUsize, AtomicUsize) = (AtomicUsize::new(0), AtomicUsize::new(0));
static TEXT: [(AtomicUsize, AtomicUsize); MAX_TEXT] = [NO_RANGE; MAX_TEXT];

/// Record the main program's executable segments in `TEXT`.
fn record_program_text() {
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: `dl_iterate_phdr` passes a valid info for each object;
        // `data` is the counter we passed in.
        let (info, n) = unsafe { (&*info, &mut *data.cast::<usize>()) };
        // The main program comes first, under an empty name.
        // SAFETY: `dlpi_phdr` points to `dlpi_phnum` program headers.
        let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
        for ph in phdrs {
            if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_X != 0 && *n < MAX_TEXT {
                let start = info.dlpi_addr as usize + ph.p_vaddr as usize;
                TEXT[*n].0.store(start, Ordering::Relaxed);
                TEXT[*n]
                    .1
                    .store(start + ph.p_memsz as usize, Ordering::Relaxed);
                *n += 1;
            }
        }
        1 // stop after the main program
    }
    let mut n = 0usize;
    // SAFETY: `each` matches the callback type and only touches `TEXT` and
    // the counter it is handed.
    unsafe { libc::dl_iterate_phdr(Some(each), (&raw mut n).cast()) };
}

/// Whether `pc` lies in the main program's own code.
fn in_program_text(pc: usize) -> bool {
    TEXT.iter().any(|(start, end)| {
        let (start, end) = (start.load(Ordering::Relaxed), end.load(Ordering::Relaxed));
        pc >= start && pc < end
    })
}

static INSTALL: Once = Once::new();
static mut PREV_SEGV: std::mem::MaybeUninit<libc::sigaction> = std::mem::MaybeUninit::zeroed();
static mut PREV_BUS: std::mem::MaybeUninit<libc::sigaction> = std::mem::MaybeUninit::zeroed();

/// Install the handler for the process (once), keeping the previous ones;
/// `recover` decides whether an overflowing actor can be ended alone.
pub(crate) fn install_overflow_handler(recover: RecoverHook) {
    INSTALL.call_once(|| {
        record_program_text();
        RECOVER.store(recover as usize, Ordering::Release);
        // SAFETY: (1) `sa` is fully initialised before use; (2) the PREV
        // statics are written here, inside `call_once`, before the handler
        // that reads them can run (it is installed by this same call);
        // (3) `handler` has the signature SA_SIGINFO requires.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = handler as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(libc::SIGSEGV, &sa, (&raw mut PREV_SEGV).cast());
            libc::sigaction(libc::SIGBUS, &sa, (&raw mut PREV_BUS).cast());
        }
    });
}

extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let addr = unsafe { (*info).si_addr() } as usize;
    if in_guard_page(addr) {
        let pid = RUNNING.with(|r| r.get());
        // SAFETY: for SA_SIGINFO handlers `ctx` is the interrupted
        // context, a `ucontext_t` the handler may read and rewrite.
        let uc = unsafe { &mut *ctx.cast::<libc::ucontext_t>() };
        let pc = uc.uc_mcontext.gregs[libc::REG_RIP as usize] as usize;
        if let Some(resume_sp) = recoverable(addr, pc) {
            report_overflow(pid, true);
            // Return into `context::resume(resume_sp)`: the scheduler's
            // saved context, on its own stack. The actor's stack is left
            // as it is, never to be run, reused or unmapped (I1).
            uc.uc_mcontext.gregs[libc::REG_RIP as usize] =
                crate::context::resume as *const () as usize as i64;
            uc.uc_mcontext.gregs[libc::REG_RDI as usize] = resume_sp as usize as i64;
            uc.uc_mcontext.gregs[libc::REG_RSP as usize] = resume_sp as usize as i64;
            return;
        }
        report_overflow(pid, false);
        // SAFETY: abort is async-signal-safe and does not return.
        unsafe { libc::abort() };
    }
    // Not ours: restore the previous disposition and return, so the fault
    // re-runs into it.
    // SAFETY: the PREV statics were initialised by `install_overflow_handler`
    // before this handler could be installed; sigaction is signal-safe.
    unsafe {
        let prev = if sig == libc::SIGBUS {
            (&raw const PREV_BUS)
        } else {
            (&raw const PREV_SEGV)
        };
        libc::sigaction(sig, prev.cast(), std::ptr::null_mut());
    }
}

/// The scheduler's resume point if the overflow at `addr`, by the
/// instruction at `pc`, may end only its actor.
fn recoverable(addr: usize, pc: usize) -> Option<*mut u8> {
    if !in_program_text(pc) {
        return None;
    }
    let hook = RECOVER.load(Ordering::Acquire);
    if hook == 0 {
        return None;
    }
    // SAFETY: a non-zero RECOVER was stored from a `RecoverHook` by
    // `install_overflow_handler`.
    let hook: RecoverHook = unsafe { std::mem::transmute::<usize, RecoverHook>(hook) };
    hook(addr)
}

/// Write "smarm: stack overflow in actor <0.I.G>" and what happens next to
/// stderr without allocating.
fn report_overflow(pid: u64, contained: bool) {
    let mut buf = [0u8; 256];
    let mut n = 0;
    let mut put = |bytes: &[u8]| {
        for &b in bytes {
            if n < buf.len() {
                buf[n] = b;
                n += 1;
            }
        }
    };
    put(b"\nsmarm: stack overflow in actor <0.");
    put(decimal(pid >> 32).as_bytes_trimmed());
    put(b".");
    put(decimal(pid & 0xffff_ffff).as_bytes_trimmed());
    if contained {
        put(b">; ending it (its stack is leaked). Raise runtime::Config::stack_size or Builder::stack_size, or reduce recursion.\n");
    } else {
        put(b">; raise runtime::Config::stack_size or reduce recursion. It could not be ended alone here (see the guide's Actors chapter): aborting.\n");
    }
    // SAFETY: `buf[..n]` is initialised memory we own; write(2) is
    // async-signal-safe.
    unsafe {
        libc::write(libc::STDERR_FILENO, buf.as_ptr().cast(), n);
    }
}

struct Decimal {
    digits: [u8; 20],
    start: usize,
}

impl Decimal {
    fn as_bytes_trimmed(&self) -> &[u8] {
        &self.digits[self.start..]
    }
}

fn decimal(mut v: u64) -> Decimal {
    let mut d = Decimal {
        digits: [b'0'; 20],
        start: 19,
    };
    let mut i = 20;
    loop {
        i -= 1;
        d.digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    d.start = i;
    d
}

/// An alternate signal stack this thread installed (freed on drop).
pub(crate) struct AltStack {
    mapping: std::ptr::NonNull<u8>,
    len: usize,
}

impl Drop for AltStack {
    fn drop(&mut self) {
        let ss = libc::stack_t {
            ss_sp: std::ptr::null_mut(),
            ss_flags: libc::SS_DISABLE,
            ss_size: 0,
        };
        // SAFETY: disables this thread's own alt stack, before it is
        // unmapped below.
        unsafe { libc::sigaltstack(&ss, std::ptr::null_mut()) };
        // SAFETY: our mapping, no longer the alt stack; nothing refers to it.
        unsafe { crate::mapping::unmap(self.mapping, self.len) };
    }
}

/// Make sure this thread has an alternate signal stack (Rust gives its own
/// threads one; a foreign thread may not have it), so the handler can run
/// when the actor's stack is exhausted.
pub(crate) fn ensure_altstack() -> Option<AltStack> {
    // SAFETY: querying the current alt stack writes only into `old`.
    let mut old: libc::stack_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::sigaltstack(std::ptr::null(), &mut old) };
    if old.ss_flags & libc::SS_DISABLE == 0 {
        return None;
    }
    let len = 64 * 1024;
    let mapping = crate::mapping::map(len, crate::mapping::Commit::OnTouch).ok()?;
    let ss = libc::stack_t {
        ss_sp: mapping.as_ptr().cast(),
        ss_flags: 0,
        ss_size: len,
    };
    // SAFETY: `ss` describes the mapping we own for this thread's lifetime
    // (the returned AltStack unmaps it only after disabling it).
    unsafe { libc::sigaltstack(&ss, std::ptr::null_mut()) };
    Some(AltStack { mapping, len })
}
