use smarm::Actor;

#[derive(Actor)]
enum Holder<T> {
    Put(T),
}

fn main() {}
