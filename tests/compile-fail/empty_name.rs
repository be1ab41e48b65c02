use smarm::Actor;

#[derive(Actor)]
#[actor(name = "")]
enum Counter {
    Reset,
}

fn main() {}
