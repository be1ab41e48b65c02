//! A small shop as a supervision tree, busy enough to watch: an orders
//! server that clients cast to, a stock server they call, and a flaky
//! worker that crashes every second or so and is restarted.
//!
//! ```text
//! shop supervisor (one_for_one)
//! ├── shop.orders   gen_server, casts from the clients
//! ├── shop.stock    gen_server, calls from the clients
//! └── workers supervisor (one_for_one)
//!     ├── shop.flaky      crashes every ~1 s, restarted
//!     ├── shop.client.0   casts orders, calls stock
//!     └── shop.client.1
//! ```

use smarm::gen_server::{Ctx, Flow, GenServer, InitError, ServerName};
use smarm::supervisor::{self, ChildSpec, Strategy, SupFlags, SupervisorRef};
use smarm::{Name, Reply, channel};
use std::time::Duration;

/// Takes orders; counts them.
pub struct Orders(u64);

impl GenServer for Orders {
    type Args = ();
    type Call = ();
    type Reply = u64;
    type Cast = u64;
    type Info = ();

    fn init(_: (), _: &mut Ctx<Self>) -> Result<Self, InitError> {
        Ok(Orders(0))
    }

    fn handle_call(&mut self, _: (), reply: Reply<u64>, _: &mut Ctx<Self>) -> Flow {
        reply.reply(self.0);
        Flow::Continue
    }

    fn handle_cast(&mut self, n: u64, _: &mut Ctx<Self>) -> Flow {
        // A little work per order, so the server shows run time.
        self.0 = (0..200u64).fold(self.0.wrapping_add(n), |a, i| {
            a.rotate_left((i % 7) as u32) ^ i
        });
        Flow::Continue
    }
}

/// Answers stock queries.
pub struct Stock;

impl GenServer for Stock {
    type Args = ();
    type Call = u64;
    type Reply = bool;
    type Cast = ();
    type Info = ();

    fn init(_: (), _: &mut Ctx<Self>) -> Result<Self, InitError> {
        Ok(Stock)
    }

    fn handle_call(&mut self, item: u64, reply: Reply<bool>, _: &mut Ctx<Self>) -> Flow {
        reply.reply(!item.is_multiple_of(3));
        Flow::Continue
    }
}

pub const ORDERS: ServerName<Orders> = ServerName::new("shop.orders");
pub const STOCK: ServerName<Stock> = ServerName::new("shop.stock");
const FLAKY: Name<()> = Name::new("shop.flaky");
const CLIENTS: [Name<()>; 2] = [Name::new("shop.client.0"), Name::new("shop.client.1")];

/// An actor that takes `name` (with a mailbox nobody writes to) and runs
/// `body`.
fn named(name: Name<()>, body: impl Fn() + Send + Sync + 'static) -> impl Fn() + Send + Sync {
    move || {
        let (tx, _rx) = channel::<()>();
        smarm::register(name, tx).unwrap();
        body()
    }
}

fn client(i: u64) -> impl Fn() + Send + Sync {
    move || {
        let mut n = i;
        loop {
            n += 1;
            if let Some(orders) = smarm::gen_server::whereis_server(ORDERS) {
                let _ = orders.cast(n);
            }
            if let Some(stock) = smarm::gen_server::whereis_server(STOCK) {
                let _ = stock.call(n);
            }
            smarm::time::sleep(Duration::from_millis(2));
        }
    }
}

/// Start the shop's tree (call it from an actor).
pub fn start() -> SupervisorRef {
    let workers = || {
        vec![
            ChildSpec::actor(
                "flaky",
                named(FLAKY, || {
                    smarm::time::sleep(Duration::from_millis(1000));
                    panic!("shop.flaky: injected failure");
                }),
            ),
            ChildSpec::actor("client.0", named(CLIENTS[0], client(0))),
            ChildSpec::actor("client.1", named(CLIENTS[1], client(1_000_000))),
        ]
    };
    supervisor::start(
        SupFlags::new(Strategy::OneForOne),
        vec![
            ChildSpec::named_server::<Orders>("orders", ORDERS, || ()),
            ChildSpec::named_server::<Stock>("stock", STOCK, || ()),
            ChildSpec::supervisor(
                "workers",
                // Generous: the flaky worker is meant to be restarted for
                // as long as the shop runs.
                SupFlags::new(Strategy::OneForOne).intensity(1000, Duration::from_secs(1)),
                workers,
            ),
        ],
    )
    .unwrap()
}
