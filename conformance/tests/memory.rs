//! The whole suite against the reference memory store.

use docket_conformance::memory::MemoryHarness;

docket_conformance::suite!(memory, MemoryHarness);
