#[derive(smarm::dist::Term)]
#[term(record)]
enum Shape {
    Circle(f64),
}

fn main() {}
