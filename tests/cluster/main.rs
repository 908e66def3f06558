//! The CLI against a real control plane (one per process, shared by every module; each test
//! uses its own tenant and namespace names): apply and its no-op pass, safety and prune rules,
//! `--env`, diff, isolation between tenants, secrets, moving a tenant between two clusters,
//! install and the deploy manifests, `helm` and `kustomize` components, kubectl reading the rendered YAML back, `fief import
//! --from-cluster`, the inventories a pass holds at once, and the test control plane itself.

#[path = "../common/mod.rs"]
mod common;

mod adopt;
mod apply;
mod apply_env;
mod apply_noop;
mod apply_safety;
mod control_plane;
mod depends;
mod deploy;
mod diff;
mod import;
mod import_adopt;
mod install;
mod inventories_held;
mod inventory_pages;
mod isolation;
mod move_cluster;
mod packages;
mod packages_crds;
mod phases;
mod prune_hold;
mod render_kubectl;
mod secrets;
mod validate_cluster_schema;
