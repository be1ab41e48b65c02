use smarm::{Actor, Reply};

#[derive(Actor)]
enum Counter {
    Get(Reply<u64>, Reply<u64>),
}

fn main() {}
