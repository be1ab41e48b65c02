#[smarm::sim::test(seeds = 10)]
fn runs(n: u32) {
    let _ = n;
}

fn main() {}
