//! Where a repo comes from: a checkout on disk ([`fs`], loaded in one call by [`checkout`])
//! or git objects ([`git`]). The only code that reads a tenants repo; both produce a
//! [`fief_core::snapshot::Snapshot`]. Beside them, [`render_helper`] runs the program that
//! renders the repo's charts and kustomizations, and [`charts`] fetches the charts components
//! take from repositories into a cache; [`revision`] reads a commit into what the agent syncs
//! (repo, input hashes, pins).

pub mod charts;
pub mod checkout;
pub mod fs;
pub mod git;
pub mod pins;
pub mod render_helper;
pub mod revision;

/// Whether the sources skip the file or folder `name`: hidden names (`.git`, editor files),
/// but a chart's `.helmignore`, which Helm reads to leave files out of the chart.
pub(crate) fn hidden(name: &[u8]) -> bool {
    name.first() == Some(&b'.') && name != b".helmignore"
}
