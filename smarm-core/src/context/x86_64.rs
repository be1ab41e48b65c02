//! x86_64 System V context switch.
//!
//! Frame saved by [`switch`], from the saved stack pointer upward:
//! `r15 r14 r13 r12 rbx rbp <return address>`. A fresh stack holds the
//! same frame with the entry function in r13, its argument in r12 and the
//! trampoline as the return address.

use super::EntryFn;
use core::arch::naked_asm;

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
        "pop r15",
        "pop r14",
        "pop r13",
        "pop r12",
        "pop rbx",
        "pop rbp",
        "ret",
    )
}

/// Resume the context whose stack pointer is `load` without saving the
/// current one: the second half of [`switch`]. The stack-overflow handler
/// returns into it, with `load` in rdi, to leave an actor's exhausted stack
/// for good.
///
/// # Safety
///
/// As `switch`'s `load`; the current context is abandoned. (Its pops
/// mirror `switch`'s on purpose: `switch` stays one straight run of
/// instructions, without a jump into this.)
#[unsafe(naked)]
pub(crate) unsafe extern "C" fn resume(load: *mut u8) -> ! {
    naked_asm!(
        "mov rsp, rdi",
        "pop r15",
        "pop r14",
        "pop r13",
        "pop r12",
        "pop rbx",
        "pop rbp",
        "ret",
    )
}

/// First code run on a fresh stack: call `entry(arg)` from r13/r12 with the
/// stack 16-byte aligned. `entry` never returns; `ud2` traps if it does.
#[unsafe(naked)]
unsafe extern "C" fn trampoline() {
    naked_asm!("mov rdi, r12", "call r13", "ud2")
}

/// Prepare the stack whose highest address is `top` so that switching to
/// the returned stack pointer calls `entry(arg)`.
///
/// # Safety
///
/// `top` must be 16-byte aligned, and the 64 bytes below it must be
/// writable memory owned by the caller (the top of a fresh actor stack).
pub(crate) unsafe fn init_stack(top: *mut u8, entry: EntryFn, arg: *mut u8) -> *mut u8 {
    debug_assert_eq!(top as usize % 16, 0, "stack top must be 16-byte aligned");
    let frame = top.cast::<usize>();
    // After `switch` pops six registers and `ret`s into the trampoline, rsp
    // equals `top`, so the trampoline's `call` runs with rsp % 16 == 0 as
    // the ABI requires.
    let words: [usize; 7] = [
        0,                                // r15
        0,                                // r14
        entry as usize,                   // r13: entry function
        arg as usize,                     // r12: its argument
        0,                                // rbx
        0,                                // rbp: frame chain ends here
        trampoline as *const () as usize, // return address
    ];
    // SAFETY: the caller guarantees the 64 bytes below `top` are writable
    // and ours; 7 words = 56 bytes, written downward from `top - 8`.
    unsafe {
        let base = frame.sub(words.len());
        for (i, w) in words.iter().enumerate() {
            base.add(i).write(*w);
        }
        base.cast::<u8>()
    }
}
