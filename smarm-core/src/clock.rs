//! The runtime's fast clock (timeslices, per-actor budgets, trace event
//! timestamps): ticks of the CPU's invariant cycle counter where
//! there is one (x86_64 with an invariant TSC, read with `rdtsc`, a few ns),
//! nanoseconds of the monotonic clock elsewhere.
//!
//! Ticks are only ever compared with ticks from the same process: a slice
//! length is converted once per runtime ([`ticks_for`]), and per-actor
//! budgets (feature `budget-accounting`) are reported in ticks.
//!
//! # Invariants
//!
//! - (I1) The tick source is chosen once per process and never changes, so
//!   two readings are always comparable (`later - earlier`, wrapping).

use std::sync::OnceLock;
use std::time::{Duration, Instant};

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
