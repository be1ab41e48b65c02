//! Supervisors: actors that start children, watch them, and restart them
//! when they exit, as Erlang/OTP's `supervisor` does. Supervisors nest into
//! trees; a subtree that keeps failing gives up and lets its own supervisor
//! decide.
//!
//! ```
//! use smarm::supervisor::{self, ChildSpec, Restart, Strategy, SupFlags};
//! use std::time::Duration;
//!
//! smarm::run(|| {
//!     let (seen_tx, seen_rx) = smarm::channel::<&str>();
//!     let flags = SupFlags::new(Strategy::OneForOne).intensity(3, Duration::from_secs(5));
//!     let sup = supervisor::start(
//!         flags,
//!         vec![
//!             ChildSpec::actor("flaky", move || {
//!                 seen_tx.send("started").unwrap();
//!                 smarm::sleep(Duration::from_millis(5));
//!                 panic!("flaky worker failed");
//!             })
//!             .restart(Restart::Transient),
//!         ],
//!     )
//!     .unwrap();
//!     // Started, failed, restarted: twice in a row.
//!     for _ in 0..3 {
//!         assert_eq!(seen_rx.recv().unwrap(), "started");
//!     }
//!     assert_eq!(sup.which_children().unwrap()[0].id, "flaky");
//!     sup.shutdown().unwrap();
//! });
//! ```
//!
//! | You call | The supervisor does |
//! |---|---|
//! | [`start`], [`start_link`] | starts each child in order (its [`ChildSpec`]'s start function, in the supervisor); if one fails, stops the ones started (in reverse) and fails with [`StartError::Child`] |
//! | a child exits | [`Restart`]: permanent children always restart, transient ones after a failure (a panic, a stop by a link, a kill; not a normal exit, a stop or a shutdown), temporary ones never (and are forgotten); the [`Strategy`] says which siblings restart with it |
//! | more than `intensity` restarts within `period` | reports that it gives up ([`SupervisorAction::GaveUp`](smarm_core::report::SupervisorAction::GaveUp)), stops every child in reverse order and exits with [`DownReason::Shutdown`](smarm_core::DownReason::Shutdown), as OTP's supervisor: abnormal for its links, no failure for its own supervisor (a transient supervisor is not restarted), no crash report |
//! | [`SupervisorRef::start_child`] | starts one more child, last in order |
//! | [`SupervisorRef::terminate_child`] | stops that child by its [`Shutdown`] policy and forgets it |
//! | [`SupervisorRef::which_children`] | lists the children in start order, with their pids (and, for a restart delayed by [`ChildSpec::backoff`], when it is due) |
//! | [`SupervisorRef::drain`] | stops every child in reverse start order, letting each server handle its mailbox first, then exits |
//! | [`SupervisorRef::shutdown`], a stop request, its parent exiting | stops every child in reverse start order, each by its [`Shutdown`] policy, then exits |
//!
//! For many children of one kind started on demand, each with its own
//! argument (a connection per accepted socket), use a
//! [`DynamicSupervisor`] (Erlang's `simple_one_for_one`): one template,
//! a `max_children` limit, and a shutdown that stops all children at once.
//!
//! A supervisor is a gen_server, as OTP's is: it traps exits and links its
//! children to itself, so each child's exit reaches its
//! [`handle_exit`](crate::gen_server::GenServer::handle_exit); the requests
//! of a [`SupervisorRef`] are calls; its `terminate` stops the children.
//!
//! # Stopping a child
//!
//! A child is stopped with exit signals, as OTP's supervisor stops it
//! ([`exit`](smarm_core::exit)): `shutdown`, which a child that does not
//! trap exits acts on at its next safepoint, unwinding and running its
//! destructors (and a gen_server's `terminate`), and which a trapping child
//! is told of; then, past the child's [`Shutdown::Timeout`], `kill`, which
//! it cannot trap. A child that has not exited a timeout after its kill
//! keeps it pending and the supervisor moves on (smarm cannot end an actor
//! that never reaches a safepoint; a loop of pure computation should call
//! `check!()`).

mod dynamic;
mod handle;
mod restart;
mod server;
mod shutdown;
mod spec;

pub use crate::gen_server::StartError;
pub use dynamic::{
    DynamicName, DynamicServer, DynamicSpec, DynamicStartFn, DynamicSupervisor, StartChildError,
};
pub use handle::{ChildInfo, ChildRef, SupervisorRef, start, start_link};
pub use spec::{Backoff, ChildKind, ChildSpec, Restart, Shutdown, StartFn, Strategy, SupFlags};
