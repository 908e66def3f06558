//! Tests that need no cluster: render and validate (their messages, safety checks, schemas
//! and values), `fief init`, `fief import` and `fief bump`, pull-request diffs and pins from
//! git, the git source, `helm` and `kustomize` components against Helm and kustomize (charts from repositories too), the generated references, the crate layout, the book and the Helm chart.
//!
//! One binary, so the fief crates are linked once for all of them.

#[path = "../common/mod.rs"]
mod common;

mod architecture;
mod bump;
mod chart;
mod chart_binary;
mod chart_credentials;
mod chart_repos;
mod cli_habits;
mod diff_from_git;
mod docs;
mod fleet_scale;
mod git_source;
mod helper_go_tests;
mod import;
mod init;
mod init_ci;
mod layout;
mod module_graph;
mod notify;
mod packages;
mod packages_charts;
mod packages_fidelity;
mod packages_kustomize;
mod reference;
mod render;
mod render_out;
mod validate;
mod validate_safety;
mod validate_schema;
mod values;
