#[smarm::sim::test(swarm = 1)]
fn runs() {}

fn main() {}
