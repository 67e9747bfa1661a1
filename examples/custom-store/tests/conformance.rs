//! The whole conformance suite against the example store.

docket_conformance::suite!(map_store, docket_example_custom_store::MapHarness);
