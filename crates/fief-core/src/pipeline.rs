//! The one entry both the CLI and the agent call: load → render → validate.
//!
//! In: a [`Repo`] (loaded from a snapshot), or an [`crate::model::Indexed`] repo whose tenant
//! files are read again as their tenants render (`fief render`, `validate` and `apply`, a
//! batch at a time: `pipeline/indexed.rs`). Out: one [`TenantRender`] per tenant, rendered and
//! validated, with every diagnostic tagged with its tenant, scrubbed of the secret values the
//! tenant read (each named by its key), and sorted by file and line.
//! A tenant with any diagnostic is neither applied nor pruned. A tenant whose render panics
//! (a bug) is reported failed with the panic message; the others go on. Pure (threads, no
//! I/O).

use std::panic::{AssertUnwindSafe, catch_unwind};

mod indexed;
mod ordered;

pub use indexed::{indexed_reuse, render_indexed_batches, render_indexed_some};

use crate::diagnostic::{Diagnostic, Problem};

use crate::model::Repo;
use crate::render::{self, Renderer, TenantRender};
use crate::scope::EnvScope;
use crate::validate;

/// Render and validate one tenant.
pub fn render_tenant(renderer: &Renderer, repo: &Repo, name: &str) -> TenantRender {
    render_tenant_in(renderer, repo, name, &EnvScope::All)
}

/// Render and validate the environments of `scope` of one tenant (see
/// [`render::render_tenant_in`]).
pub fn render_tenant_in(
    renderer: &Renderer,
    repo: &Repo,
    name: &str,
    scope: &EnvScope,
) -> TenantRender {
    #[cfg(test)]
    if name == tests::PANIC_TENANT {
        panic!("test hook: render of `{name}` panics");
    }
    let (out, leaves) = render::render_with_secrets(renderer, repo, name, scope);
    let mut out = validated(repo, name, out);
    // Every diagnostic of the tenant, from the render and from the checks, is scrubbed: a
    // check that quotes rendered text (an object's name) names the secret key, never a value.
    crate::secrets::scrub(&mut out.errors, &leaves);
    if !out.errors.is_empty() {
        scrub_identities(&mut out, &leaves);
        out.errors
            .sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
        out.errors.dedup();
    }
    out.secret_leaves = crate::secrets::SecretLeaves(leaves);
    out
}

/// The names and namespaces of an invalid tenant's objects with each secret value named by
/// its key, as in its diagnostics: such a render is never applied, but its objects are listed
/// (the agent's web view), and a name that fails a check may hold a secret.
fn scrub_identities(out: &mut TenantRender, leaves: &[(String, String)]) {
    if leaves.is_empty() {
        return;
    }
    for o in &mut out.objects {
        o.id.name = crate::secrets::scrub_text(&o.id.name, leaves);
        o.id.namespace = crate::secrets::scrub_text(&o.id.namespace, leaves);
    }
}

/// `out`, the render of tenant `name`, with the diagnostics of every check on it added.
fn validated(repo: &Repo, name: &str, mut out: TenantRender) -> TenantRender {
    if let (Ok(config), Some(Ok(tenant))) = (&repo.config, repo.tenants.get(name)) {
        let envs: Vec<String> = out.namespaces.keys().cloned().collect();
        let undeclared = validate::check_declared(repo, name, &envs);
        if !undeclared.is_empty() {
            // The root cause only: an environment name fief does not know has no environment
            // file, so the values it would have set show up as knock-on template and values
            // errors that would bury the cause.
            out.objects.clear();
            out.errors = undeclared.into_iter().map(|d| d.for_tenant(name)).collect();
            return out;
        }
        let mut errors = validate::check_overrides(repo, tenant, &envs);
        errors.extend(validate::check_notifications(repo, config, tenant));
        errors.extend(validate::check_reserved_namespaces(
            repo,
            config,
            tenant,
            &out.namespaces,
        ));
        errors.extend(validate::validate_objects(&out.objects, &out.namespaces));
        errors.extend(validate::check_names(&out.objects));
        errors.extend(validate::names::check_reserved_labels(&out.objects));
        errors.extend(crate::schema::k8s::check_builtin_kinds(
            &out.objects,
            &repo.snapshot,
        ));
        errors.extend(validate::check_component_kinds(&out.objects, config));
        errors.extend(validate::check_component_bindings(
            &out.objects,
            &out.namespaces,
        ));
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
    out
}

/// Render and validate every tenant (or those named in `only`, in tenant order, each once),
/// in parallel, then check across tenants. With `only` (a batch), the cost is the batch's:
/// its names are looked up, the fleet's are not scanned.
pub fn render_all(repo: &Repo, only: &[String]) -> Vec<TenantRender> {
    render_all_in(repo, only, &EnvScope::All)
}

/// [`render_all`] for the environments of `scope` only (`--env`).
pub fn render_all_in(repo: &Repo, only: &[String], scope: &EnvScope) -> Vec<TenantRender> {
    let mut out = Vec::new();
    let _ = render_batches_in(repo, only, scope, usize::MAX, |batch| {
        out.extend(batch);
        Ok::<(), std::convert::Infallible>(())
    });
    out
}

/// Tenants a streaming command ([`render_batches_in`]) renders at a time: enough to keep
/// every core busy, few enough that one batch's objects are a small part of the memory.
pub const BATCH: usize = 100;

/// [`render_all_in`], handing the renders to `each` in tenant order, `batch` tenants at a time
/// (each batch checked across tenants like the whole fleet would be), so a caller that writes
/// and drops each batch holds a few batches' objects, not the fleet's: worker threads render
/// the next batches while `each` runs on this thread (see [`ordered`]). Stops at the first
/// error `each` returns.
pub fn render_batches_in<E>(
    repo: &Repo,
    only: &[String],
    scope: &EnvScope,
    batch: usize,
    mut each: impl FnMut(Vec<TenantRender>) -> Result<(), E>,
) -> Result<(), E> {
    let renderer = Renderer::new(repo.snapshot.clone());
    let names = selected(&repo.tenants, only);
    if names.len() <= batch {
        let mut out = render_names(&renderer, repo, &names, scope);
        check_across(&mut out, repo);
        return each(out);
    }
    let render = |i: usize| {
        let name = names[i];
        catch_unwind(AssertUnwindSafe(|| {
            render_tenant_in(&renderer, repo, name, scope)
        }))
        .unwrap_or_else(|p| panicked(repo, name, p.as_ref()))
    };
    ordered::render_in_order(names.len(), batch, threads(), render, |mut out| {
        check_across(&mut out, repo);
        each(out)
    })
}

/// The keys of `map` (tenants by name): all of them, or those named in `only`, in order,
/// each once.
fn selected<'a, V: Clone>(map: &'a imbl::OrdMap<String, V>, only: &[String]) -> Vec<&'a String> {
    if only.is_empty() {
        map.keys().collect()
    } else {
        let only: std::collections::BTreeSet<&String> = only.iter().collect();
        only.into_iter()
            .filter_map(|n| map.get_key_value(n).map(|(k, _)| k))
            .collect()
    }
}

/// Render threads: one per core, up to 16.
fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 16)
}

/// Render and validate the tenants `names`, in parallel (one thread per core, up to 16), in
/// their order.
fn render_names(
    renderer: &Renderer,
    repo: &Repo,
    names: &[&String],
    scope: &EnvScope,
) -> Vec<TenantRender> {
    let chunk = names.len().div_ceil(threads()).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = names
            .chunks(chunk)
            .map(|part| {
                let handle = s.spawn(move || {
                    part.iter()
                        .map(|n| {
                            catch_unwind(AssertUnwindSafe(|| {
                                render_tenant_in(renderer, repo, n, scope)
                            }))
                            .unwrap_or_else(|p| panicked(repo, n, p.as_ref()))
                        })
                        .collect::<Vec<_>>()
                });
                (part, handle)
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|(part, h)| {
                h.join().unwrap_or_else(|p| {
                    part.iter().map(|n| panicked(repo, n, p.as_ref())).collect()
                })
            })
            .collect()
    })
}

/// The checks across tenants (namespace and host-suffix collisions), on `out`: they read the
/// tenant files of the whole repo (through its cross-tenant index), not the renders.
fn check_across(out: &mut [TenantRender], repo: &Repo) {
    validate::check_namespace_collisions(out, repo);
    validate::check_host_suffixes(out, repo);
}

/// The tenants of `names` whose last successful render may stand in for a new one when its
/// recorded input hash is still the current one: the tenant file and fief.yaml parse, the
/// tenant is `cluster`'s and not `purged`, its secrets open with the keys at hand, and no
/// check across tenants fails it (another tenant's file can make it invalid without changing
/// its inputs). The others must be rendered.
pub fn reuse_candidates(
    repo: &Repo,
    names: &[String],
    cluster: &str,
) -> std::collections::BTreeSet<String> {
    if repo.config.is_err() {
        return Default::default();
    }
    let mut probes: Vec<TenantRender> = names
        .iter()
        .filter(|n| match repo.tenants.get(*n) {
            // Secrets that cannot be opened now (no key, a wrong one) fail the render.
            Some(Ok(t)) => {
                t.spec.cluster == cluster
                    && t.spec.state != crate::model::TenantState::Purged
                    && repo.secrets.for_tenant(n).is_ok()
            }
            _ => false,
        })
        .map(|n| TenantRender {
            tenant: n.clone(),
            ..Default::default()
        })
        .collect();
    check_across(&mut probes, repo);
    probes
        .into_iter()
        .filter(|p| p.errors.is_empty())
        .map(|p| p.tenant)
        .collect()
}

/// A failed render for `tenant` whose thread panicked with `payload`.
fn panicked(repo: &Repo, tenant: &str, payload: &(dyn std::any::Any + Send)) -> TenantRender {
    panicked_in(repo.tenant_file(tenant), tenant, payload)
}

/// [`panicked`], the tenant read from `file`.
fn panicked_in(file: String, tenant: &str, payload: &(dyn std::any::Any + Send)) -> TenantRender {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string());
    TenantRender {
        tenant: tenant.to_string(),
        errors: vec![
            Diagnostic::new(file, None, Problem::RenderPanicked { message }).for_tenant(tenant),
        ],
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::snapshot::Snapshot;

    /// A tenant file `tenants/<name>.yaml` whose spec is `spec` (indented lines).
    fn with(name: &str, spec: &str) -> (String, String) {
        (
            format!("tenants/{name}.yaml"),
            format!(
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n{spec}"
            ),
        )
    }

    /// Rendering a tenant of this name panics (test builds only).
    pub(super) const PANIC_TENANT: &str = "panics-in-render";

    fn tenant(name: &str) -> (String, String) {
        (
            format!("tenants/{name}.yaml"),
            format!("apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\n"),
        )
    }

    #[test]
    fn a_panicking_render_fails_only_its_tenant_with_the_message() {
        let files = [tenant("acme"), tenant(PANIC_TENANT), tenant("zeta")];
        let snapshot = Snapshot::from_files(files.iter().map(|(p, t)| (p.as_str(), t.as_str())));
        let repo = Repo::load(Arc::new(snapshot));
        let renders = render_all(&repo, &[]);
        let names: Vec<&str> = renders.iter().map(|r| r.tenant.as_str()).collect();
        assert_eq!(names, ["acme", PANIC_TENANT, "zeta"]);
        let bad = &renders[1];
        assert!(!bad.is_ok());
        let text = bad.errors[0].to_string();
        assert!(text.contains("panics-in-render` panics"), "{text}");
        assert!(text.contains("tenant `panics-in-render`"), "{text}");
        assert!(renders[0].is_ok() && renders[2].is_ok(), "{renders:?}");
        assert!(!renders[0].objects.is_empty());
    }

    #[test]
    fn a_batch_renders_its_known_tenants_once_in_tenant_order() {
        let files = [tenant("acme"), tenant("beta"), tenant("zeta")];
        let snapshot = Snapshot::from_files(files.iter().map(|(p, t)| (p.as_str(), t.as_str())));
        let repo = Repo::load(Arc::new(snapshot));
        let batch = ["zeta", "nobody", "acme", "zeta"].map(String::from);
        let renders = render_all(&repo, &batch);
        let names: Vec<&str> = renders.iter().map(|r| r.tenant.as_str()).collect();
        assert_eq!(names, ["acme", "zeta"]);
        let all = render_all(&repo, &[]);
        assert_eq!(renders[1].objects.len(), all[2].objects.len());
    }

    #[test]
    fn renders_in_batches_equal_the_whole_fleet_rendered_at_once_with_cross_tenant_errors() {
        let files = [
            with("acme", "  state: active\n"),
            // In another batch than acme: claims its host suffix.
            with("zed", "  hostSuffixes: [acme.example.com]\n"),
            with("beta", "  state: active\n"),
            with("gamma", "  state: active\n"),
            ("tenants/broken.yaml".to_string(), "kind: [".to_string()),
            (
                "fief.yaml".to_string(),
                "baseDomain: example.com\n".to_string(),
            ),
        ];
        let snapshot = Snapshot::from_files(files.iter().map(|(p, t)| (p.as_str(), t.as_str())));
        let repo = Repo::load(Arc::new(snapshot));
        let whole = render_all(&repo, &[]);
        let (mut sizes, mut batched) = (Vec::new(), Vec::new());
        let done = render_batches_in(&repo, &[], &EnvScope::All, 2, |batch| {
            sizes.push(batch.len());
            batched.extend(batch);
            Ok::<(), ()>(())
        });
        assert_eq!(done, Ok(()));
        assert_eq!(sizes, [2, 2, 1]);
        let debug = |r: &[TenantRender]| r.iter().map(|r| format!("{r:?}")).collect::<Vec<_>>();
        assert_eq!(debug(&batched), debug(&whole));
        let errors = |name: &str| {
            let r = whole.iter().find(|r| r.tenant == name).expect("rendered");
            r.errors
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert!(errors("zed").contains("host suffix"), "{}", errors("zed"));
        assert!(errors("acme").is_empty(), "{}", errors("acme"));
    }

    #[test]
    fn only_tenants_no_other_tenant_file_can_fail_are_candidates_for_reuse() {
        let files = [
            with("acme", "  state: active\n"),
            // Claims acme's host suffix: it fails, acme does not.
            with("bad", "  hostSuffixes: [acme.example.com]\n"),
            with("elsewhere", "  cluster: other\n"),
            with("gone", "  state: purged\n"),
            ("tenants/broken.yaml".to_string(), "kind: [".to_string()),
            (
                "fief.yaml".to_string(),
                "baseDomain: example.com\n".to_string(),
            ),
        ];
        let snapshot = Snapshot::from_files(files.iter().map(|(p, t)| (p.as_str(), t.as_str())));
        let repo = Repo::load(Arc::new(snapshot));
        let names: Vec<String> = repo.tenants.keys().cloned().collect();
        let candidates = reuse_candidates(&repo, &names, "default");
        assert_eq!(
            candidates.into_iter().collect::<Vec<_>>(),
            ["acme"],
            "{:?}",
            render_all(&repo, &[])
                .iter()
                .map(|r| (&r.tenant, r.errors.len()))
                .collect::<Vec<_>>()
        );
    }
}
