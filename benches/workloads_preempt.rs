//! The workloads of `workloads.rs` with `PreemptingAlloc` as the global
//! allocator, labelled `peer=smarm-preempt`: the cost of allocation
//! safepoints, measured against `--bench workloads` in the same sitting.
//!
//! ```sh
//! cargo bench --bench workloads -- pingpong skynet
//! cargo bench --bench workloads_preempt -- pingpong skynet
//! ```

#[global_allocator]
static ALLOC: smarm::PreemptingAlloc = smarm::PreemptingAlloc::system();

#[path = "workloads.rs"]
mod workloads;

fn main() -> std::process::ExitCode {
    workloads::main_as("smarm-preempt")
}
