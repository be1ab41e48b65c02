//! Causal profiling's progress points (feature `smarm-causal`): every
//! visit counted, from every scheduler; one point per name; a latency
//! point's ends never read above its begins; a name used for both kinds
//! refused with the macro's name. Without the feature the macros still
//! build (and do nothing). Each test uses names of its own: points live as
//! long as the process, and the tests share one.
#![allow(clippy::unwrap_used)]

#[cfg(feature = "smarm-causal")]
mod with_the_feature {
    use smarm::causal::{ProgressCount, progress_point, progress_points};
    use smarm::runtime::{Config, Runtime};
    use smarm::{channel, spawn};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    const ACTORS: u64 = 8;
    const VISITS: u64 = 20_000;

    #[test]
    fn a_throughput_point_counts_every_visit_from_every_scheduler() {
        let rt = Runtime::new(Config::default().threads(2)).unwrap();
        rt.run(|| {
            let actors: Vec<_> = (0..ACTORS)
                .map(|_| {
                    spawn(|| {
                        for i in 0..VISITS {
                            smarm::progress!("test.throughput.all");
                            if i % 64 == 0 {
                                smarm::yield_now();
                            }
                        }
                    })
                })
                .collect();
            for a in actors {
                a.join().unwrap();
            }
        });
        assert_eq!(
            progress_point("test.throughput.all"),
            Some(ProgressCount::Throughput {
                visits: ACTORS * VISITS
            })
        );
    }

    #[test]
    fn sites_with_one_name_count_into_one_point() {
        const NAME: &str = "test.throughput.shared";
        for _ in 0..3 {
            smarm::progress!(NAME);
        }
        std::thread::spawn(|| smarm::progress!("test.throughput.shared"))
            .join()
            .unwrap();
        assert_eq!(
            progress_point(NAME),
            Some(ProgressCount::Throughput { visits: 4 })
        );
    }

    #[test]
    fn unvisited_names_have_no_point_and_points_are_listed_by_name() {
        assert_eq!(progress_point("test.list.never"), None);
        smarm::progress!("test.list.b");
        smarm::latency_begin!("test.list.a");
        let points = progress_points();
        let names: Vec<&str> = points.iter().map(|(n, _)| *n).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted, "points not sorted by name");
        assert!(names.contains(&"test.list.a") && names.contains(&"test.list.b"));
        assert!(!names.contains(&"test.list.never"));
        let a = points.iter().find(|(n, _)| *n == "test.list.a").unwrap().1;
        assert_eq!(a, ProgressCount::Latency { begins: 1, ends: 0 });
    }

    /// Requests begun by one actor and ended by another it sends to, while
    /// a plain thread reads the point: every reading has `ends <= begins`
    /// (C2), and at the end both count every request. (The orderings that
    /// make C2 hold are checked by the loom model `causal::loom_models`.)
    #[test]
    fn a_latency_point_ends_in_another_actor_and_never_reads_ahead() {
        const REQUESTS: u64 = 100_000;
        const NAME: &str = "test.latency.pipeline";
        let done = Arc::new(AtomicBool::new(false));
        let reader = {
            let done = done.clone();
            std::thread::spawn(move || {
                let mut readings = 0u64;
                while !done.load(Ordering::Relaxed) {
                    if let Some(ProgressCount::Latency { begins, ends }) = progress_point(NAME) {
                        assert!(ends <= begins, "ends {ends} read above begins {begins}");
                        readings += 1;
                    }
                }
                readings
            })
        };
        let rt = Runtime::new(Config::default().threads(2)).unwrap();
        rt.run(|| {
            let (tx, rx) = channel::<u64>();
            let handler = spawn(move || {
                while rx.recv().is_ok() {
                    smarm::latency_end!(NAME);
                }
            });
            for i in 0..REQUESTS {
                smarm::latency_begin!(NAME);
                tx.send(i).unwrap();
            }
            drop(tx);
            handler.join().unwrap();
        });
        done.store(true, Ordering::Relaxed);
        let readings = reader.join().unwrap();
        assert!(readings > 0, "the reader never saw the point");
        assert_eq!(
            progress_point(NAME),
            Some(ProgressCount::Latency {
                begins: REQUESTS,
                ends: REQUESTS
            })
        );
    }

    #[test]
    fn a_name_used_for_both_kinds_panics_naming_the_macro() {
        smarm::progress!("test.kinds.mixed");
        let err = std::thread::spawn(|| smarm::latency_begin!("test.kinds.mixed"))
            .join()
            .unwrap_err();
        let msg = err.downcast_ref::<String>().unwrap();
        assert!(
            msg.starts_with("smarm::latency_begin!(\"test.kinds.mixed\")"),
            "{msg}"
        );
        assert!(msg.contains("already a throughput point"), "{msg}");
        assert!(msg.contains("a name of its own"), "{msg}");

        smarm::latency_end!("test.kinds.latency");
        let err = std::thread::spawn(|| smarm::progress!("test.kinds.latency"))
            .join()
            .unwrap_err();
        let msg = err.downcast_ref::<String>().unwrap();
        assert!(msg.starts_with("smarm::progress!"), "{msg}");
        assert!(msg.contains("already a latency point"), "{msg}");
        // The refused site counted nothing.
        assert_eq!(
            progress_point("test.kinds.latency"),
            Some(ProgressCount::Latency { begins: 0, ends: 1 })
        );
    }
}

/// Without the feature the macros take the same names (constants
/// included) and compile to nothing: what this test checks is that this
/// file builds in the default test run, and that each macro is a `()`
/// expression there as it is with the feature.
#[cfg(not(feature = "smarm-causal"))]
#[test]
fn without_the_feature_the_macros_build_and_do_nothing() {
    const NAME: &str = "test.off";
    let visits: [(); 3] = [
        smarm::progress!(NAME),
        smarm::latency_begin!("test.off.latency"),
        smarm::latency_end!("test.off.latency"),
    ];
    assert_eq!(visits.len(), 3);
}
