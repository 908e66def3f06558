//! The one entry both the CLI and the agent call: load → render → validate.
//!
//! In: a [`Repo`] (loaded from a snapshot). Out: one [`TenantRender`] per tenant, rendered
//! and validated, with every diagnostic tagged with its tenant and sorted by file and line.
//! A tenant with any diagnostic is neither applied nor pruned. Pure (threads, no I/O).

use std::collections::BTreeMap;

use crate::core::model::Repo;
use crate::core::render::{self, Renderer, TenantRender};
use crate::core::validate;

/// Render and validate one tenant.
pub fn render_tenant(renderer: &Renderer, repo: &Repo, name: &str) -> TenantRender {
    let mut out = render::render_tenant(renderer, repo, name);
    if let (Ok(config), Some(Ok(tenant))) = (&repo.config, repo.tenants.get(name)) {
        let envs: Vec<String> = out.namespaces.keys().cloned().collect();
        let mut errors = validate::check_declared(repo, name, &envs);
        errors.extend(validate::validate_objects(&out.objects, &out.namespaces));
        errors.extend(validate::check_policy(
            &out.objects,
            &config.policy,
            name,
            &config.base_domain,
            &tenant.spec.host_suffixes,
        ));
        out.errors
            .extend(errors.into_iter().map(|d| d.for_tenant(name)));
    }
    if !out.errors.is_empty() {
        out.errors
            .sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
        out.errors.dedup();
    }
    out
}

/// Render and validate every tenant (or those named in `only`), in parallel, then check
/// across tenants.
pub fn render_all(repo: &Repo, only: &[String]) -> Vec<TenantRender> {
    let renderer = Renderer::new(repo.snapshot.clone());
    let names: Vec<&String> = repo
        .tenants
        .keys()
        .filter(|n| only.is_empty() || only.contains(n))
        .collect();
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 16);
    let chunk = names.len().div_ceil(threads).max(1);
    let mut out: Vec<TenantRender> = std::thread::scope(|s| {
        let handles: Vec<_> = names
            .chunks(chunk)
            .map(|part| {
                let renderer = &renderer;
                s.spawn(move || {
                    part.iter()
                        .map(|n| render_tenant(renderer, repo, n))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    // Namespace collisions need every tenant's namespaces, filtered or not.
    let all_namespaces: BTreeMap<String, BTreeMap<String, String>> = match &repo.config {
        Ok(config) => repo
            .tenants
            .iter()
            .filter_map(|(n, t)| {
                t.as_ref()
                    .ok()
                    .map(|t| (n.clone(), render::namespaces(config, t)))
            })
            .collect(),
        Err(_) => BTreeMap::new(),
    };
    validate::check_namespace_collisions(&mut out, &all_namespaces, repo);
    out
}
