//! A runtime run by a simulation (feature `sim`, `crate::sim`): built with
//! its schedulers marked simulated, and run with the simulation's driver
//! in place of the scheduler threads.
//!
//! # Invariants
//!
//! - (R1) A simulated runtime starts no thread: its schedulers run where
//!   `drive` runs them (on the calling thread), no system monitor watches
//!   them and no spare replaces them.

use super::Runtime;
use crate::actor::Outcome;
use crate::config::{Config, ConfigError};
use crate::scheduler::Shared;
use std::sync::Arc;

impl Runtime {
    /// A runtime whose schedulers a simulation runs (R1): `config` with no
    /// system monitor and no spares.
    pub(crate) fn new_simulated(config: Config) -> Result<Runtime, ConfigError> {
        let config = Config {
            blocked_after: None,
            spare_threads: 0,
            ..config
        };
        Runtime::build(config, |shared| shared.simulated = true)
    }

    /// Run `f` as the root actor, `drive` running the schedulers until
    /// they have all stopped: the root's value, if it returned one, and
    /// how it ended. A `drive` that returns `false` abandoned the run with
    /// its schedulers suspended: the run is not ended, and the caller
    /// must leak this runtime.
    pub(crate) fn run_simulated<R: Send + 'static>(
        &self,
        f: impl FnOnce() -> R + Send + 'static,
        drive: impl FnOnce(&Arc<Shared>) -> bool,
    ) -> (Option<R>, Option<Outcome>) {
        let value = Arc::new(std::sync::Mutex::new(None));
        let slot = value.clone();
        let root = self.begin_root(
            move || {
                let v = f();
                *crate::lock::lock_std(&slot) = Some(v);
            },
            || {},
        );
        if !drive(&self.shared) {
            std::mem::forget(root);
            return (None, None);
        }
        let outcome = self.end_root(root);
        let taken = crate::lock::lock_std(&value).take();
        (taken, outcome)
    }
}
