//! `ToTerm` / `FromTerm` for the standard types and `#[derive(Term)]`:
//! every mapping the `term::convert` table documents, checked against the
//! Erlang text of the term and round-tripped through the wire encoding.

#![allow(clippy::unwrap_used)] // a failed step should fail loudly here

mod support;

use smarm::dist::term::{self, Binary, FromTerm, FromTermError, ToTerm, decode, encode};
use smarm::dist::{Pid, Term};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use support::terms::*;

/// `value`'s term reads as `erlang` and comes back as `value`, also after
/// the bytes of the wire format.
fn round_trip<T: ToTerm + FromTerm + PartialEq + Debug>(value: T, erlang: &str) {
    let t = value.to_term();
    assert_eq!(term::display(&t).to_string(), erlang, "{value:?}");
    let wire = decode(&encode(&t)).unwrap();
    assert_eq!(T::from_term(&wire).as_ref(), Ok(&value), "{erlang}");
    assert_eq!(value.into_term(), t);
}

#[test]
fn standard_types_map_as_documented() {
    round_trip(true, "true");
    round_trip(false, "false");
    round_trip(-5i8, "-5");
    round_trip(255u8, "255");
    round_trip(i32::MIN, "-2147483648");
    round_trip(i64::MAX, "9223372036854775807");
    round_trip(u64::MAX, "18446744073709551615");
    round_trip(u128::MAX, "340282366920938463463374607431768211455");
    round_trip(i128::MIN, "-170141183460469231731687303715884105728");
    round_trip(usize::MAX, &usize::MAX.to_string());
    round_trip('a', "97");
    round_trip(1.5f64, "1.5");
    round_trip(f64::INFINITY, "infinity");
    round_trip(String::from("héllo"), r#"<<"héllo">>"#);
    round_trip((), "ok");
    round_trip(Some(3u8), "3");
    round_trip(None::<u8>, "undefined");
    round_trip(Ok::<u8, String>(1), "{ok,1}");
    round_trip(Ok::<(), String>(()), "ok");
    round_trip(Err::<(), u8>(2), "{error,2}");
    round_trip(vec![1i32, -2, 3], "[1,-2,3]");
    round_trip(Vec::<u8>::new(), "[]");
    round_trip((1u8, String::from("x"), true), r#"{1,<<"x">>,true}"#);
    round_trip(Box::new(7u16), "7");
    round_trip(Binary::from(vec![0u8, 255]), "<<0,255>>");
    round_trip(term::Atom::from("node@host"), "node@host");
    round_trip(term::Atom::from("Node"), "'Node'");
    let pid = Pid::new("a@localhost", 42, 0, 3);
    assert_eq!(Pid::from_term(&ToTerm::to_term(&pid)), Some(pid.clone()));
    assert_eq!(<Pid as FromTerm>::from_term(&pid.to_term()), Ok(pid));

    let mut m = BTreeMap::new();
    m.insert(String::from("a"), 1u32);
    m.insert(String::from("b"), 2u32);
    let t = m.to_term();
    assert_eq!(BTreeMap::<String, u32>::from_term(&t), Ok(m.clone()));
    let h: HashMap<String, u32> = m.into_iter().collect();
    assert_eq!(HashMap::<String, u32>::from_term(&h.to_term()), Ok(h));
}

#[test]
fn erlang_strings_and_byte_lists_decode_as_text_and_lists() {
    // Erlang writes "abc" and [1,2,3] as strings of bytes.
    let charlist = decode(&[131, 107, 0, 3, b'a', b'b', b'c']).unwrap();
    assert_eq!(String::from_term(&charlist), Ok("abc".to_string()));
    assert_eq!(Vec::<u8>::from_term(&charlist), Ok(vec![97, 98, 99]));
    assert_eq!(Vec::<i64>::from_term(&charlist), Ok(vec![97, 98, 99]));
    // A list of code points past 255 is text too.
    let wide = term::List::from(vec![ToTerm::to_term(&'é'), ToTerm::to_term(&'€')]);
    assert_eq!(String::from_term(&Term::from(wide)), Ok("é€".to_string()));
    // Integers widen to floats.
    assert_eq!(f64::from_term(&3i32.to_term()), Ok(3.0));
}

#[test]
fn a_wrong_term_is_an_error_that_says_what_was_expected() {
    let err = u8::from_term(&300u32.to_term()).unwrap_err();
    assert_eq!(err.to_string(), "300 is out of range for u8");
    let err = bool::from_term(&term::atom("perhaps")).unwrap_err();
    assert_eq!(err.to_string(), "expected true or false, found perhaps");
    let err = Vec::<u8>::from_term(&vec![1i32, -1].to_term()).unwrap_err();
    assert_eq!(err.to_string(), "[1]: -1 is out of range for u8");
    let err = String::from_term(&Term::from(Binary::from(vec![0xff]))).unwrap_err();
    assert!(
        err.to_string().starts_with("expected a UTF-8 binary"),
        "{err}"
    );
    let err = <(u8, u8)>::from_term(&(1u8,).to_term()).unwrap_err();
    assert_eq!(err.to_string(), "expected a tuple of 2, found {1}");
    // A long term is shortened in the message.
    let err = u8::from_term(&vec![0u32; 100].to_term()).unwrap_err();
    assert!(err.to_string().len() < 120, "{err}");
}

#[test]
fn derived_types_map_as_documented() {
    round_trip(Command::Reset, "reset");
    round_trip(Command::Add(-5), "{add,-5}");
    round_trip(Command::Swap(1, 2), "{swap,1,2}");
    round_trip(Command::Move { x: 3, y: 4 }, "{move,3,4}");
    round_trip(Command::Exit, "'EXIT'");
    round_trip(Point { x: 1, y: 2 }, "{point,1,2}");
    round_trip(Span { from: 1, to: 9 }, "{1,9}");
    round_trip(Pair(1, "a".into()), r#"{1,<<"a">>}"#);
    round_trip(Temperature(21.5), "{celsius,21.5}");
    round_trip(UserId(7), "7");
    round_trip(Ping, "ping");
    round_trip(Wrapper { inner: vec![Ping] }, "#{inner => [ping]}");

    let order = Order {
        id: 7,
        items: vec!["tea".into(), "cake".into()],
        note: None,
        command: Command::Add(1),
    };
    let t = order.to_term();
    match &t {
        Term::Map(m) => {
            let keys: std::collections::BTreeSet<String> =
                m.map.keys().map(|k| term::display(k).to_string()).collect();
            assert_eq!(
                keys.into_iter().collect::<Vec<_>>(),
                ["command", "comment", "id", "items"]
            );
            assert_eq!(m.map[&term::atom("comment")], term::atom("undefined"));
        }
        other => panic!("a struct is a map, got {}", term::display(other)),
    }
    assert_eq!(Order::from_term(&decode(&encode(&t)).unwrap()), Ok(order));
}

#[test]
fn a_map_with_extra_keys_decodes_and_one_without_a_field_does_not() {
    let mut extra = HashMap::new();
    extra.insert(term::atom("inner"), 1u8.to_term());
    extra.insert(term::atom("added_later"), term::atom("x"));
    let t = Term::from(term::Map::from(extra));
    assert_eq!(Wrapper::<u8>::from_term(&t), Ok(Wrapper { inner: 1 }));

    let missing = Term::from(term::Map::from(HashMap::<Term, Term>::new()));
    assert_eq!(
        Wrapper::<u8>::from_term(&missing),
        Err(FromTermError::MissingKey {
            ty: "Wrapper",
            key: "inner"
        })
    );
}

#[test]
fn a_derived_type_names_the_part_that_is_wrong() {
    let bad_field = term::tuple(vec![term::atom("move"), 1u8.to_term(), term::atom("up")]);
    assert_eq!(
        Command::from_term(&bad_field).unwrap_err().to_string(),
        "Command::Move.y: expected an integer, found up"
    );
    let unknown = term::tuple(vec![term::atom("jump"), 1u8.to_term()]);
    assert_eq!(
        Command::from_term(&unknown).unwrap_err().to_string(),
        "Command: no variant is {jump,1}"
    );
    // The right tag with the wrong number of fields is no variant either.
    let arity = term::tuple(vec![term::atom("add"), 1u8.to_term(), 2u8.to_term()]);
    assert!(matches!(
        Command::from_term(&arity),
        Err(FromTermError::UnknownVariant { .. })
    ));
    // A unit variant is the bare atom, not a one-tuple.
    let boxed = term::tuple(vec![term::atom("reset")]);
    assert!(Command::from_term(&boxed).is_err());
    let wrong_tag = term::tuple(vec![term::atom("line"), 1u8.to_term(), 2u8.to_term()]);
    assert_eq!(
        Point::from_term(&wrong_tag).unwrap_err().to_string(),
        "expected Point as {point, ...} with 2 fields, found {line,1,2}"
    );
    let in_order = Order {
        id: 1,
        items: vec![],
        note: None,
        command: Command::Reset,
    }
    .to_term();
    let Term::Map(mut m) = in_order else {
        unreachable!()
    };
    m.map.insert(term::atom("items"), vec![1u8].to_term());
    assert_eq!(
        Order::from_term(&Term::from(m)).unwrap_err().to_string(),
        "Order.items: [0]: expected a UTF-8 binary or a charlist, found 1"
    );
}

#[test]
fn derive_term_misuse_is_a_clear_compile_error() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/compile-fail/*.rs");
}
