//! Progress points: a counter per name, shared by every call site that
//! names it, found by each site once and kept in the site's `static`.
//!
//! Points are leaked: a program names a bounded set of them, and a site's
//! `static` keeps a `&'static` to its point, so a point lives as long as
//! the process (C1).

use crate::lock::lock_std;
use crate::loom::{AtomicU64, Ordering};
use crossbeam_utils::CachePadded;
use std::sync::Mutex;
use std::sync::OnceLock;

/// Which macro a call site is.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SiteKind {
    /// `progress!`
    Throughput,
    /// `latency_begin!`
    Begin,
    /// `latency_end!`
    End,
}

impl SiteKind {
    fn point_kind(self) -> PointKind {
        match self {
            SiteKind::Throughput => PointKind::Throughput,
            SiteKind::Begin | SiteKind::End => PointKind::Latency,
        }
    }

    fn macro_name(self) -> &'static str {
        match self {
            SiteKind::Throughput => "smarm::progress!",
            SiteKind::Begin => "smarm::latency_begin!",
            SiteKind::End => "smarm::latency_end!",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PointKind {
    Throughput,
    Latency,
}

/// One named point's counters, on lines of their own (points are visited
/// from every scheduler, and one point's traffic should not slow another).
pub(super) struct Point {
    name: &'static str,
    kind: PointKind,
    /// A throughput point's visits; a latency point's begins.
    visits: CachePadded<AtomicU64>,
    /// A latency point's ends (C2).
    ends: CachePadded<AtomicU64>,
}

/// Every point, in the order of their first visits.
static POINTS: Mutex<Vec<&'static Point>> = Mutex::new(Vec::new());

/// The point named `name` of `kind`'s kind, made at its first use (C1).
fn point(name: &'static str, kind: SiteKind) -> &'static Point {
    let mut points = lock_std(&POINTS);
    let point = match points.iter().find(|p| p.name == name) {
        Some(p) => *p,
        None => {
            let p: &'static Point = Box::leak(Box::new(Point::new(name, kind.point_kind())));
            points.push(p);
            p
        }
    };
    drop(points);
    if point.kind != kind.point_kind() {
        let (this, other) = match point.kind {
            PointKind::Throughput => ("a latency point", "a throughput point (smarm::progress!)"),
            PointKind::Latency => (
                "a throughput point",
                "a latency point (smarm::latency_begin!/latency_end!)",
            ),
        };
        panic!(
            "{}({name:?}): {name:?} is already {other}, and a name names one point: \
             give {this} a name of its own",
            kind.macro_name()
        );
    }
    point
}

/// A progress macro's call site: its kind and name, and the point it
/// counts into once its first visit has found it.
#[doc(hidden)]
pub struct Site {
    name: &'static str,
    kind: SiteKind,
    point: OnceLock<&'static Point>,
}

impl Site {
    /// A site of `kind` counting into the point `name`.
    pub const fn new(name: &'static str, kind: SiteKind) -> Self {
        Site {
            name,
            kind,
            point: OnceLock::new(),
        }
    }

    /// Count one visit.
    #[inline]
    pub fn visit(&self) {
        let point = match self.point.get() {
            Some(p) => *p,
            None => self.find(),
        };
        point.visit(self.kind);
    }

    #[cold]
    fn find(&self) -> &'static Point {
        self.point.get_or_init(|| point(self.name, self.kind))
    }
}

/// A progress point's counts, as [`progress_points`] reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProgressCount {
    /// A throughput point ([`progress!`](crate::progress)): its visits.
    Throughput {
        /// Visits so far.
        visits: u64,
    },
    /// A latency point ([`latency_begin!`](crate::latency_begin),
    /// [`latency_end!`](crate::latency_end)): `begins - ends` are in
    /// flight.
    Latency {
        /// Arrivals so far.
        begins: u64,
        /// Departures so far; never above `begins` when each end follows
        /// its begin.
        ends: u64,
    },
}

impl Point {
    pub(super) fn new(name: &'static str, kind: PointKind) -> Self {
        Point {
            name,
            kind,
            visits: CachePadded::new(AtomicU64::new(0)),
            ends: CachePadded::new(AtomicU64::new(0)),
        }
    }

    /// Count one visit of a site of `kind` (of this point's kind).
    #[inline]
    pub(super) fn visit(&self, kind: SiteKind) {
        match kind {
            SiteKind::Throughput | SiteKind::Begin => {
                self.visits.fetch_add(1, Ordering::Relaxed);
            }
            // Release: a reader that sees this end sees its begin (C2).
            SiteKind::End => {
                self.ends.fetch_add(1, Ordering::Release);
            }
        }
    }

    pub(super) fn count(&self) -> ProgressCount {
        match self.kind {
            PointKind::Throughput => ProgressCount::Throughput {
                visits: self.visits.load(Ordering::Relaxed),
            },
            PointKind::Latency => {
                // Ends first (C2).
                let ends = self.ends.load(Ordering::Acquire);
                let begins = self.visits.load(Ordering::Relaxed);
                ProgressCount::Latency { begins, ends }
            }
        }
    }
}

/// Every progress point visited so far in this process, by name (sorted),
/// with its counts.
///
/// ```
/// smarm::progress!("doc.points.a");
/// let points = smarm_core::causal::progress_points(); // `smarm::causal`
/// assert!(points.iter().any(|(name, _)| *name == "doc.points.a"));
/// ```
pub fn progress_points() -> Vec<(&'static str, ProgressCount)> {
    let points: Vec<&'static Point> = lock_std(&POINTS).clone();
    let mut counts: Vec<_> = points.iter().map(|p| (p.name, p.count())).collect();
    counts.sort_unstable_by_key(|(name, _)| *name);
    counts
}

/// The counts of the progress point `name`, or `None` if no site of that
/// name has been visited yet.
///
/// ```
/// use smarm_core::causal::{ProgressCount, progress_point}; // `smarm::causal`
///
/// assert_eq!(progress_point("doc.point.never"), None);
/// smarm::progress!("doc.point.once");
/// assert_eq!(progress_point("doc.point.once"), Some(ProgressCount::Throughput { visits: 1 }));
/// ```
pub fn progress_point(name: &str) -> Option<ProgressCount> {
    let point = lock_std(&POINTS).iter().find(|p| p.name == name).copied();
    point.map(Point::count)
}
