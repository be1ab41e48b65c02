//! Causal profiling (feature `smarm-causal`): what a profile measures
//! progress by, how its experiments run, and what they predict.
//!
//! A causal profile answers "if this part ran faster, how much faster
//! would the program make progress?", so the program first says what
//! progress is, at *progress points*:
//!
//! - a throughput point, [`progress!`](crate::progress)`("name")`, counts
//!   visits: a request served, a batch written;
//! - a latency point, [`latency_begin!`](crate::latency_begin)`("name")`
//!   and [`latency_end!`](crate::latency_end)`("name")`, counts the
//!   arrivals and departures of the work it brackets, which may be in
//!   different actors (a request read by one actor, its reply written by
//!   another). With both rates, Little's law gives the mean time between
//!   them: the number in flight over the arrival rate.
//!
//! Call sites with the same name count into the same point.
//! `progress_points` reads every point, `progress_point` one.
//!
#![cfg_attr(
    feature = "smarm-causal",
    doc = r#"
```
use smarm_core::causal::{ProgressCount, progress_point}; // `smarm::causal`

smarm::run(|| {
    for _ in 0..3 {
        smarm::latency_begin!("doc.request");
        smarm::progress!("doc.served");
        smarm::latency_end!("doc.request");
    }
});
assert_eq!(progress_point("doc.served"), Some(ProgressCount::Throughput { visits: 3 }));
assert_eq!(
    progress_point("doc.request"),
    Some(ProgressCount::Latency { begins: 3, ends: 3 })
);
```
"#
)]
//! # Profiles
//!
//! A causal profile is a set of experiments, each a window in which one
//! region was virtually sped up by some fraction, with what every
//! progress point did meanwhile (`Experiment`). A `Profile` turns them
//! into, per region and progress point, the program's predicted speedup
//! against the region's speedup (`Profile::impacts`), and writes them
//! as a table, JSON, an SVG plot, or Coz's `profile.coz`, which Coz's own
//! viewer plots.
//!
//! # Experiments
//!
//! A session (`session.rs`; started by `smarm::causal::profile`, or for a
//! whole run by `Config::causal_profile`) repeatedly selects a region
//! (`region.rs`: the user's, every behaviour callback, labelled actors)
//! and a virtual speedup, as Coz does. While the selected region runs,
//! every other actor comes to owe a delay, which its scheduler pays by
//! pausing before resuming it; a woken actor is credited what its waker
//! has paid; timers on the virtual clock wait the delay out
//! (`delay.rs` has the accounting and its invariants, the scheduler's
//! `causal.rs` where it is applied, `timer/heap.rs` the timers' part).
//!
//! # Cost
//!
//! Without the feature the three macros compile to nothing (the name is
//! still checked to be a `&'static str` constant). With it, a visit is one
//! atomic add on the point's own cache line, after a load that finds the
//! call site's point (the first visit of a site looks it up by name, under
//! a lock); while no session runs, every other hook (a resume, a wake, a
//! wait, a region) is one load of a static.
//!
//! # Invariants
//!
//! - (C1) A name names one point for the life of the process, of one kind:
//!   a site of the other kind panics at its first visit, naming the macro.
//! - (C2) A latency point's `ends` never reads above its `begins` when
//!   every end follows its begin (in the same actor, or in another one it
//!   sent to): `progress_points` reads `ends` first, with acquire, and an
//!   end is counted with release.

// Without the feature only the macros below exist (as no-ops), so code
// that places progress points builds either way.
#[cfg(feature = "smarm-causal")]
pub(crate) mod delay;
#[cfg(all(loom, test, feature = "smarm-causal"))]
mod loom_models;
#[cfg(feature = "smarm-causal")]
mod profile;
#[cfg(feature = "smarm-causal")]
mod progress;
#[cfg(feature = "smarm-causal")]
pub(crate) mod region;
#[cfg(feature = "smarm-causal")]
pub(crate) mod session;

#[cfg(feature = "smarm-causal")]
pub use profile::{
    CozParseError, Delta, Estimate, Experiment, Impact, MIN_VISITS, PointDelta, Profile,
};
#[cfg(feature = "smarm-causal")]
pub use progress::{ProgressCount, progress_point, progress_points};
#[cfg(feature = "smarm-causal")]
#[doc(hidden)]
pub use progress::{Site, SiteKind};
#[cfg(feature = "smarm-causal")]
pub use session::{Settings, latest_profile};

/// Count a visit to the throughput progress point `name` (a `&'static str`
/// constant), for causal profiling (feature `smarm-causal`; without it,
/// nothing: the name is only checked to be a constant). Sites with the
/// same name count into one point.
///
/// ```
/// fn serve(request: &str) -> usize {
///     let reply = request.len();
///     smarm::progress!("requests served");
///     reply
/// }
/// # assert_eq!(serve("ping"), 4);
/// ```
#[macro_export]
macro_rules! progress {
    ($name:expr) => {
        $crate::__progress_site!(Throughput, $name)
    };
}

/// Count an arrival at the latency progress point `name` (a `&'static str`
/// constant): the start of the work whose time a causal profile measures,
/// ended by [`latency_end!`](crate::latency_end) with the same name,
/// maybe in another actor (feature `smarm-causal`; without it, nothing).
///
/// ```
/// smarm::latency_begin!("request");
/// // ... the request is handled, perhaps by other actors ...
/// smarm::latency_end!("request");
/// ```
#[macro_export]
macro_rules! latency_begin {
    ($name:expr) => {
        $crate::__progress_site!(Begin, $name)
    };
}

/// Count a departure from the latency progress point `name`: the end of
/// the work [`latency_begin!`](crate::latency_begin) started (feature
/// `smarm-causal`; without it, nothing).
///
/// ```
/// smarm::latency_begin!("request");
/// smarm::latency_end!("request");
/// ```
#[macro_export]
macro_rules! latency_end {
    ($name:expr) => {
        $crate::__progress_site!(End, $name)
    };
}

/// The three progress macros' call site: a `static` site that counts into
/// its point.
#[cfg(feature = "smarm-causal")]
#[doc(hidden)]
#[macro_export]
macro_rules! __progress_site {
    ($kind:ident, $name:expr) => {{
        static SITE: $crate::causal::Site =
            $crate::causal::Site::new($name, $crate::causal::SiteKind::$kind);
        SITE.visit();
    }};
}

/// Without the feature: nothing, once the name is checked to be a
/// `&'static str` constant (so code builds the same either way).
#[cfg(not(feature = "smarm-causal"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __progress_site {
    ($kind:ident, $name:expr) => {{
        const _: &str = $name;
    }};
}
