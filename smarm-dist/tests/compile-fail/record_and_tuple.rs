#[derive(smarm::dist::Term)]
#[term(record, tuple)]
struct Point {
    x: i32,
    y: i32,
}

fn main() {}
