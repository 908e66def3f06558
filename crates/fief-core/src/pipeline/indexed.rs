//! The pipeline over an [`Indexed`] repo: each tenant's file is read and parsed again when
//! the tenant is rendered or judged, into a repo of that tenant alone, dropped with it.
//!
//! In: the indexed repo, tenant names, the environments in scope, and for a pass of `fief
//! apply` the cluster and a [`TenantHasher`]. Out: renders (a batch at a time, or of the
//! tenants named) equal to those of the repo loaded whole, each stamped with its input hash
//! when asked; and the tenants whose last render may stand in for a new one, with their
//! input hashes (as [`super::reuse_candidates`] and [`crate::inputs::tenant_hashes`] give
//! them for the repo loaded whole). Memory holds the index and the renders in flight, not
//! the fleet's tenant files. Pure (threads, no I/O but the index's reader).

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::{check_across, ordered, panicked_in, render_tenant_in, reuse_candidates, threads};
use crate::inputs::TenantHasher;
use crate::model::Indexed;
use crate::render::{Renderer, TenantRender};
use crate::scope::EnvScope;

/// [`super::render_batches_in`] over an [`Indexed`] repo: the worker that renders a tenant
/// reads and parses its file again ([`Indexed::tenant_repo`]) and checks it across tenants;
/// its repo is dropped with the render, so memory holds the index and a few batches, not the
/// fleet's tenant files. The renders equal those of the repo loaded whole.
pub fn render_indexed_batches<E>(
    indexed: &Indexed,
    only: &[String],
    scope: &EnvScope,
    batch: usize,
    each: impl FnMut(Vec<TenantRender>) -> Result<(), E>,
) -> Result<(), E> {
    let names: Vec<&str> = if only.is_empty() {
        indexed.names().collect()
    } else {
        indexed_names(indexed, only)
    };
    let renderer = Renderer::new(indexed.base.snapshot.clone());
    render_names(&renderer, indexed, &names, scope, None, batch, each)
}

/// The renders of the tenants `names` (those the repo has, in tenant order, each once), each
/// valid one stamped with its input hash by `hasher` (see [`crate::inputs::stamp`]): one
/// batch of a pass of `fief apply`. Costs the batch, not the fleet.
pub fn render_indexed_some(
    renderer: &Renderer,
    indexed: &Indexed,
    names: &[String],
    scope: &EnvScope,
    hasher: &TenantHasher,
) -> Vec<TenantRender> {
    let names = indexed_names(indexed, names);
    let mut out = Vec::with_capacity(names.len());
    let one = names.len().max(1);
    let _ = render_names(
        renderer,
        indexed,
        &names,
        scope,
        Some(hasher),
        one,
        |batch| {
            out.extend(batch);
            Ok::<(), std::convert::Infallible>(())
        },
    );
    out
}

/// Of `only`, the tenants the repo has, in tenant order, each once.
fn indexed_names<'a>(indexed: &'a Indexed, only: &[String]) -> Vec<&'a str> {
    let mut names: Vec<&str> = only.iter().filter_map(|n| indexed.name(n)).collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// Render `names` with `renderer` (over the index's base snapshot) on the worker threads,
/// `batch` at a time in order, each from its own one-tenant repo, stamped by `hasher` when
/// given.
fn render_names<E>(
    renderer: &Renderer,
    indexed: &Indexed,
    names: &[&str],
    scope: &EnvScope,
    hasher: Option<&TenantHasher>,
    batch: usize,
    each: impl FnMut(Vec<TenantRender>) -> Result<(), E>,
) -> Result<(), E> {
    let render = |i: usize| {
        let name = names[i];
        catch_unwind(AssertUnwindSafe(|| {
            let repo = indexed.tenant_repo(name);
            let mut out = [render_tenant_in(renderer, &repo, name, scope)];
            check_across(&mut out, &repo);
            let [mut out] = out;
            // An invalid render's hash is never recorded (see `status::record_inputs`).
            if let Some(hasher) = hasher.filter(|_| out.is_ok()) {
                let hash = hasher.hash(&repo, name);
                if hash.is_reusable() {
                    out.inputs = hash.to_string();
                }
            }
            out
        }))
        .unwrap_or_else(|p| panicked_in(indexed.tenant_file(name), name, p.as_ref()))
    };
    ordered::render_in_order(names.len(), batch, threads(), render, each)
}

/// The tenants of `names` whose last successful render may stand in for a new one (see
/// [`reuse_candidates`]), with their input hashes by `hasher`: each tenant's file is read
/// and parsed again, on a few threads, and only the answer is kept.
pub fn indexed_reuse(
    indexed: &Indexed,
    names: &[String],
    cluster: &str,
    hasher: &TenantHasher,
) -> BTreeMap<String, String> {
    if indexed.config().is_none() {
        return BTreeMap::new();
    }
    let judge = |name: &String| {
        let repo = indexed.tenant_repo(name);
        let candidate = !reuse_candidates(&repo, std::slice::from_ref(name), cluster).is_empty();
        candidate.then(|| (name.clone(), hasher.hash(&repo, name).to_string()))
    };
    let part = names.len().div_ceil(threads()).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = names
            .chunks(part)
            .map(|p| s.spawn(move || p.iter().filter_map(judge).collect::<Vec<_>>()))
            .collect();
        // A thread that panicked judged its tenants as not candidates: they are rendered,
        // and their renders report the panic.
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    })
}
