//! Detached jobs as Docket runs: the [`authority::DocketJobAuthority`], the deterministic
//! identity of a submission and the mapping of run status to terminal result.

pub mod authority;
pub mod identity;
pub mod restart;
pub mod terminal;
