//! The context switch: save one stack's callee-saved registers, load
//! another's. One assembly backend per target.
//!
//! # Design
//!
//! A suspended context is a single stack pointer. [`switch`] pushes the
//! callee-saved registers of the System V ABI onto the current stack,
//! stores the stack pointer through `save`, loads `load` and pops the
//! registers saved there, then returns into the other context. The layout
//! follows corosensei and Boost.Context. The x87 control word and MXCSR
//! are not switched: smarm never changes them and treats them as
//! process-wide, so an actor that does must restore them before it blocks.
//!
//! A fresh stack is prepared by [`init_stack`] so that the first switch
//! into it "returns" into a trampoline, which calls the entry function with
//! one pointer argument. The entry function never returns: it finishes by
//! switching away for the last time.
//!
//! # Invariants
//!
//! - (I1) Panics never cross a switch: the entry function catches every
//!   unwind at the actor's base frame.
//! - (I2) A context is resumed by at most one thread at a time, and only
//!   after the switch that suspended it has completed (the slot word's
//!   state machine and the run queues' locks order the handoff).
//! - (I3) While an actor runs, its stack's link points at the save cell of
//!   the scheduler running it (`set_link` before every resume, by the
//!   loop and by a direct handoff), so the trampoline's call frame
//!   information leads an unwinder from the actor's frames into that
//!   scheduler's (gdb's `bt`, `std::backtrace`, a panic's own unwind
//!   stops earlier, at the entry frame's catch). Frame-pointer unwinders
//!   stop at the trampoline (its saved rbp is 0).
//!
//! # Safety
//!
//! `switch` trusts that `load` was produced by `switch` or `init_stack` on
//! a stack that is still mapped and not running anywhere.

#[cfg(target_arch = "x86_64")]
mod x86_64;
#[cfg(target_arch = "x86_64")]
pub(crate) use x86_64::{init_stack, resume, set_link, switch};

#[cfg(not(target_arch = "x86_64"))]
compile_error!("smarm's context switch is implemented for x86_64 only");

/// The function a fresh context starts in. It must never return.
pub(crate) type EntryFn = unsafe extern "C" fn(arg: *mut u8) -> !;
