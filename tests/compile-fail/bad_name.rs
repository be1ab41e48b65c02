use smarm::Actor;

#[derive(Actor)]
#[actor(name = "my counter")]
enum Counter {
    Reset,
}

fn main() {}
