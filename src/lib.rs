//! fief: render a tenants repo and reconcile it into Kubernetes, one tenant at a time.
//!
//! Data flows one way, from a source through the pure core to the cluster; the CLI and the
//! agent drive it:
//!
//! ```text
//!   source/                  core (crate fief-core: no tokio, kube or git2)   kube/
//!   ───────                  ───────────────────────────────────             ─────
//!   fs  (a checkout) ─┐
//!                     ├─▶ Snapshot ─▶ model::Repo ─▶ pipeline ─────────▶ TenantRender ─┐
//!   git (a commit)  ──┘               (load)         render → validate   per tenant    │
//!                                                                                      ▼
//!                          inventory (ApplySet parent) ─▶ plan (apply/skip/prune) ─▶ sync:
//!                          status (conditions)        ◀───────────────────────────  observe,
//!                                                                                   apply,
//!                                                                                   prune,
//!                                                                                   inventory
//!                                                                                   store, diff
//!   cli/   render, validate (core only); apply, diff, status, suspend/resume, reconcile
//!          (core + kube)
//!   agent/ source loop (git) → inputs (per-tenant hashes) → queue → reconciler (pipeline +
//!          kube::sync), drift watches, leader election, webhook, HTTP, metrics, events,
//!          requests (suspended tenants, `fief reconcile` through the cluster)
//! ```
//!
//! - [`core`] (the `fief-core` crate) is pure: files in, objects, inventories, plans and
//!   statuses out. Its only threads are the render workers of [`core::pipeline`].
//! - [`source`] is the only code that reads a repo (from disk or from git objects).
//! - [`kube`] is the only code that talks to the API server.
//! - [`cli`] and [`agent`] wire them together; `main.rs` only parses and maps exit codes.
//!
//! `tests/layout.rs` checks these rules on every test run.

pub mod agent;
pub mod cli;
/// The pure core (the `fief-core` crate), under the path the rest of fief uses.
pub use fief_core as core;
pub mod kube;
pub mod source;

pub use crate::core::diagnostic::{Diagnostic, Problem};
