//! fief: render a tenants repo and reconcile it into Kubernetes, one tenant at a time.

pub mod agent;
pub mod cli;
pub mod core;
pub mod kube;
pub mod source;

pub use crate::core::diagnostic::{Diagnostic, Problem};
