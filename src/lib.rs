//! fief: render a tenants repo and reconcile it into Kubernetes, one tenant at a time.
//!
//! Data flows one way: [`snapshot`] (files in) → [`model`] → [`render`] (with [`values`],
//! [`filters`], [`objects`]) → [`validate`] → output ([`output`]). Everything but
//! `snapshot::Snapshot::read_dir` and the CLI is pure.

pub mod agent;
pub mod cli;
pub mod cli_cluster;
pub mod cluster;
pub mod error;
pub mod filters;
pub mod git;
pub mod inputs;
pub mod inventory;
pub mod model;
pub mod objects;
pub mod output;
pub mod plan;
pub mod render;
pub mod snapshot;
pub mod synth;
pub mod validate;
pub mod values;
pub mod webhook;
pub mod yaml;

pub use error::{Diagnostic, Problem};
