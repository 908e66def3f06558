//! fief: render a tenants repo and reconcile it into Kubernetes, one tenant at a time.
//!
//! Data flows one way, from a source through the pure core to the cluster; the CLI and the
//! agent drive it:
//!
//! ```text
//!   fief-source              fief-core (no tokio, kube or git2)             fief-kube
//!   ───────────              ──────────────────────────────────             ─────────
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
//!   fief-agent: source loop (git) → inputs (per-tenant hashes) → queue → reconciler (pipeline +
//!          kube::sync), drift watches, leader election, webhook, HTTP, metrics, events,
//!          requests (suspended tenants, `fief reconcile` through the cluster)
//! ```
//!
//! Each layer is a crate of the workspace, re-exported here under the path the rest of fief
//! uses, so a crate can use only the layers its `Cargo.toml` names:
//!
//! - [`core`] (`fief-core`) is pure: files in, objects, inventories, plans and statuses out.
//!   Its only threads are the render workers of [`core::pipeline`].
//! - [`source`] (`fief-source`) is the only code that reads a repo (from disk or from git).
//! - [`kube`] (`fief-kube`) is the only code that talks to the API server.
//! - [`cli`] (this crate) and [`agent`] (`fief-agent`) wire them together; `main.rs` only
//!   parses and maps exit codes.
//!
//! `tests/offline/layout.rs` checks what each crate pulls in on every test run.

pub mod cli;

/// The in-cluster agent (the `fief-agent` crate).
pub use fief_agent as agent;
/// The pure core (the `fief-core` crate), under the path the rest of fief uses.
pub use fief_core as core;
/// The Kubernetes side (the `fief-kube` crate).
pub use fief_kube as kube;
/// The repo readers: a checkout or git (the `fief-source` crate).
pub use fief_source as source;

pub use crate::core::diagnostic::{Diagnostic, Problem};
