//! Where a repo comes from: a checkout on disk ([`fs`]) or git objects ([`git`]). The only
//! code that reads a tenants repo; both produce a [`fief_core::snapshot::Snapshot`].

pub mod fs;
pub mod git;
