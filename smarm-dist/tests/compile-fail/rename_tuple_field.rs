#[derive(smarm::dist::Term)]
struct Pair(#[term(rename = "left")] u8, u8);

fn main() {}
