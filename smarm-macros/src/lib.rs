//! Proc-macros for smarm: `#[derive(Actor)]` turns a message enum into a
//! typed actor API. Use it through the `smarm` crate (`smarm::Actor`).
//!
//! ```
//! use smarm::{Actor, Reply};
//!
//! #[derive(Actor)]
//! #[actor(name = "counter")] // optional: also emits the COUNTER Name constant
//! pub enum Counter {
//!     Add(u64),
//!     Reset,
//!     Get(Reply<u64>),
//!     Swap(u64, Reply<u64>),
//! }
//! # fn main() {}
//! ```
//!
//! expands to (paths shortened):
//!
//! ```ignore
//! impl Addressable for Counter { type Msg = Counter; } // Pid<Counter> is its address
//! impl smarm::actor::Actor for Counter {
//!     const NAME: Option<&'static str> = Some("counter");
//!     fn variant(&self) -> &'static str { match self { Counter::Add(..) => "Add", /* ... */ } }
//!     fn is_call(&self) -> bool { matches!(self, Counter::Get(..) | Counter::Swap(..)) }
//! }
//!
//! /// Client methods, on `Pid<Counter>` and `Name<Counter>` (anything that
//! /// can deliver a `Counter`).
//! pub trait CounterApi: smarm::actor::Deliver<Counter> {
//!     fn add(&self, arg0: u64) -> Result<(), SendError<Counter>>;      // a cast
//!     fn reset(&self) -> Result<(), SendError<Counter>>;
//!     fn get(&self) -> Result<u64, CallError>;                         // a call, 5 s
//!     fn get_timeout(&self, timeout: Duration) -> Result<u64, CallError>;
//!     fn swap(&self, arg0: u64) -> Result<u64, CallError>;
//!     fn swap_timeout(&self, arg0: u64, timeout: Duration) -> Result<u64, CallError>;
//!     // every call also from async code (Send futures, any executor):
//!     fn get_async(&self) -> impl Future<Output = Result<u64, CallError>> + Send + '_;
//!     fn get_timeout_async(&self, timeout: Duration) -> impl Future<Output = ...> + Send + '_;
//!     // ... swap_async, swap_timeout_async
//! }
//! impl<T: smarm::actor::Deliver<Counter>> CounterApi for T {}
//!
//! pub const COUNTER: Name<Counter> = Name::new("counter");
//! ```
//!
//! A variant whose last field is a `Reply<T>` is a call (its method
//! returns `T`); any other is a cast. Tuple fields become parameters
//! `arg0, arg1, ...`; named fields keep their names. Method names are the
//! variants' names in snake_case; the trait is `<Enum>Api` and the
//! constant the enum's name in SCREAMING_SNAKE_CASE.
//!
//! Misuse is a compile error on the offending span: the derive on a
//! struct or union, a generic enum, two reply slots in one variant, a
//! reply slot that is not the last field, an unknown `#[actor(...)]`
//! option, an empty or malformed name.

mod expand;
mod model;
mod sim_test;
mod term;

use proc_macro::TokenStream;

/// Derive the typed actor API of a message enum (see the crate docs).
#[proc_macro_derive(Actor, attributes(actor))]
pub fn derive_actor(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    match model::read(input) {
        Ok(actor) => expand::expand(&actor).into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// Derive `ToTerm` and `FromTerm` (smarm's distribution, `smarm::dist`)
/// for a struct or an enum, so that it crosses the wire as an Erlang
/// term. Use it as `smarm::dist::Term`; the mapping is in
/// `smarm::dist::term::convert`.
///
/// - named structs: maps with atom keys; `#[term(record)]`: `{tag, ...}`;
///   `#[term(tuple)]`: `{...}`
/// - tuple structs: tuples (`#[term(record)]` as above); newtypes: the
///   inner value; unit structs: an atom
/// - enums: unit variants as atoms, others as tagged tuples `{tag, ...}`
/// - `#[term(rename = "atom")]` on a type, variant or field;
///   `#[term(crate = "smarm_dist")]` where `smarm` is not a dependency
#[proc_macro_derive(Term, attributes(term))]
pub fn derive_term(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    match term::derive(input) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// Run a test function under deterministic simulation, once per seed
/// (feature `sim`; use it as `#[smarm::sim::test]`): the first seed is run
/// twice to check that it replays exactly, then every seed runs; a failure
/// is shrunk and reported with the line that replays it, and
/// `SMARM_SIM_SEED=n` runs seed `n` alone.
///
/// Settings: `seeds = N` (default 100), `swarm = true` (each seed draws
/// its configuration), and any of the `Sim` builder's `schedulers`,
/// `strategy`, `preempt_one_in`, `step_time`, `timer_lateness`,
/// `max_steps` (`setting = value` calls `.setting(value)`).
///
/// ```ignore
/// // (compiled and run in `smarm::sim`'s docs, where the feature is on)
/// #[smarm::sim::test(seeds = 200, schedulers = 4)]
/// fn replies_arrive() {
///     let (tx, rx) = smarm::channel::channel();
///     smarm::spawn(move || tx.send(7).unwrap());
///     assert_eq!(rx.recv().unwrap(), 7);
/// }
/// ```
#[proc_macro_attribute]
pub fn sim_test(args: TokenStream, item: TokenStream) -> TokenStream {
    match sim_test::expand(args.into(), item.into()) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}
