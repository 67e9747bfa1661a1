//! The composition: schedule → job → evidence and session wait.

pub mod accepts;
pub mod await_sink;
pub mod coordinator;
pub mod error;
pub mod evidence;
pub mod schedule;
