#[derive(smarm::dist::Term)]
union Bits {
    a: u32,
    b: f32,
}

fn main() {}
