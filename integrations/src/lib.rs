//! Nothing to link: the tests in `tests/` use smarm with axum, hyper,
//! reqwest, sqlx and tonic.
