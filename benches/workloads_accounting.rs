//! The workloads of `workloads.rs` with `PreemptingAlloc` in its heap
//! accounting mode as the global allocator, labelled
//! `peer=smarm-accounting`: the cost of per-actor heap accounting,
//! measured against `--bench workloads_preempt` in the same sitting.
//!
//! ```sh
//! cargo bench --bench workloads_preempt -- pingpong skynet
//! cargo bench --bench workloads_accounting -- pingpong skynet
//! ```

#[global_allocator]
static ALLOC: smarm::PreemptingAlloc = smarm::PreemptingAlloc::system().with_heap_accounting();

#[path = "workloads.rs"]
mod workloads;

fn main() -> std::process::ExitCode {
    workloads::main_as("smarm-accounting")
}
