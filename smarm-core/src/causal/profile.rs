//! A causal profile: the experiments' records and what they predict.
//!
//! An [`Experiment`] is one window in which one region was virtually sped
//! up by some fraction, with what every progress point did meanwhile.
//! [`Profile::impacts`] turns the experiments into, for each region and
//! progress point, the program's speedup against the region's speedup, as
//! Coz's viewer does: the progress point's period (throughput) or mean
//! latency (Little's law) pooled over the experiments at each speedup,
//! compared with the same region's experiments at 0%. A speedup whose
//! experiments saw fewer than [`MIN_VISITS`] visits is left out.
//!
//! The error of an estimate is one standard error, from the spread of the
//! experiments' own values at that speedup and at the baseline (at least
//! two of each, or none is given).
//!
//! Exports: a table ([`Display`](std::fmt::Display)), JSON
//! ([`Profile::to_json`]), an SVG plot ([`Profile::to_svg`]) and Coz's own
//! `profile.coz` format ([`Profile::to_coz`], read back by
//! [`Profile::from_coz`]), which Coz's viewer plots.

use crate::json::json_string;
use std::collections::BTreeMap;
use std::fmt::{self, Write};
use std::time::Duration;

/// Fewer visits than this at a speedup (summed over its experiments) make
/// no estimate: Coz's `ExperimentTargetDelta`.
pub const MIN_VISITS: u64 = 5;

/// One experiment: `region` virtually sped up by `speedup` for `duration`.
#[derive(Debug, Clone, PartialEq)]
pub struct Experiment {
    /// The region that was sped up.
    pub region: String,
    /// Its virtual speedup, from 0.0 (none: a baseline) to 1.0.
    pub speedup: f64,
    /// The window's length with the inserted delays taken out: the time
    /// the program would have taken had the region really been faster.
    pub duration: Duration,
    /// How long the region ran during the window, all actors together.
    pub region_time: Duration,
    /// What each progress point did during the window.
    pub points: Vec<PointDelta>,
}

/// What one progress point did during an experiment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PointDelta {
    /// The progress point's name.
    pub name: String,
    /// Its counts over the window.
    pub delta: Delta,
}

/// A progress point's counts over one experiment's window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delta {
    /// A throughput point: visits during the window.
    Throughput {
        /// Visits.
        visits: u64,
    },
    /// A latency point: arrivals and departures during the window, and
    /// the work in flight at its end.
    Latency {
        /// Arrivals (`latency_begin!`).
        arrivals: u64,
        /// Departures (`latency_end!`).
        departures: u64,
        /// Begun and not yet ended at the window's end.
        in_flight: u64,
    },
}

/// A causal profile: the experiments run so far.
///
/// ```
/// use smarm_core::causal::{Delta, Experiment, PointDelta, Profile}; // `smarm::causal`
/// use std::time::Duration;
///
/// // "parse" at 0% and at 50%: a request every 1 ms, then every 0.8 ms.
/// let run = |speedup, visits| Experiment {
///     region: "parse".to_owned(),
///     speedup,
///     duration: Duration::from_secs(1),
///     region_time: Duration::from_millis(400),
///     points: vec![PointDelta {
///         name: "served".to_owned(),
///         delta: Delta::Throughput { visits },
///     }],
/// };
/// let profile = Profile::new(vec![run(0.0, 1000), run(0.5, 1250)]);
/// let impact = &profile.impacts()[0];
/// assert_eq!((impact.region.as_str(), impact.point.as_str()), ("parse", "served"));
/// assert!((impact.estimates[1].program_speedup - 0.2).abs() < 1e-9);
/// assert!(profile.to_string().contains("+20.0%"));
/// assert_eq!(Profile::from_coz(&profile.to_coz()).unwrap().experiments.len(), 2);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Profile {
    /// The experiments, in the order they ran.
    pub experiments: Vec<Experiment>,
}

/// For one region and one progress point: the program's speedup at each
/// speedup of the region that has enough data.
#[derive(Debug, Clone, PartialEq)]
pub struct Impact {
    /// The region.
    pub region: String,
    /// The progress point the program's speed is read at.
    pub point: String,
    /// By the region's speedup, ascending; the first is the baseline (0%).
    pub estimates: Vec<Estimate>,
}

/// The predicted program speedup at one speedup of a region.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The region's virtual speedup (0.0 to 1.0).
    pub speedup: f64,
    /// The program's predicted speedup at the progress point: 0.1 is a
    /// period (or latency) 10% shorter than at the baseline.
    pub program_speedup: f64,
    /// One standard error of `program_speedup`, when both this speedup and
    /// the baseline have at least two experiments.
    pub error: Option<f64>,
    /// The experiments behind the estimate.
    pub experiments: usize,
}

impl Impact {
    /// How much this region matters: the largest mean program speedup per
    /// unit of region speedup over `[0, s]` for the estimates' `s` (the
    /// area under the curve from 0 to `s`, over `s`), as Coz ranks lines.
    pub fn rank(&self) -> f64 {
        let mut area = 0.0;
        let mut best = f64::NEG_INFINITY;
        for pair in self.estimates.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            area += (a.program_speedup + b.program_speedup) / 2.0 * (b.speedup - a.speedup);
            if b.speedup > 0.0 {
                best = best.max(area / b.speedup);
            }
        }
        if best.is_finite() { best } else { 0.0 }
    }
}

/// The pooled counts of one (region, point, speedup) group, and each
/// experiment's own value for the error.
#[derive(Default)]
struct Group {
    duration_ns: f64,
    visits: u64,
    /// Latency: in flight × duration, summed (a time-weighted mean).
    in_flight_ns: f64,
    values: Vec<f64>,
    experiments: usize,
}

impl Group {
    fn add(&mut self, duration: Duration, delta: Delta) {
        let d = duration.as_nanos() as f64;
        self.duration_ns += d;
        self.experiments += 1;
        match delta {
            Delta::Throughput { visits } => {
                self.visits += visits;
                if visits > 0 {
                    self.values.push(d / visits as f64);
                }
            }
            Delta::Latency {
                arrivals,
                in_flight,
                ..
            } => {
                self.visits += arrivals;
                self.in_flight_ns += in_flight as f64 * d;
                if arrivals > 0 {
                    self.values.push(in_flight as f64 * d / arrivals as f64);
                }
            }
        }
    }

    /// The pooled value: the period between visits, or by Little's law the
    /// mean latency (mean in flight over the arrival rate); both in ns,
    /// and smaller is faster.
    fn value(&self, latency: bool) -> Option<f64> {
        if self.visits < MIN_VISITS || self.duration_ns <= 0.0 {
            return None;
        }
        let visits = self.visits as f64;
        Some(if latency {
            (self.in_flight_ns / self.duration_ns) / (visits / self.duration_ns)
        } else {
            self.duration_ns / visits
        })
    }

    /// The standard error of the mean of the experiments' own values.
    fn standard_error(&self) -> Option<f64> {
        let n = self.values.len();
        if n < 2 {
            return None;
        }
        let mean = self.values.iter().sum::<f64>() / n as f64;
        let var = self.values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        Some((var / n as f64).sqrt())
    }
}

/// A speedup as a key: whole per-mille, so 0.25 from two experiments is
/// one group.
fn speedup_key(speedup: f64) -> u32 {
    (speedup.clamp(0.0, 1.0) * 1000.0).round() as u32
}

impl Profile {
    /// A profile of `experiments`.
    pub fn new(experiments: Vec<Experiment>) -> Self {
        Profile { experiments }
    }

    /// Each region's impact at each progress point with a baseline, most
    /// important first ([`Impact::rank`]; ties by region, then point).
    pub fn impacts(&self) -> Vec<Impact> {
        // (region, point) -> (latency?, speedup key -> group)
        type Groups = BTreeMap<u32, Group>;
        let mut by: BTreeMap<(&str, &str), (bool, Groups)> = BTreeMap::new();
        for e in &self.experiments {
            for p in &e.points {
                let latency = matches!(p.delta, Delta::Latency { .. });
                let (_, groups) = by
                    .entry((e.region.as_str(), p.name.as_str()))
                    .or_insert_with(|| (latency, Groups::new()));
                groups
                    .entry(speedup_key(e.speedup))
                    .or_default()
                    .add(e.duration, p.delta);
            }
        }
        let mut impacts: Vec<Impact> = by
            .into_iter()
            .filter_map(|((region, point), (latency, groups))| {
                let base_group = groups.get(&0)?;
                let base = base_group.value(latency)?;
                let base_error = base_group.standard_error();
                let estimates = groups
                    .iter()
                    .filter_map(|(key, g)| {
                        let x = g.value(latency)?;
                        let error = match (base_error, g.standard_error()) {
                            // (base - x) / base: its error from both.
                            (Some(eb), Some(ex)) if *key > 0 => Some(
                                ((ex / base).powi(2) + (x * eb / (base * base)).powi(2)).sqrt(),
                            ),
                            (Some(eb), _) if *key == 0 => Some(eb / base),
                            _ => None,
                        };
                        Some(Estimate {
                            speedup: f64::from(*key) / 1000.0,
                            program_speedup: (base - x) / base,
                            error,
                            experiments: g.experiments,
                        })
                    })
                    .collect();
                Some(Impact {
                    region: region.to_owned(),
                    point: point.to_owned(),
                    estimates,
                })
            })
            .collect();
        impacts.sort_by(|a, b| b.rank().total_cmp(&a.rank()));
        impacts
    }

    /// The profile as JSON: the experiments as recorded, and the impacts.
    pub fn to_json(&self) -> String {
        let mut out = String::from("{\"experiments\":[");
        for (i, e) in self.experiments.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(
                out,
                "{{\"region\":{},\"speedup\":{},\"duration_ns\":{},\"region_time_ns\":{},\"points\":[",
                json_string(&e.region),
                e.speedup,
                e.duration.as_nanos(),
                e.region_time.as_nanos()
            );
            for (j, p) in e.points.iter().enumerate() {
                if j > 0 {
                    out.push(',');
                }
                let _ = match p.delta {
                    Delta::Throughput { visits } => write!(
                        out,
                        "{{\"name\":{},\"type\":\"throughput\",\"visits\":{visits}}}",
                        json_string(&p.name)
                    ),
                    Delta::Latency {
                        arrivals,
                        departures,
                        in_flight,
                    } => write!(
                        out,
                        "{{\"name\":{},\"type\":\"latency\",\"arrivals\":{arrivals},\"departures\":{departures},\"in_flight\":{in_flight}}}",
                        json_string(&p.name)
                    ),
                };
            }
            out.push_str("]}");
        }
        out.push_str("],\"impacts\":[");
        for (i, impact) in self.impacts().iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(
                out,
                "{{\"region\":{},\"point\":{},\"rank\":{},\"estimates\":[",
                json_string(&impact.region),
                json_string(&impact.point),
                json_number(impact.rank())
            );
            for (j, e) in impact.estimates.iter().enumerate() {
                if j > 0 {
                    out.push(',');
                }
                let _ = write!(
                    out,
                    "{{\"speedup\":{},\"program_speedup\":{},\"error\":{},\"experiments\":{}}}",
                    e.speedup,
                    json_number(e.program_speedup),
                    e.error.map_or("null".to_owned(), json_number),
                    e.experiments
                );
            }
            out.push_str("]}");
        }
        out.push_str("]}");
        out
    }

    /// The experiments in Coz's `profile.coz` format, which Coz's viewer
    /// (`coz plot`, or its web page) plots: an `experiment` line per
    /// experiment (`selected` is the region; `selected-samples` its run
    /// time in milliseconds), then a line per progress point. Tabs and line
    /// breaks in names become spaces, since the format is tab-separated.
    pub fn to_coz(&self) -> String {
        let mut out = String::new();
        for e in &self.experiments {
            let _ = writeln!(
                out,
                "experiment\tselected={}\tspeedup={:.2}\tduration={}\tselected-samples={}",
                coz_name(&e.region),
                e.speedup,
                e.duration.as_nanos(),
                e.region_time.as_millis()
            );
            for p in &e.points {
                let _ = match p.delta {
                    Delta::Throughput { visits } => writeln!(
                        out,
                        "throughput-point\tname={}\tdelta={visits}",
                        coz_name(&p.name)
                    ),
                    Delta::Latency {
                        arrivals,
                        departures,
                        in_flight,
                    } => writeln!(
                        out,
                        "latency-point\tname={}\tarrivals={arrivals}\tdepartures={departures}\tdifference={in_flight}",
                        coz_name(&p.name)
                    ),
                };
            }
        }
        out
    }

    /// Read a profile back from Coz's format ([`to_coz`](Self::to_coz)'s,
    /// or Coz's own tab-separated output). Lines of other types (`startup`,
    /// `runtime`, `samples`) are skipped.
    pub fn from_coz(text: &str) -> Result<Profile, CozParseError> {
        let mut experiments: Vec<Experiment> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line_no = i + 1;
            let mut fields = line.split('\t');
            let kind = fields.next().unwrap_or_default();
            let mut kv = BTreeMap::new();
            for f in fields {
                if let Some((k, v)) = f.split_once('=') {
                    kv.insert(k, v);
                }
            }
            let get = |key: &'static str| {
                kv.get(key)
                    .copied()
                    .ok_or(CozParseError::Missing { line: line_no, key })
            };
            let int = |key: &'static str| -> Result<u64, CozParseError> {
                get(key)?
                    .parse()
                    .map_err(|_| CozParseError::Number { line: line_no, key })
            };
            match kind {
                "experiment" => {
                    let speedup: f64 =
                        get("speedup")?.parse().map_err(|_| CozParseError::Number {
                            line: line_no,
                            key: "speedup",
                        })?;
                    experiments.push(Experiment {
                        region: get("selected")?.to_owned(),
                        speedup,
                        duration: Duration::from_nanos(int("duration")?),
                        region_time: Duration::from_millis(match kv.get("selected-samples") {
                            Some(_) => int("selected-samples")?,
                            None => 0,
                        }),
                        points: Vec::new(),
                    });
                }
                "throughput-point" | "latency-point" => {
                    let delta = if kind == "throughput-point" {
                        Delta::Throughput {
                            visits: int("delta")?,
                        }
                    } else {
                        Delta::Latency {
                            arrivals: int("arrivals")?,
                            departures: int("departures")?,
                            in_flight: int("difference")?,
                        }
                    };
                    let name = get("name")?.to_owned();
                    let Some(e) = experiments.last_mut() else {
                        return Err(CozParseError::PointBeforeExperiment { line: line_no });
                    };
                    e.points.push(PointDelta { name, delta });
                }
                _ => {}
            }
        }
        Ok(Profile { experiments })
    }

    /// The impacts as an SVG plot: a panel per region and progress point,
    /// most important first, program speedup (with error bars) against the
    /// region's speedup.
    pub fn to_svg(&self) -> String {
        svg(&self.impacts())
    }
}

/// Why [`Profile::from_coz`] could not read a line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CozParseError {
    /// A line lacks a field its type needs.
    #[error("profile line {line}: no `{key}=` field")]
    Missing {
        /// The line, from 1.
        line: usize,
        /// The missing field.
        key: &'static str,
    },
    /// A field that should be a number is not one.
    #[error("profile line {line}: `{key}=` is not a number")]
    Number {
        /// The line, from 1.
        line: usize,
        /// The field.
        key: &'static str,
    },
    /// A progress point's line came before any `experiment` line.
    #[error("profile line {line}: a progress point before any experiment line")]
    PointBeforeExperiment {
        /// The line, from 1.
        line: usize,
    },
}

/// A name as Coz's tab-separated format can hold it.
fn coz_name(name: &str) -> String {
    name.replace(['\t', '\n', '\r'], " ")
}

/// A number JSON can hold (`null` for NaN and infinities).
fn json_number(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        "null".to_owned()
    }
}

impl fmt::Display for Profile {
    /// A table: a row per region, progress point and speedup, most
    /// important region first.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let impacts = self.impacts();
        writeln!(
            f,
            "causal profile: {} experiments, {} region/point pairs with a baseline",
            self.experiments.len(),
            impacts.len()
        )?;
        writeln!(
            f,
            "{:<24} {:<20} {:>8} {:>18} {:>6}",
            "region", "progress point", "speedup", "program speedup", "runs"
        )?;
        for impact in &impacts {
            for (i, e) in impact.estimates.iter().enumerate() {
                let (region, point) = if i == 0 {
                    (impact.region.as_str(), impact.point.as_str())
                } else {
                    ("", "")
                };
                let error = e
                    .error
                    .map_or(String::new(), |err| format!(" ± {:.1}", err * 100.0));
                writeln!(
                    f,
                    "{:<24} {:<20} {:>7.0}% {:>18} {:>6}",
                    region,
                    point,
                    e.speedup * 100.0,
                    format!("{:+.1}%{error}", e.program_speedup * 100.0),
                    e.experiments
                )?;
            }
        }
        Ok(())
    }
}

/// Escape text for SVG.
fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The plot of `impacts`: panels 320 × 220 px, three to a row.
fn svg(impacts: &[Impact]) -> String {
    const W: f64 = 320.0;
    const H: f64 = 220.0;
    const COLS: usize = 3;
    const LEFT: f64 = 50.0;
    const TOP: f64 = 36.0;
    const PLOT_W: f64 = W - LEFT - 20.0;
    const PLOT_H: f64 = H - TOP - 40.0;
    let cols = impacts.len().clamp(1, COLS);
    let rows = impacts.len().div_ceil(COLS).max(1);
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"11\">",
        W * cols as f64,
        H * rows as f64
    );
    if impacts.is_empty() {
        out.push_str("<text x=\"10\" y=\"20\">no region has a baseline and enough progress-point visits yet</text>");
    }
    // One y range for every panel, so regions compare at a glance: at
    // least -10%..+10%, wide enough for every error bar.
    let (mut lo, mut hi) = (-0.1f64, 0.1f64);
    for e in impacts.iter().flat_map(|i| &i.estimates) {
        let err = e.error.unwrap_or(0.0);
        lo = lo.min(e.program_speedup - err);
        hi = hi.max(e.program_speedup + err);
    }
    for (i, impact) in impacts.iter().enumerate() {
        let (x0, y0) = ((i % COLS) as f64 * W, (i / COLS) as f64 * H);
        let px = |s: f64| x0 + LEFT + s * PLOT_W;
        let py = |v: f64| y0 + TOP + (hi - v) / (hi - lo) * PLOT_H;
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-weight=\"bold\">{}</text><text x=\"{:.1}\" y=\"{:.1}\">at {}</text>",
            x0 + 8.0,
            y0 + 14.0,
            xml(&impact.region),
            x0 + 8.0,
            y0 + 28.0,
            xml(&impact.point)
        );
        // Axes, the zero line, and the labels.
        let _ = write!(
            out,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{PLOT_W}\" height=\"{PLOT_H}\" fill=\"none\" stroke=\"#999\"/>\
             <line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#ccc\" stroke-dasharray=\"3,3\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{:+.0}%</text>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{:+.0}%</text>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">0%</text>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">0%</text>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">50%</text>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">100%</text>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">region speedup</text>",
            px(0.0),
            py(hi),
            px(0.0),
            py(0.0),
            px(1.0),
            py(0.0),
            px(0.0) - 4.0,
            py(hi) + 4.0,
            hi * 100.0,
            px(0.0) - 4.0,
            py(lo) + 4.0,
            lo * 100.0,
            px(0.0) - 4.0,
            py(0.0) + 4.0,
            px(0.0),
            py(lo) + 14.0,
            px(0.5),
            py(lo) + 14.0,
            px(1.0),
            py(lo) + 14.0,
            px(0.5),
            y0 + H - 8.0
        );
        let points: Vec<String> = impact
            .estimates
            .iter()
            .map(|e| format!("{:.1},{:.1}", px(e.speedup), py(e.program_speedup)))
            .collect();
        let _ = write!(
            out,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\"/>",
            points.join(" ")
        );
        for e in &impact.estimates {
            let (x, y) = (px(e.speedup), py(e.program_speedup));
            if let Some(err) = e.error {
                let _ = write!(
                    out,
                    "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#1f77b4\"/>",
                    py(e.program_speedup + err),
                    py(e.program_speedup - err)
                );
            }
            let _ = write!(
                out,
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3\" fill=\"#1f77b4\"/>"
            );
        }
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn throughput(region: &str, speedup: f64, ms: u64, visits: u64) -> Experiment {
        Experiment {
            region: region.to_owned(),
            speedup,
            duration: Duration::from_millis(ms),
            region_time: Duration::from_millis(ms / 2),
            points: vec![PointDelta {
                name: "served".to_owned(),
                delta: Delta::Throughput { visits },
            }],
        }
    }

    /// A region whose speedup shortens the period predicts that speedup;
    /// one whose speedup changes nothing predicts ~0; the first ranks first.
    #[test]
    fn program_speedup_is_the_period_saved_against_the_baseline() {
        let profile = Profile::new(vec![
            throughput("a", 0.0, 1000, 1000),
            throughput("a", 0.0, 1000, 1000),
            throughput("a", 0.5, 1000, 1250), // period 1 ms -> 0.8 ms
            throughput("a", 0.5, 1000, 1250),
            throughput("b", 0.0, 1000, 1000),
            throughput("b", 0.5, 1000, 1000),
        ]);
        let impacts = profile.impacts();
        assert_eq!(impacts.len(), 2);
        assert_eq!(impacts[0].region, "a");
        let a = &impacts[0].estimates;
        assert_eq!(a.len(), 2);
        assert_eq!((a[0].speedup, a[0].program_speedup), (0.0, 0.0));
        assert!((a[1].speedup - 0.5).abs() < 1e-9);
        assert!((a[1].program_speedup - 0.2).abs() < 1e-9, "{a:?}");
        assert_eq!(a[1].experiments, 2);
        // Identical experiments: no spread, zero error.
        assert_eq!(a[1].error, Some(0.0));
        let b = &impacts[1].estimates;
        assert!(b[1].program_speedup.abs() < 1e-9);
        assert_eq!(b[1].error, None, "one experiment each: no error");
        assert!(impacts[0].rank() > impacts[1].rank());
    }

    #[test]
    fn the_error_grows_with_the_spread_of_the_experiments() {
        let tight = Profile::new(vec![
            throughput("r", 0.0, 1000, 1000),
            throughput("r", 0.0, 1000, 1000),
            throughput("r", 0.2, 1000, 1100),
            throughput("r", 0.2, 1000, 1100),
        ]);
        let loose = Profile::new(vec![
            throughput("r", 0.0, 1000, 900),
            throughput("r", 0.0, 1000, 1100),
            throughput("r", 0.2, 1000, 1000),
            throughput("r", 0.2, 1000, 1200),
        ]);
        let err = |p: &Profile| p.impacts()[0].estimates[1].error.unwrap();
        assert!(
            err(&loose) > err(&tight) + 0.01,
            "{} vs {}",
            err(&loose),
            err(&tight)
        );
    }

    /// Little's law: mean in flight over the arrival rate. Halving the
    /// work in flight at the same arrival rate halves the latency.
    #[test]
    fn latency_points_use_littles_law() {
        let lat = |speedup: f64, in_flight: u64| Experiment {
            region: "parse".to_owned(),
            speedup,
            duration: Duration::from_secs(1),
            region_time: Duration::ZERO,
            points: vec![PointDelta {
                name: "request".to_owned(),
                delta: Delta::Latency {
                    arrivals: 1000,
                    departures: 1000,
                    in_flight,
                },
            }],
        };
        let impacts = Profile::new(vec![lat(0.0, 10), lat(0.3, 5)]).impacts();
        let e = &impacts[0].estimates;
        assert!((e[1].program_speedup - 0.5).abs() < 1e-9, "{e:?}");
    }

    #[test]
    fn too_few_visits_or_no_baseline_make_no_estimate() {
        let impacts = Profile::new(vec![
            throughput("few", 0.0, 1000, 1000),
            throughput("few", 0.4, 1000, MIN_VISITS - 1),
            throughput("nobase", 0.4, 1000, 1000),
        ])
        .impacts();
        assert_eq!(impacts.len(), 1);
        assert_eq!(impacts[0].region, "few");
        assert_eq!(
            impacts[0].estimates.len(),
            1,
            "the 40% group has too few visits"
        );
    }

    #[test]
    fn coz_format_round_trips_and_reads_cozs_own_lines() {
        let mut e = throughput("stage\tA", 0.25, 500, 400);
        e.points.push(PointDelta {
            name: "req".to_owned(),
            delta: Delta::Latency {
                arrivals: 7,
                departures: 6,
                in_flight: 1,
            },
        });
        let profile = Profile::new(vec![e]);
        let text = profile.to_coz();
        assert_eq!(
            text,
            "experiment\tselected=stage A\tspeedup=0.25\tduration=500000000\tselected-samples=250\n\
             throughput-point\tname=served\tdelta=400\n\
             latency-point\tname=req\tarrivals=7\tdepartures=6\tdifference=1\n"
        );
        let back = Profile::from_coz(&text).unwrap();
        assert_eq!(back.experiments[0].region, "stage A");
        assert_eq!(back.experiments[0].points, profile.experiments[0].points);
        assert_eq!(
            back.experiments[0].duration,
            profile.experiments[0].duration
        );
        // Coz's own output: a startup line, then an experiment.
        let coz = "startup\ttime=1\nexperiment\tselected=a.c:12\tspeedup=0.00\tduration=10\tselected-samples=3\nthroughput-point\tname=a.c:40\tdelta=9\n";
        let p = Profile::from_coz(coz).unwrap();
        assert_eq!(p.experiments.len(), 1);
        assert_eq!(p.experiments[0].region, "a.c:12");
    }

    #[test]
    fn coz_format_errors_name_the_line_and_field() {
        assert_eq!(
            Profile::from_coz("experiment\tselected=a\tspeedup=x\tduration=1"),
            Err(CozParseError::Number {
                line: 1,
                key: "speedup"
            })
        );
        assert_eq!(
            Profile::from_coz("throughput-point\tname=a\tdelta=1"),
            Err(CozParseError::PointBeforeExperiment { line: 1 })
        );
        let err = Profile::from_coz("experiment\tselected=a\tspeedup=0\n").unwrap_err();
        assert_eq!(err.to_string(), "profile line 1: no `duration=` field");
    }

    #[test]
    fn exports_hold_every_region_and_escape_names() {
        let profile = Profile::new(vec![
            throughput("<a&b>", 0.0, 1000, 1000),
            throughput("<a&b>", 0.5, 1000, 1250),
        ]);
        let svg = profile.to_svg();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("&lt;a&amp;b&gt;") && !svg.contains("<a&b>"));
        assert_eq!(svg.matches("<circle").count(), 2);
        let json = profile.to_json();
        assert!(json.contains("\"region\":\"<a&b>\""));
        assert!(json.contains("\"program_speedup\":0.2"), "{json}");
        let table = profile.to_string();
        assert!(
            table.contains("<a&b>") && table.contains("+20.0%"),
            "{table}"
        );
        assert!(Profile::default().to_svg().contains("no region"));
    }
}
