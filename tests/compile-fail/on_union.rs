use smarm::Actor;

#[derive(Actor)]
union NotAnEnum {
    a: u32,
    b: f32,
}

fn main() {}
