//! Regions a causal profile can speed up, by name: the user's
//! (`causal::region`), every behaviour callback (its server's type and the
//! callback), and actors (by label or registered name). A name is interned to an id once, in
//! this process; each runtime notes which regions it entered
//! (`Delays::entered`), and its profiler picks among those.
//!
//! Regions are leaked, as progress points are: a program names a bounded
//! set of them (one per region, callback and label), and an id stays
//! valid for the life of the process (R1).

use crate::lock::lock_std;
use std::collections::HashMap;
use std::sync::Mutex;

/// One region's name.
pub(crate) struct RegionInfo {
    pub(crate) name: &'static str,
}

#[derive(Default)]
struct Regions {
    all: Vec<&'static RegionInfo>,
    by_name: HashMap<&'static str, u32>,
    /// Callback regions by (owner, callback), so a callback's entry finds
    /// its id without formatting its name.
    by_pair: HashMap<(&'static str, &'static str), u32>,
}

static REGIONS: Mutex<Option<Regions>> = Mutex::new(None);

impl Regions {
    /// The id of `name`, made at its first use (R1).
    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.by_name.get(name) {
            return id;
        }
        let name: &'static str = Box::leak(name.to_owned().into_boxed_str());
        let id = u32::try_from(self.all.len()).unwrap_or(u32::MAX - 1);
        self.all.push(Box::leak(Box::new(RegionInfo { name })));
        self.by_name.insert(name, id);
        id
    }
}

/// The id of the region named `name`.
pub(crate) fn enter_named(name: &str) -> u32 {
    lock_std(&REGIONS)
        .get_or_insert_with(Regions::default)
        .intern(name)
}

/// The id of callback `callback` of `owner` (its region is named
/// `owner::callback`).
pub(crate) fn enter_callback(owner: &'static str, callback: &'static str) -> u32 {
    let mut regions = lock_std(&REGIONS);
    let regions = regions.get_or_insert_with(Regions::default);
    match regions.by_pair.get(&(owner, callback)) {
        Some(&id) => id,
        None => {
            let id = regions.intern(&format!("{owner}::{callback}"));
            regions.by_pair.insert((owner, callback), id);
            id
        }
    }
}

/// The id of the region of an actor labelled `label` (named
/// `actor label`).
pub(crate) fn actor_region(label: &str) -> u32 {
    let mut regions = lock_std(&REGIONS);
    regions
        .get_or_insert_with(Regions::default)
        .intern(&format!("actor {label}"))
}

/// Region `id`, if there is one.
pub(crate) fn info(id: u32) -> Option<&'static RegionInfo> {
    lock_std(&REGIONS)
        .as_ref()
        .and_then(|r| r.all.get(id as usize).copied())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_one_region_however_it_is_reached() {
        let a = enter_named("causal-test region::name");
        let b = enter_named("causal-test region::name");
        let c = enter_callback("causal-test region", "name");
        assert_eq!(a, b);
        assert_eq!(a, c, "a callback's region is its owner::callback name");
        assert_eq!(info(a).map(|r| r.name), Some("causal-test region::name"));
        let actor = actor_region("causal-test worker");
        assert_ne!(actor, a);
        assert_eq!(
            info(actor).map(|r| r.name),
            Some("actor causal-test worker")
        );
    }
}
