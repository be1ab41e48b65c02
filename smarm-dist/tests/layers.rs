//! The layer check: no module of smarm-dist reaches a layer above its own,
//! and every folder is one layer, by the table in the crate documentation
//! (`src/lib.rs`, section "Layers"), with smarm-core's scanner.

#[path = "../../smarm-core/tests/layer_scan/mod.rs"]
mod layer_scan;

#[test]
fn the_crate_keeps_its_layers() {
    layer_scan::check_crate(env!("CARGO_MANIFEST_DIR"), "smarm-dist");
}
