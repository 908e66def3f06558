//! The pure core: repo files in, rendered and validated objects, inventories and plans out.
//!
//! This crate depends on no async runtime, no Kubernetes client and no git library (its
//! `Cargo.toml` is the rule): the `fief` crate reads repos (`fief::source`), talks to the API
//! server (`fief::kube`) and drives both (`fief::agent`, `fief::cli`).

/// The git commit fief was built from (`unknown` outside a git checkout, `-dirty` when the
/// tree had changes).
pub const GIT_COMMIT: &str = env!("FIEF_GIT_COMMIT");

/// The version and the git commit fief was built from, as `fief --version` prints them.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("FIEF_GIT_COMMIT"),
    ")"
);

pub mod bump;
pub mod compare;
pub mod condition;
pub mod diagnostic;
pub mod digest;
pub mod fleet;
pub mod health;
pub mod inputs;
pub mod inventory;
pub mod model;
pub mod objects;
pub mod pins;
pub mod pipeline;
pub mod plan;
pub mod redact;
pub mod render;
pub mod rollout;
pub mod schema;
pub mod scope;
pub mod secrets;
pub mod shard;
pub mod snapshot;
pub mod status;
pub mod suggest;
pub mod validate;
pub mod yaml;
