//! x86_64 System V context switch.
//!
//! Frame saved by [`switch`], from the saved stack pointer upward:
//! `r15 r14 r13 r12 rbx rbp <return address>`. A fresh stack holds the
//! same frame with the entry function in r13, its argument in r12 and the
//! trampoline as the return address, below two words at the top of the
//! stack: a pad and the **link**, the address of the cell where the
//! context that runs the actor (its scheduler) saved its stack pointer
//! ([`set_link`], rewritten at every resume: an actor migrates between
//! schedulers).
//!
//! The trampoline's call frame information says that its caller is that
//! saved context: its canonical frame address is the saved stack pointer
//! read through the link, plus the seven words `switch` pushed, and the
//! registers `switch` saved are found there. So an unwinder (gdb's `bt`,
//! `perf --call-graph dwarf`, `std::backtrace`) walks from the actor's
//! frames through `actor_entry` and the trampoline into the scheduler's
//! `run_actor` and on.
//!
//! The trampoline is also marked a signal frame (`.cfi_signal_frame`).
//! gdb refuses a caller whose frame address is below its callee's
//! ("previous frame inner to this frame (corrupt stack?)"), which is
//! what an actor stack mapped above its scheduler thread's stack looks
//! like; it allows that across a signal frame, as for a handler on an
//! alternate signal stack. gdb shows the switch as `<signal handler
//! called>`. An unwinder looks up the caller of a signal frame at the
//! return address itself rather than the byte before it: that address
//! is the instruction after a `switch` call, inside the same function,
//! and the trampoline's own `call` is followed by its `ud2`, so both
//! lookups find the function they should.

use super::EntryFn;
use core::arch::naked_asm;

/// The second half of a switch, once rsp holds the saved stack pointer of
/// the context to resume: pop the registers `switch` pushed (the module
/// docs' frame) and return into that context.
macro_rules! restore_and_return {
    () => {
        "pop r15\npop r14\npop r13\npop r12\npop rbx\npop rbp\nret"
    };
}

/// Save the current context's stack pointer through `save` and resume the
/// context whose stack pointer is `load`.
///
/// # Safety
///
/// `save` must be valid for a pointer write. `load` must have been stored by
/// a previous `switch` or returned by [`init_stack`], on a stack that is
/// still mapped and that no thread is running on (context (I2)).
#[unsafe(naked)]
pub(crate) unsafe extern "C" fn switch(save: *mut *mut u8, load: *mut u8) {
    naked_asm!(
        "push rbp",
        "push rbx",
        "push r12",
        "push r13",
        "push r14",
        "push r15",
        "mov [rdi], rsp",
        "mov rsp, rsi",
        restore_and_return!(),
    )
}

/// Resume the context whose stack pointer is `load` without saving the
/// current one: the second half of [`switch`]. The stack-overflow handler
/// returns into it, with `load` in rdi, to leave an actor's exhausted stack
/// for good.
///
/// # Safety
///
/// As `switch`'s `load`; the current context is abandoned. (Its pops are
/// `switch`'s, from one macro: `switch` stays one straight run of
/// instructions, without a jump into this.)
#[unsafe(naked)]
pub(crate) unsafe extern "C" fn resume(load: *mut u8) -> ! {
    naked_asm!("mov rsp, rdi", restore_and_return!(),)
}

/// First code run on a fresh stack: call `entry(arg)` from r13/r12 with the
/// stack 16-byte aligned. `entry` never returns; `ud2` traps if it does.
#[unsafe(naked)]
unsafe extern "C" fn trampoline() {
    naked_asm!(
        ".cfi_startproc",
        // gdb accepts a caller on another, lower stack only across a signal
        // frame (module docs).
        ".cfi_signal_frame",
        // CFA = *(*(rsp + 8)) + 56: DW_CFA_def_cfa_expression, 6 bytes,
        // DW_OP_breg7 (rsp) 8, DW_OP_deref, DW_OP_deref,
        // DW_OP_plus_uconst 56. rsp here is the top of the stack minus 16
        // (`init_stack`), so rsp + 8 holds the link.
        ".cfi_escape 0x0f, 0x06, 0x77, 0x08, 0x06, 0x06, 0x23, 0x38",
        // Where `switch` saved the scheduler's registers, below that CFA.
        ".cfi_offset rip, -8",
        ".cfi_offset rbp, -16",
        ".cfi_offset rbx, -24",
        ".cfi_offset r12, -32",
        ".cfi_offset r13, -40",
        ".cfi_offset r14, -48",
        ".cfi_offset r15, -56",
        "mov rdi, r12",
        "call r13",
        "ud2",
        ".cfi_endproc",
    )
}

/// The link word's place below the top of a stack (module docs).
const LINK: usize = 8;
/// The words above a fresh stack's switch frame: the link and a pad that
/// keeps the trampoline's call 16-byte aligned.
const TOP_WORDS: usize = 2;

/// Point the link of the stack whose highest address is `top` at `saved`,
/// the cell where the context that is about to run that stack saved (or
/// will save) its stack pointer (module docs).
///
/// # Safety
///
/// `top` must be the top of a stack prepared by [`init_stack`] that the
/// caller owns (the actor is not running elsewhere).
#[inline(always)]
pub(crate) unsafe fn set_link(top: *mut u8, saved: *const *mut u8) {
    // SAFETY: per the contract, the word `LINK` bytes below `top` is this
    // stack's link, inside the stack and owned by the caller.
    unsafe { top.sub(LINK).cast::<*const *mut u8>().write(saved) }
}

/// Prepare the stack whose highest address is `top` so that switching to
/// the returned stack pointer calls `entry(arg)`. Its link is null until
/// [`set_link`]: an unwinder stops at the trampoline.
///
/// # Safety
///
/// `top` must be 16-byte aligned, and the 80 bytes below it must be
/// writable memory owned by the caller (the top of a fresh actor stack).
pub(crate) unsafe fn init_stack(top: *mut u8, entry: EntryFn, arg: *mut u8) -> *mut u8 {
    debug_assert_eq!(top as usize % 16, 0, "stack top must be 16-byte aligned");
    // SAFETY: per the contract, the two words below `top` are ours.
    let frame = unsafe { top.cast::<usize>().sub(TOP_WORDS) };
    // After `switch` pops six registers and `ret`s into the trampoline, rsp
    // equals `frame` (`top` - 16), so the trampoline's `call` runs with
    // rsp % 16 == 0 as the ABI requires, and the link is at rsp + 8.
    let words: [usize; 7] = [
        0,                                // r15
        0,                                // r14
        entry as usize,                   // r13: entry function
        arg as usize,                     // r12: its argument
        0,                                // rbx
        0,                                // rbp: frame chain ends here
        trampoline as *const () as usize, // return address
    ];
    // SAFETY: the caller guarantees the 80 bytes below `top` are writable
    // and ours: the pad and the (null) link, then 7 words = 56 bytes below.
    unsafe {
        frame.write(0);
        frame.add(1).write(0);
        let base = frame.sub(words.len());
        for (i, w) in words.iter().enumerate() {
            base.add(i).write(*w);
        }
        base.cast::<u8>()
    }
}
