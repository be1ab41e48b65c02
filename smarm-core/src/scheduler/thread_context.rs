//! `ThreadContext`: what every scheduler thread of a runtime runs inside
//! for its whole life, installed by a layer above (the tokio context of
//! feature `tokio`), so the scheduler layer does not name it.

use std::sync::OnceLock;

/// Runs the scheduler loop it is given inside some thread-local context.
#[cfg_attr(not(feature = "tokio"), allow(dead_code))] // only tokio's installs one
pub(crate) type Enter = Box<dyn Fn(&mut dyn FnMut()) + Send + Sync>;

/// A runtime's scheduler-thread context (a runtime local): set once,
/// before the first run's threads start, and entered by each scheduler
/// thread (regular and spare) around its loop.
#[derive(Default)]
pub(crate) struct ThreadContext(OnceLock<Enter>);

impl ThreadContext {
    /// Install `enter`; a runtime has at most one (a second is ignored).
    #[cfg(feature = "tokio")]
    pub(crate) fn install(&self, enter: Enter) {
        let _ = self.0.set(enter);
    }

    /// Run `f` inside the installed context, or as it is.
    pub(crate) fn run(&self, f: &mut dyn FnMut()) {
        match self.0.get() {
            Some(enter) => enter(f),
            None => f(),
        }
    }
}
