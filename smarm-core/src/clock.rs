//! The runtime's fast clock (timeslices, per-actor budgets, trace event
//! timestamps): ticks of the CPU's invariant cycle counter where
//! there is one (x86_64 with an invariant TSC, read with `rdtsc`, a few ns),
//! nanoseconds of the monotonic clock elsewhere.
//!
//! Ticks are only ever compared with ticks from the same process: a slice
//! length is converted once per runtime ([`ticks_for`]), and per-actor
//! budgets (feature `budget-accounting`) are reported in ticks.
//!
//! It is also the one place the runtime reads the time of day and the
//! monotonic clock ([`instant`], [`system_time`], [`monotonic_nanos`]):
//! a simulation (feature `sim`) replaces those readings on its thread with
//! its simulated clock, so every deadline, timeout and timestamp the
//! runtime computes there follows simulated time. Ticks stay real: they
//! feed measurements (timeslices, budgets, idle time), never a decision a
//! simulation makes. Clippy's `disallowed-methods` keeps `Instant::now`
//! and `SystemTime::now` out of the library crates elsewhere.
//!
//! # Invariants
//!
//! - (I1) The tick source is chosen once per process and never changes, so
//!   two readings are always comparable (`later - earlier`, wrapping).
//! - (I2) On a thread running a simulation, `instant`, `system_time` and
//!   `monotonic_nanos` read one simulated clock, which only the simulation
//!   advances and never backwards; on every other thread, the OS's.

#![allow(clippy::disallowed_methods)] // the one module that reads the OS clocks

use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

/// The monotonic clock now: simulated on a simulation's thread (I2).
#[inline]
pub(crate) fn instant() -> Instant {
    #[cfg(feature = "sim")]
    if let Some(sim) = simulated::get() {
        return sim.instant();
    }
    Instant::now()
}

/// The time of day now: simulated on a simulation's thread (I2), where it
/// starts at a fixed date, so a run's timestamps repeat.
#[inline]
pub(crate) fn system_time() -> SystemTime {
    #[cfg(feature = "sim")]
    if let Some(sim) = simulated::get() {
        return sim.system_time();
    }
    SystemTime::now()
}

/// Nanoseconds of the monotonic clock (the one `Instant` reads, without
/// its arithmetic): simulated on a simulation's thread (I2).
#[inline]
pub(crate) fn monotonic_nanos() -> u64 {
    #[cfg(feature = "sim")]
    if let Some(sim) = simulated::get() {
        return sim.monotonic_nanos();
    }
    os_monotonic_nanos()
}

#[cfg(target_os = "linux")]
#[inline]
fn os_monotonic_nanos() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; CLOCK_MONOTONIC always exists
    // on Linux, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

#[cfg(not(target_os = "linux"))]
fn os_monotonic_nanos() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// The simulated clock of the simulation running on this thread (feature
/// `sim`): set and advanced by the simulation only (I2).
#[cfg(feature = "sim")]
pub(crate) mod simulated {
    use std::cell::Cell;
    use std::time::{Duration, Instant, SystemTime};

    /// Where simulated time reads: a real `Instant` taken when the
    /// simulation began plus the simulated time since.
    #[derive(Clone, Copy)]
    pub(crate) struct SimClock {
        base: Instant,
        /// The monotonic reading at `base` (kept away from 0, so deadlines
        /// computed from it never saturate at the start).
        base_nanos: u64,
        elapsed: u64,
    }

    /// The simulated time of day at a simulation's start:
    /// 2026-01-01T00:00:00Z.
    const SYSTEM_BASE_SECS: u64 = 1_767_225_600;

    impl SimClock {
        pub(crate) fn instant(&self) -> Instant {
            self.base + Duration::from_nanos(self.elapsed)
        }
        pub(crate) fn system_time(&self) -> SystemTime {
            SystemTime::UNIX_EPOCH
                + Duration::from_secs(SYSTEM_BASE_SECS)
                + Duration::from_nanos(self.elapsed)
        }
        pub(crate) fn monotonic_nanos(&self) -> u64 {
            self.base_nanos + self.elapsed
        }
        /// Simulated time since the simulation began.
        pub(crate) fn elapsed(&self) -> Duration {
            Duration::from_nanos(self.elapsed)
        }
    }

    std::thread_local! {
        static CLOCK: Cell<Option<SimClock>> = const { Cell::new(None) };
    }

    #[inline]
    pub(crate) fn get() -> Option<SimClock> {
        CLOCK.with(Cell::get)
    }

    /// Start simulated time on this thread, at 0.
    pub(crate) fn start() {
        CLOCK.with(|c| {
            c.set(Some(SimClock {
                base: Instant::now(),
                base_nanos: 1_000_000_000,
                elapsed: 0,
            }))
        });
    }

    /// Move simulated time forward to `elapsed` since the start (never
    /// back: an earlier value is ignored, I2).
    pub(crate) fn advance_to(elapsed: Duration) {
        CLOCK.with(|c| {
            if let Some(mut clock) = c.get() {
                let to = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
                clock.elapsed = clock.elapsed.max(to);
                c.set(Some(clock));
            }
        });
    }

    /// Real time again on this thread.
    pub(crate) fn stop() {
        CLOCK.with(|c| c.set(None));
    }
}

/// The process's tick source (I1).
struct Source {
    /// Ticks per microsecond when the cycle counter is used; `None` for
    /// the monotonic-clock fallback.
    tsc_per_us: Option<u64>,
    /// The fallback's zero.
    epoch: Instant,
}

static SOURCE: OnceLock<Source> = OnceLock::new();

fn source() -> &'static Source {
    SOURCE.get_or_init(|| Source {
        tsc_per_us: tsc_rate(),
        epoch: Instant::now(),
    })
}

/// The current tick.
#[inline]
pub(crate) fn now() -> u64 {
    let s = source();
    if s.tsc_per_us.is_some() {
        cycles()
    } else {
        s.epoch.elapsed().as_nanos() as u64
    }
}

/// How many ticks `d` lasts (at least 1).
pub(crate) fn ticks_for(d: Duration) -> u64 {
    let ticks = match source().tsc_per_us {
        Some(per_us) => (d.as_nanos() as u64).saturating_mul(per_us) / 1000,
        None => d.as_nanos() as u64,
    };
    ticks.max(1)
}

/// How long `ticks` ticks last (the inverse of [`ticks_for`]), for
/// reporting.
pub(crate) fn nanos_for(ticks: u64) -> u64 {
    match source().tsc_per_us {
        Some(per_us) => ((ticks as u128 * 1000) / per_us as u128) as u64,
        None => ticks,
    }
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn cycles() -> u64 {
    // SAFETY: `rdtsc` is available on every x86_64 CPU and only reads the
    // time-stamp counter.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn cycles() -> u64 {
    0 // never called: `tsc_rate` is `None` off x86_64
}

/// The cycle counter's rate, if it is invariant (constant across power
/// states and cores): measured against the monotonic clock over 200 us.
#[cfg(target_arch = "x86_64")]
fn tsc_rate() -> Option<u64> {
    use core::arch::x86_64::__cpuid;
    // SAFETY: `cpuid` is available on every x86_64 CPU; leaf 0x8000_0000
    // reports the highest extended leaf, so 0x8000_0007 is only read when
    // it exists. (Safe to call since Rust 1.87; `unsafe` for the MSRV.)
    #[allow(unused_unsafe)]
    let invariant = unsafe {
        __cpuid(0x8000_0000).eax >= 0x8000_0007 && __cpuid(0x8000_0007).edx & (1 << 8) != 0
    };
    if !invariant {
        return None;
    }
    let (t0, c0) = (Instant::now(), cycles());
    while t0.elapsed() < Duration::from_micros(200) {
        std::hint::spin_loop();
    }
    let (us, c1) = (t0.elapsed().as_nanos() as u64, cycles());
    let per_us = c1.wrapping_sub(c0).saturating_mul(1000) / us.max(1);
    (per_us > 0).then_some(per_us)
}

#[cfg(not(target_arch = "x86_64"))]
fn tsc_rate() -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_advance_at_the_calibrated_rate() {
        let slice = ticks_for(Duration::from_millis(5));
        let (t0, c0) = (Instant::now(), now());
        while t0.elapsed() < Duration::from_millis(5) {
            std::hint::spin_loop();
        }
        let elapsed = now().wrapping_sub(c0);
        // Generous: a descheduled test thread only makes `elapsed` larger.
        assert!(
            elapsed >= slice / 2,
            "{elapsed} ticks in 5 ms, slice {slice}"
        );
        assert!(
            elapsed < slice * 20,
            "{elapsed} ticks in 5 ms, slice {slice}"
        );
    }
}
