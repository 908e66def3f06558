//! The `--adopt` option of `fief apply`: which objects that already exist are taken.
//!
//! In: the command line. Out: [`AdoptMode`], mapped onto the sync's `Adopt`.

use clap::ValueEnum;

use crate::kube::adoption::Adopt;

/// What `fief apply --adopt` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AdoptMode {
    /// Objects equal to the render (fief's labels aside): taken with no change; a tenant
    /// with an object that differs is not applied.
    Equal,
    /// Every existing object, set to the render (changed where it differs).
    Force,
}

impl AdoptMode {
    /// The sync's mode for `--adopt[=MODE]` (absent: never adopt).
    pub fn sync_mode(mode: Option<AdoptMode>) -> Adopt {
        match mode {
            None => Adopt::Never,
            Some(AdoptMode::Equal) => Adopt::Equal,
            Some(AdoptMode::Force) => Adopt::Force,
        }
    }
}
