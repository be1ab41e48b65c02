use smarm::Actor;

#[derive(Actor)]
struct NotAnEnum {
    count: u64,
}

fn main() {}
