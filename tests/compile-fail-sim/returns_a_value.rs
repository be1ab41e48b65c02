#[smarm::sim::test]
fn runs() -> u32 {
    1
}

fn main() {}
