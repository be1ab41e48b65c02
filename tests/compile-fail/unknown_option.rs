use smarm::Actor;

#[derive(Actor)]
#[actor(nmae = "counter")]
enum Counter {
    Reset,
}

fn main() {}
