struct Opaque;

#[derive(smarm::dist::Term)]
struct Holder {
    inner: Opaque,
}

fn main() {}
