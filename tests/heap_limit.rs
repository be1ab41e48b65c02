//! Per-actor heap accounting and limits: with the accounting allocator,
//! each actor's live heap bytes follow what it allocated and what was
//! freed of it (by anyone), across switches and migration; an actor past
//! its `max_heap_size` is stopped with `DownReason::HeapLimit`, reported,
//! and restarted by its supervisor, while the others run on.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

#[global_allocator]
static ALLOC: smarm::PreemptingAlloc = smarm::PreemptingAlloc::system().with_heap_accounting();

use smarm::runtime::{self, Config};
use smarm::supervisor::{self, ChildSpec, Restart, Strategy, SupFlags};
use smarm::{Builder, DownReason, actor_info, self_pid};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const MIB: usize = 1 << 20;

/// The calling actor's live heap bytes.
fn my_heap() -> u64 {
    actor_info(self_pid())
        .expect("the caller is alive")
        .heap_bytes
        .expect("the accounting allocator is installed")
}

/// Within `slack` bytes: what `actor_info` itself allocates while it
/// reads is counted too.
fn near(actual: u64, expected: u64, slack: u64) -> bool {
    actual.abs_diff(expected) <= slack
}

#[test]
fn an_actors_heap_bytes_follow_its_allocations_and_frees() {
    smarm::run(|| {
        let h = smarm::spawn(|| {
            my_heap(); // warm up whatever a first read allocates for good
            let before = my_heap();
            let block = black_box(vec![1u8; MIB]);
            let holding = my_heap();
            drop(block);
            let after = my_heap();
            // A Vec grown by pushes goes through realloc: charged as it grows.
            let mut grown = Vec::new();
            for i in 0..MIB {
                grown.push(i as u8);
            }
            let growing = my_heap();
            let capacity = grown.capacity() as u64;
            drop(black_box(grown));
            (before, holding, after, growing, capacity)
        });
        let (before, holding, after, growing, capacity) = h.join().unwrap();
        assert!(
            near(holding, before + MIB as u64, 1024),
            "{before} then {holding}"
        );
        assert!(near(after, before, 1024), "{before}, freed: {after}");
        assert!(
            near(growing, before + capacity, 1024),
            "{before}, grown: {growing}"
        );
    });
}

#[test]
fn a_block_freed_by_another_actor_is_credited_to_the_one_that_allocated_it() {
    smarm::run(|| {
        let (tx, rx) = smarm::channel::<Vec<u8>>();
        let (done_tx, done_rx) = smarm::channel::<()>();
        let consumer = smarm::spawn(move || {
            my_heap();
            let before = my_heap();
            while let Ok(block) = rx.recv() {
                drop(black_box(block));
                done_tx.send(()).unwrap();
            }
            my_heap().saturating_sub(before)
        });
        my_heap();
        let before = my_heap();
        for _ in 0..20 {
            tx.send(vec![7u8; MIB]).unwrap();
            done_rx.recv().unwrap();
        }
        let after = my_heap();
        drop(tx);
        let consumer_grew = consumer.join().unwrap();
        // 20 MiB went through; the producer holds none of it, and the
        // consumer was not charged for what it freed either way.
        assert!(near(after, before, 4096), "producer: {before} then {after}");
        assert!(consumer_grew < 4096, "consumer grew by {consumer_grew}");
    });
}

#[test]
fn accounting_follows_an_actor_across_yields_preemption_and_schedulers() {
    runtime::init(Config::exact(2)).run(|| {
        let workers: Vec<_> = (0..8)
            .map(|_| {
                smarm::spawn(|| {
                    my_heap();
                    let before = my_heap();
                    let mut held = Vec::with_capacity(200);
                    let mut threads = std::collections::HashSet::new();
                    for i in 0..200 {
                        held.push(black_box(vec![i as u8; 10_000]));
                        if i % 2 == 0 {
                            smarm::yield_now(); // may move to the other scheduler
                        }
                        // Busy work that allocates: preempted at allocations.
                        let mut spin = 0u64;
                        for j in 0..2_000u64 {
                            spin = spin.wrapping_add(*black_box(Box::new(j)));
                        }
                        black_box(spin);
                        threads.insert(std::thread::current().id());
                    }
                    let holding = my_heap();
                    drop(held);
                    let after = my_heap();
                    (before, holding, after, threads.len())
                })
            })
            .collect();
        let mut threads_seen = 0;
        for w in workers {
            let (before, holding, after, threads) = w.join().unwrap();
            threads_seen = threads_seen.max(threads);
            let held = 200 * 10_000 + 200 * std::mem::size_of::<Vec<u8>>() as u64;
            assert!(
                near(holding, before + held, 8192),
                "{before}, holding {holding}"
            );
            assert!(near(after, before, 8192), "{before}, after {after}");
        }
        assert!(threads_seen >= 1);
    });
}

#[test]
fn an_actor_past_its_heap_limit_is_stopped_with_the_memory_reason_and_reported() {
    let reports = Arc::new(Mutex::new(Vec::new()));
    let sink = reports.clone();
    smarm::report::set_handler(move |r| sink.lock().unwrap().push(r.to_string()));
    smarm::run(|| {
        let bystander = smarm::spawn(|| {
            let mut sum = 0u64;
            for i in 0..50u64 {
                sum += black_box(vec![i; 1000]).iter().sum::<u64>();
                smarm::sleep(Duration::from_millis(1));
            }
            sum
        });
        let (hoarder, down) = Builder::new()
            .name("hoarder")
            .max_heap_size(4 * MIB)
            .spawn_monitor(|| {
                let mut hoard = Vec::new();
                loop {
                    hoard.push(black_box(vec![0u8; 64 * 1024]));
                    smarm::yield_now();
                }
            })
            .unwrap();
        assert_eq!(down.rx.recv().unwrap().reason, DownReason::HeapLimit);
        assert_eq!(hoarder.join().unwrap_err().reason(), DownReason::HeapLimit);
        assert_eq!(
            bystander.join().unwrap(),
            (0..50u64).map(|i| i * 1000).sum::<u64>()
        );
    });
    smarm::report::reset_handler();
    let reports = reports.lock().unwrap();
    let report = reports
        .iter()
        .find(|r| r.contains("(hoarder)"))
        .expect("the heap-limit stop is reported");
    assert!(report.contains("exceeded its heap limit"), "{report}");
    assert!(report.contains(&format!("{} bytes", 4 * MIB)), "{report}");
}

#[test]
fn one_allocation_past_the_limit_is_granted_and_the_actor_stops_at_its_next_safepoint() {
    smarm::run(|| {
        let (_, down) = Builder::new()
            .max_heap_size(MIB)
            .spawn_monitor(|| {
                let big = black_box(vec![1u8; 8 * MIB]);
                let sum: u64 = big.iter().map(|&b| u64::from(b)).sum();
                assert_eq!(sum, 8 * MIB as u64, "the block is usable");
                smarm::sleep(Duration::from_millis(1)); // the safepoint
                unreachable!("stopped at the sleep");
            })
            .unwrap();
        assert_eq!(down.rx.recv().unwrap().reason, DownReason::HeapLimit);
    });
}

#[test]
fn an_actor_within_its_limit_runs_to_the_end() {
    smarm::run(|| {
        let h = Builder::new()
            .max_heap_size(4 * MIB)
            .spawn(|| {
                for _ in 0..100 {
                    let block = black_box(vec![0u8; MIB]); // 1 MiB at a time, freed
                    drop(block);
                    smarm::yield_now();
                }
                let info = actor_info(self_pid()).unwrap();
                (info.heap_limit, info.heap_bytes.unwrap() < MIB as u64)
            })
            .unwrap();
        assert_eq!(h.join().unwrap(), (Some(4 * MIB as u64), true));
    });
}

#[test]
fn a_supervisor_restarts_a_child_stopped_for_its_heap_limit() {
    smarm::report::set_handler(|_| {}); // the expected crash and restart reports
    smarm::run(|| {
        let starts = Arc::new(AtomicUsize::new(0));
        let (reasons_tx, reasons) = smarm::channel::<usize>();
        let s = starts.clone();
        let sup = supervisor::start(
            SupFlags::new(Strategy::OneForOne).intensity(5, Duration::from_secs(10)),
            vec![
                ChildSpec::new("hoarder", move || {
                    let n = s.fetch_add(1, Ordering::SeqCst);
                    let tx = reasons_tx.clone();
                    let child = Builder::new()
                        .link()
                        .max_heap_size(2 * MIB)
                        .spawn(move || {
                            tx.send(n).unwrap();
                            if n == 0 {
                                let mut hoard = Vec::new();
                                loop {
                                    hoard.push(black_box(vec![0u8; 64 * 1024]));
                                    smarm::yield_now();
                                }
                            }
                            smarm::sleep(Duration::from_secs(3600));
                        })
                        .map_err(supervisor::StartError::Spawn)?;
                    Ok(child.pid())
                })
                .restart(Restart::Permanent),
            ],
        )
        .unwrap();
        assert_eq!(reasons.recv().unwrap(), 0);
        assert_eq!(
            reasons.recv().unwrap(),
            1,
            "restarted after the heap-limit stop"
        );
        assert_eq!(starts.load(Ordering::SeqCst), 2);
        sup.shutdown().unwrap();
    });
    smarm::report::reset_handler();
}

#[test]
fn over_aligned_blocks_keep_their_alignment() {
    #[repr(align(4096))]
    struct Page([u8; 4096]);
    #[repr(align(64))]
    struct Line([u8; 64]);
    smarm::run(|| {
        let pages: Vec<Box<Page>> = (0..16).map(|_| Box::new(Page([3; 4096]))).collect();
        let lines: Vec<Box<Line>> = (0..256).map(|_| Box::new(Line([5; 64]))).collect();
        for p in &pages {
            assert_eq!(&**p as *const Page as usize % 4096, 0);
            assert_eq!(p.0[4095], 3);
        }
        for l in &lines {
            assert_eq!(&**l as *const Line as usize % 64, 0);
            assert_eq!(l.0[63], 5);
        }
        let bytes = my_heap();
        assert!(bytes >= 16 * 4096 + 256 * 64, "{bytes}");
    });
}

#[test]
fn stack_pages_count_the_pages_a_deep_stack_uses() {
    smarm::run(|| {
        /// Stack pages seen from 200 frames of at least 1 KiB down.
        fn deep(n: u32) -> u64 {
            let pad = black_box([n as u8; 1024]);
            let pages = if n == 0 {
                actor_info(self_pid()).unwrap().stack_pages.unwrap()
            } else {
                deep(n - 1)
            };
            black_box(&pad);
            pages
        }
        let shallow = smarm::spawn(|| actor_info(self_pid()).unwrap().stack_pages.unwrap())
            .join()
            .unwrap();
        // 200 KiB of frames (twice that unoptimised): a stack of its own.
        let deep_pages = smarm::Builder::new()
            .stack_size(1 << 20)
            .spawn(|| deep(200))
            .unwrap()
            .join()
            .unwrap();
        assert!(shallow >= 1, "a running actor's stack has a page in use");
        // The pages in use are resident (pooled stacks may hold more).
        assert!(deep_pages >= 200 * 1024 / 4096, "{deep_pages}");
        let (tx, rx) = smarm::channel::<()>();
        let sleeper = smarm::spawn(move || {
            let _ = rx.recv();
        });
        smarm::sleep(Duration::from_millis(5));
        assert!(actor_info(sleeper.pid()).unwrap().stack_pages.unwrap() >= 1);
        drop(tx);
        sleeper.join().unwrap();
    });
}

/// An actor that allocates in a loop with no blocking call never reaches a
/// safepoint that unwinds: it is ended at an allocation once its timeslice
/// is spent, with the memory reason, while an actor on the same (single)
/// scheduler runs to its end.
#[test]
fn an_actor_allocating_without_a_blocking_call_is_ended_at_an_allocation() {
    let reports = Arc::new(Mutex::new(Vec::new()));
    let sink = reports.clone();
    smarm::report::set_handler(move |r| sink.lock().unwrap().push(r.to_string()));
    runtime::init(Config::exact(1)).run(|| {
        let bystander = smarm::spawn(|| {
            let mut sum = 0u64;
            for i in 0..20u64 {
                smarm::sleep(Duration::from_millis(1));
                sum += i;
            }
            sum
        });
        let (hoarder, down) = Builder::new()
            .name("tight hoarder")
            .max_heap_size(2 * MIB)
            .spawn_monitor(|| {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(black_box(vec![1u8; 4096]));
                }
            })
            .unwrap();
        assert_eq!(down.rx.recv().unwrap().reason, DownReason::HeapLimit);
        assert_eq!(hoarder.join().unwrap_err().reason(), DownReason::HeapLimit);
        assert_eq!(bystander.join().unwrap(), (0..20).sum::<u64>());
        // The runtime goes on spawning and finishing actors.
        assert_eq!(smarm::spawn(|| 7).join().unwrap(), 7);
    });
    smarm::report::reset_handler();
    let reports = reports.lock().unwrap();
    let report = reports
        .iter()
        .find(|r| r.contains("(tight hoarder)"))
        .expect("the heap-limit end is reported");
    assert!(report.contains("exceeded its heap limit"), "{report}");
    assert!(report.contains("ended at an allocation"), "{report}");
}
