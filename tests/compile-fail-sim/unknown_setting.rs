#[smarm::sim::test(seeds = 10, threads = 4)]
fn runs() {}

fn main() {}
