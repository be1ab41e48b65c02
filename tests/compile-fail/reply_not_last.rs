use smarm::{Actor, Reply};

#[derive(Actor)]
enum Counter {
    Swap(Reply<u64>, u64),
}

fn main() {}
