//! The shared compose cases on the in-memory stores.

mod common;

all_compose_cases!(common::Kind::Memory);
