//! Causal profiling (feature `smarm-causal`). Progress points: every
//! visit counted, from every scheduler; one point per name; a latency
//! point's ends never read above its begins; a name used for both kinds
//! refused with the macro's name. Sessions: experiments on the regions a
//! program marks and on its behaviour callbacks, one session at a time,
//! a whole run's profile written where the configuration says, misuse
//! refused by name. Without the feature the macros and the wall-clock
//! timers still build (and are the plain forms). Each test uses names of
//! its own: points and regions live as long as the process, and the tests
//! share one.
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

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

/// Profiling sessions on live runtimes. The experiments' choices are
/// random; what is asserted is what every session guarantees.
#[cfg(feature = "smarm-causal")]
mod sessions {
    use smarm::causal::{self, Delta, Profile, Settings};
    use smarm::runtime::{Config, Runtime};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    /// A worker that runs the region `region` and visits `point` until
    /// `stop`.
    fn worker(
        region: &'static str,
        point: &'static str,
        stop: Arc<AtomicBool>,
    ) -> smarm::JoinHandle {
        smarm::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                causal::region(region, || std::hint::black_box((0..2_000u64).sum::<u64>()));
                match point {
                    "test.session.items" => smarm::progress!("test.session.items"),
                    _ => smarm::progress!("test.session.calls"),
                }
                smarm::yield_now();
            }
        })
    }

    fn short(duration_ms: u64) -> Settings {
        Settings::new(Duration::from_millis(duration_ms)).window(Duration::from_millis(40))
    }

    /// Every experiment of `profile` is on a region named `region`, at a
    /// speedup in 5% steps, no longer than its window, with the point.
    fn check(profile: &Profile, region: &str, point: &str) {
        assert!(
            profile.experiments.len() >= 5,
            "{} experiments",
            profile.experiments.len()
        );
        for e in &profile.experiments {
            assert_eq!(e.region, region);
            let steps = e.speedup * 20.0;
            assert!((0.0..=1.0).contains(&e.speedup) && (steps - steps.round()).abs() < 1e-9);
            assert!(
                e.duration <= Duration::from_millis(40 * 16 + 100),
                "{:?}",
                e.duration
            );
            assert!(
                e.points
                    .iter()
                    .any(|p| p.name == point && matches!(p.delta, Delta::Throughput { .. })),
                "{point} missing from {:?}",
                e.points
            );
        }
    }

    #[test]
    fn a_session_experiments_on_the_regions_the_program_marks() {
        let rt = Runtime::new(Config::default().threads(2)).unwrap();
        let profile = rt.run(|| {
            let stop = Arc::new(AtomicBool::new(false));
            let w = worker("test.session.work", "test.session.items", stop.clone());
            let profile = causal::profile_with(short(1_500).only("test.session.work"));
            stop.store(true, Ordering::Relaxed);
            w.join().unwrap();
            profile
        });
        check(&profile, "test.session.work", "test.session.items");
        assert!(
            profile
                .experiments
                .iter()
                .any(|e| e.region_time > Duration::ZERO),
            "the region ran during its experiments"
        );
        assert_eq!(
            causal::latest_profile().map(|p| !p.experiments.is_empty()),
            Some(true)
        );
    }

    #[test]
    fn behaviour_callbacks_are_regions_named_by_server_and_callback() {
        use smarm::gen_server::{self, Ctx, Flow, GenServer, InitError, Reply};
        struct Squarer;
        impl GenServer for Squarer {
            type Args = ();
            type Call = u64;
            type Reply = u64;
            type Cast = ();
            type Info = ();
            fn init(_: (), _ctx: &mut Ctx<Self>) -> Result<Self, InitError> {
                Ok(Squarer)
            }
            fn handle_call(&mut self, n: u64, reply: Reply<u64>, _ctx: &mut Ctx<Self>) -> Flow {
                reply.reply(n * n);
                Flow::Continue
            }
        }
        let rt = Runtime::new(Config::default().threads(2)).unwrap();
        let profile = rt.run(|| {
            let server = gen_server::start::<Squarer>(()).unwrap();
            let stop = Arc::new(AtomicBool::new(false));
            let (s, flag) = (server.clone(), stop.clone());
            let client = smarm::spawn(move || {
                let mut n = 0u64;
                while !flag.load(Ordering::Relaxed) {
                    n += 1;
                    assert_eq!(s.call(n), Ok(n * n));
                    smarm::progress!("test.session.calls");
                }
            });
            let profile = causal::profile_with(short(1_500).only("Squarer::handle_call"));
            stop.store(true, Ordering::Relaxed);
            client.join().unwrap();
            server.shutdown().unwrap();
            profile
        });
        let name = format!("{}::handle_call", std::any::type_name::<Squarer>());
        check(&profile, &name, "test.session.calls");
    }

    #[test]
    fn a_registered_actor_is_a_region_by_its_name() {
        let rt = Runtime::new(Config::default().threads(2)).unwrap();
        let profile = rt.run(|| {
            let stop = Arc::new(AtomicBool::new(false));
            let flag = stop.clone();
            let named = smarm::spawn(move || {
                let (tx, _rx) = smarm::channel::<()>();
                smarm::register(smarm::Name::<()>::new("test.session.named"), tx).unwrap();
                while !flag.load(Ordering::Relaxed) {
                    std::hint::black_box((0..2_000u64).sum::<u64>());
                    smarm::progress!("test.session.named.items");
                    smarm::yield_now();
                }
            });
            let profile = causal::profile_with(short(1_500).only("actor test.session.named"));
            stop.store(true, Ordering::Relaxed);
            named.join().unwrap();
            profile
        });
        check(
            &profile,
            "actor test.session.named",
            "test.session.named.items",
        );
    }

    #[test]
    fn one_session_at_a_time_in_an_actor_with_a_window() {
        let rt = Runtime::new(Config::default().threads(2)).unwrap();
        rt.run(|| {
            let first = smarm::spawn(|| causal::profile_with(short(300)));
            smarm::sleep(Duration::from_millis(50));
            let second = smarm::spawn(|| causal::profile_with(short(300)));
            let err = second.join().unwrap_err();
            assert!(
                err.to_string()
                    .contains("smarm::causal::profile: a profiling session already runs"),
                "{err}"
            );
            first.join().unwrap();
        });
        let zero = smarm::run(|| {
            smarm::spawn(|| causal::profile_with(short(100).window(Duration::ZERO)))
                .join()
                .unwrap_err()
                .to_string()
        });
        assert!(
            zero.contains("smarm::causal::profile_with: Settings::window is zero"),
            "{zero}"
        );
        let outside = std::panic::catch_unwind(|| causal::profile(Duration::from_millis(1)));
        let message = outside.unwrap_err();
        let message = message
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| message.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        assert!(message.contains("smarm::causal::profile"), "{message}");
    }

    #[test]
    fn a_whole_run_is_profiled_and_written_where_the_config_says() {
        let path = std::env::temp_dir().join(format!("smarm-causal-{}.coz", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let rt = Runtime::new(Config::default().threads(2).causal_profile(&path)).unwrap();
        rt.run(|| {
            let stop = Arc::new(AtomicBool::new(false));
            let w = worker("test.session.whole", "test.session.items", stop.clone());
            smarm::time::sleep_wall(Duration::from_millis(1_800));
            stop.store(true, Ordering::Relaxed);
            w.join().unwrap();
        });
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let profile = Profile::from_coz(&text).unwrap();
        assert!(!profile.experiments.is_empty(), "{text}");
        assert!(
            profile
                .experiments
                .iter()
                .all(|e| e.region == "test.session.whole"),
            "only the regions this run entered: {text}"
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

/// Without the feature the wall-clock timers are the plain ones: they
/// build and keep their deadlines.
#[cfg(not(feature = "smarm-causal"))]
#[test]
fn without_the_feature_the_wall_timers_are_the_plain_ones() {
    use std::time::{Duration, Instant};
    smarm::run(|| {
        let t0 = Instant::now();
        smarm::time::sleep_wall(Duration::from_millis(5));
        assert!(t0.elapsed() >= Duration::from_millis(5));
        let (tx, rx) = smarm::channel::<&str>();
        smarm::time::send_after_to_wall(Duration::from_millis(5), &tx, "tick");
        assert_eq!(rx.recv().unwrap(), "tick");
        assert!(t0.elapsed() >= Duration::from_millis(10));
    });
}
