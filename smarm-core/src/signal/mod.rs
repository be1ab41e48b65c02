//! Failure signals: monitors (one-way, one `Down` message) and links
//! (two-way: an abnormal exit stops the other side, or reaches it as an
//! [`Exit`] message when it traps exits), with Erlang's semantics.
//!
//! # Design
//!
//! Each slot's cold data holds, on first use, a `Signals` record: the
//! monitors watching the actor (each a one-shot sink for its `Down`: a
//! channel, or the watcher's own function), its links, its exit-trapping
//! sink, and the reason a link gave for stopping it. Registration takes the target's cold lock and checks the
//! target is still that incarnation and not finished; finalisation marks
//! the actor Done *before* taking the same lock to take the record. So a
//! registration either lands in the record finalisation takes, or sees Done
//! and delivers `NoProc` at once: no Down is lost or doubled.
//!
//! An exit is delivered to each linked actor: one that traps exits gets an
//! [`Exit`] message through its trapping sink; one that does not is stopped
//! (a cooperative unwind, like `request_stop`) if the exit was abnormal,
//! and its own exit then carries [`DownReason::Linked`], naming the linked
//! actor and its reason. A normal exit reaches only trapping actors.
//! Linking to a pid that is already gone delivers a `NoProc` exit at once.
//!
//! An exit signal ([`exit`], Erlang's `exit(Pid, Reason)`) needs no link:
//! it is delivered by the same rules, with the signal's own reason, and a
//! `kill` stops even a trapping actor (which then ends with
//! [`DownReason::Killed`]).
//!
//! # Invariants
//!
//! - (I1) Each `monitor` / `monitor_with` call yields exactly one `Down`
//!   (then a channel monitor's channel closes); `demonitor` before the
//!   exit yields none.
//! - (I2) Registrations and removals check the generation under the
//!   target's cold lock, so they never touch a later tenant of the slot.
//! - (I3) Messages are sent, sinks called, and `Sender`s dropped, outside
//!   every cold lock.

mod exit;
mod link;
mod monitor;
mod on_exit;
mod record;

pub use crate::slot::{DownReason, LinkedExit};
pub(crate) use exit::send_exit_signal;
pub use exit::{ExitSignal, exit, exit_from_node};
pub use link::{Ended, Exit, link, spawn_link, trap_exit, trap_exit_with, unlink};
pub(crate) use monitor::prearranged as prearranged_monitor;
pub use monitor::{Down, Monitor, MonitorId, MonitorRef, demonitor, monitor, monitor_with};
pub use on_exit::on_exit;

use link::deliver_exit;
pub(crate) use record::{
    Signals, erase_signals, notify_exit, signals_of, take_signals, with_live_signals,
};
