//! The layer check: no module of smarm-core reaches a layer above its own.
//!
//! The layer order is the table in the crate documentation
//! (`src/lib.rs`, section "Layers"); the scanner (`layer_scan`, shared
//! with smarm-otp's and smarm-dist's layer tests) reads it from there, so
//! the documented order and the checked one cannot drift apart. Every
//! `crate::` and `super::` path in non-test code is resolved to the module
//! it names, inline paths included; a path into a higher layer is a
//! violation. A folder is one layer: every module in it must sit on its
//! folder's row.

#![allow(clippy::unwrap_used)] // a scan that cannot read the sources must fail the test

mod layer_scan;

use layer_scan::*;
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// Both checks, as every crate's layer test runs them.
#[test]
fn the_crate_keeps_its_layers() {
    check_crate(env!("CARGO_MANIFEST_DIR"), "smarm-core");
}

/// The scanner itself: inline paths, brace groups, `super::` and test
/// items are all seen (or skipped) as documented.
#[test]
fn the_scanner_resolves_paths_as_documented() {
    let module = vec!["slot".to_string(), "table".to_string()];
    let src = r#"
        use crate::{actor::Pid, sync::{LockClass, RawMutex}};
        use super::word::SlotWord;
        // crate::commented::Out
        fn f() { let _ = "crate::in_string"; crate::channel::ReplyCell::new(); }
        #[cfg(test)]
        mod tests { use crate::runtime::Shared; }
        #[cfg(all(test, loom))]
        use crate::io::Driver;
        #[cfg(not(test))]
        use crate::park::Production;
        #[cfg(any(test, feature = "trace"))]
        fn g() { crate::time::Either::new(); }
    "#;
    let paths: BTreeSet<String> = paths_in(src, &module)
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    let expected: BTreeSet<String> = [
        "actor::Pid",
        "sync::LockClass",
        "sync::RawMutex",
        "slot::word::SlotWord",
        "channel::ReplyCell::new",
        "park::Production",
        "time::Either::new",
    ]
    .into_iter()
    .map(str::to_string)
    .collect();
    assert_eq!(paths, expected);
    for (pred, test_only) in [
        ("test", true),
        ("all(test, loom)", true),
        ("all(loom, any(test, test))", true),
        ("not(test)", false),
        ("any(test, feature = \"trace\")", false),
        ("feature = \"test\"", false),
        ("all(not(test), loom)", false),
    ] {
        assert_eq!(requires_test(pred), test_only, "cfg({pred})");
    }

    let table = vec![
        ("sync".to_string(), 0),
        ("slot".to_string(), 1),
        ("sync::mutex".to_string(), 6),
    ];
    let segs = |s: &str| s.split("::").map(str::to_string).collect::<Vec<_>>();
    assert_eq!(layer_of(&table, &segs("sync::mutex::Mutex")).unwrap().1, 6);
    assert_eq!(layer_of(&table, &segs("sync::RawMutex")).unwrap().1, 0);
    assert!(layer_of(&table, &segs("std::sync")).is_none());

    // A folder with a module on a layer of its own spans two layers.
    let files: Vec<PathBuf> = [
        "sync/mod.rs",
        "sync/mutex.rs",
        "sync/futex.rs",
        "slot/mod.rs",
        "lib.rs",
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect();
    assert_eq!(
        folders_spanning_layers(&table, &files)
            .into_iter()
            .collect::<Vec<_>>(),
        ["sync/ spans layers 0 (sync), 6 (sync::mutex)"]
    );
    assert!(folders_spanning_layers(&table[..2], &files).is_empty());
}

/// Wait (W1): only the wait module opens and retires waits on the slot
/// word; every blocking primitive goes through its `Wait` guard. (The raw
/// park is private to the scheduler, so the compiler enforces that half.)
#[test]
fn only_the_wait_module_opens_and_retires_waits() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut offenders = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap();
        let name = rel.file_name().unwrap().to_string_lossy();
        if rel == Path::new("scheduler/wait.rs")
            || rel == Path::new("slot/word.rs")
            || name == "loom_models.rs"
            || name == "tests.rs"
        {
            continue;
        }
        let text = strip(&without_test_items(&strip(
            &fs::read_to_string(&file).unwrap(),
        )));
        for call in [".begin_wait(", ".retire_wait("] {
            if text.contains(call) {
                offenders.push(format!("{} calls {call}", rel.display()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "open and retire waits through scheduler::Wait (wait (W1)):\n  {}",
        offenders.join("\n  ")
    );
}
