//! Types with `#[derive(Term)]`, one of each mapping, shared by the
//! term tests and the Erlang round trip.

#[derive(smarm::dist::Term, Debug, PartialEq, Clone)]
pub enum Command {
    Reset,
    Add(i64),
    Swap(u8, u8),
    Move {
        x: i32,
        y: i32,
    },
    #[term(rename = "EXIT")]
    Exit,
}

#[derive(smarm::dist::Term, Debug, PartialEq, Clone)]
pub struct Order {
    pub id: u64,
    pub items: Vec<String>,
    #[term(rename = "comment")]
    pub note: Option<String>,
    pub command: Command,
}

#[derive(smarm::dist::Term, Debug, PartialEq, Clone)]
#[term(record)]
pub struct Point {
    pub x: i32,
    pub y: i32,
}

#[derive(smarm::dist::Term, Debug, PartialEq, Clone)]
#[term(tuple)]
pub struct Span {
    pub from: u32,
    pub to: u32,
}

#[derive(smarm::dist::Term, Debug, PartialEq, Clone)]
pub struct Pair(pub u8, pub String);

#[derive(smarm::dist::Term, Debug, PartialEq, Clone)]
#[term(record, rename = "celsius")]
pub struct Temperature(pub f64);

#[derive(smarm::dist::Term, Debug, PartialEq, Clone)]
pub struct UserId(pub u64);

#[derive(smarm::dist::Term, Debug, PartialEq, Clone)]
pub struct Ping;

#[derive(smarm::dist::Term, Debug, PartialEq, Clone)]
pub struct Wrapper<T> {
    pub inner: T,
}
