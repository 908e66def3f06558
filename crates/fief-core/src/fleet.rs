//! A pass of `fief apply` over the fleet, worked out from the loaded repo before the cluster
//! is touched, and the renders it syncs a batch of tenants at a time.
//!
//! In: the repo, loaded whole or [`Indexed`] (`fief apply` without `--wait`: each tenant's
//! file is read again when it is judged and when it renders), the tenants asked for (all
//! when none), the environments in scope, the cluster's name — and, for `fief apply --wait`
//! (which waits on every render afterwards), the renders made up front. Out: a [`Pass`]: the
//! tenants in scope, every tenant of the repo (an inventory of none of them is orphaned), the
//! tenants whose last render may stand in for a new one, and [`BatchRenders`]: for the
//! tenants a batch names, their renders, each stamped with its input hash. The sync
//! (`fief_kube::pass`) asks for each batch as it comes, so memory holds a few batches'
//! objects, and it calls the core for them itself: the command hands over this value, not a
//! function of its own.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::inputs::{Hashes, TenantHasher};
use crate::model::{Indexed, Repo};
use crate::render::{Renderer, TenantRender};
use crate::scope::EnvScope;

/// What a pass over the fleet syncs (see the module docs).
pub struct Pass {
    /// The tenants in scope, by name.
    pub names: Vec<String>,
    /// Every tenant file in the repo.
    pub known: BTreeSet<String>,
    /// The tenants whose last render may stand in for a new one, with their input hash
    /// (see [`crate::pipeline::reuse_candidates`]); none with renders made up front.
    pub reusable: BTreeMap<String, String>,
    /// Where each batch's renders come from.
    pub renders: Arc<BatchRenders>,
}

impl Pass {
    /// The pass over `tenants` (every tenant when empty) of `repo` in `scope` on `cluster`,
    /// rendered as each batch comes; or, given `made` (rendered up front), over those of them
    /// in scope.
    pub fn new(
        repo: Arc<Repo>,
        tenants: &[String],
        scope: Arc<EnvScope>,
        cluster: &str,
        made: Option<Vec<TenantRender>>,
    ) -> Pass {
        let hashes = Arc::new(crate::inputs::tenant_hashes(&repo));
        let known = repo.tenants.keys().cloned().collect();
        if let Some(mut renders) = made {
            crate::inputs::stamp(&mut renders, &hashes);
            renders.retain(|r| in_scope(&repo, &r.tenant, &scope));
            return Pass {
                names: renders.iter().map(|r| r.tenant.clone()).collect(),
                known,
                reusable: BTreeMap::new(),
                renders: Arc::new(BatchRenders::up_front(Arc::new(renders))),
            };
        }
        let mut names: Vec<String> = if tenants.is_empty() {
            repo.tenants.keys().cloned().collect()
        } else {
            tenants.to_vec()
        };
        names.retain(|n| in_scope(&repo, n, &scope));
        let reusable = crate::pipeline::reuse_candidates(&repo, &names, cluster)
            .into_iter()
            .filter_map(|t| {
                let hash = hashes.get(&t)?.to_string();
                Some((t, hash))
            })
            .collect();
        Pass {
            names,
            known,
            reusable,
            renders: Arc::new(BatchRenders::from_repo(repo, scope, hashes)),
        }
    }

    /// [`Pass::new`] over an [`Indexed`] repo (renders are never made up front there): each
    /// tenant in scope has its file read once more to judge whether its last render may stand,
    /// and again when its batch renders, so the pass holds per tenant its name and, for those
    /// that may stand, their input hash, not the fleet's tenant files.
    pub fn indexed(
        indexed: Arc<Indexed>,
        tenants: &[String],
        scope: Arc<EnvScope>,
        cluster: &str,
    ) -> Pass {
        let hasher = TenantHasher::new(&indexed.base);
        let known = indexed.names().map(str::to_string).collect();
        let mut names: Vec<String> = if tenants.is_empty() {
            indexed.names().map(str::to_string).collect()
        } else {
            tenants.to_vec()
        };
        names.retain(|n| indexed_in_scope(&indexed, n, &scope));
        let reusable = crate::pipeline::indexed_reuse(&indexed, &names, cluster, &hasher);
        Pass {
            names,
            known,
            reusable,
            renders: Arc::new(BatchRenders {
                source: Source::Indexed {
                    renderer: Box::new(Renderer::new(indexed.base.snapshot.clone())),
                    indexed,
                    scope,
                    hasher,
                },
                rendered: AtomicUsize::new(0),
            }),
        }
    }
}

/// [`in_scope`] for a tenant of an [`Indexed`] repo, read from its cross-tenant claims (which
/// a tenant has when it and fief.yaml parse).
fn indexed_in_scope(indexed: &Indexed, name: &str, scope: &EnvScope) -> bool {
    match indexed.base.across().claims(name) {
        Some(claims) if indexed.config().is_some() => {
            claims.namespaces.iter().any(|(env, _)| scope.includes(env))
        }
        _ => true,
    }
}

/// Whether tenant `name` has an environment in `scope`: a tenant without one is left out of
/// an `--env` pass (nothing of it would change). A tenant file or fief.yaml that does not
/// parse counts as in scope, so its errors are reported.
pub fn in_scope(repo: &Repo, name: &str, scope: &EnvScope) -> bool {
    match (&repo.config, repo.tenants.get(name)) {
        (Ok(config), Some(Ok(t))) => crate::render::namespaces(config, t)
            .keys()
            .any(|e| scope.includes(e)),
        _ => true,
    }
}

/// Where a pass's renders come from (see the module docs).
pub struct BatchRenders {
    source: Source,
    /// Tenants rendered so far.
    rendered: AtomicUsize,
}

enum Source {
    /// Rendered as each batch comes.
    Repo {
        repo: Arc<Repo>,
        scope: Arc<EnvScope>,
        hashes: Arc<Hashes>,
    },
    /// Rendered as each batch comes, each tenant from its file read again.
    Indexed {
        indexed: Arc<Indexed>,
        scope: Arc<EnvScope>,
        hasher: TenantHasher,
        /// One for the whole pass: each batch renders with the templates compiled before.
        renderer: Box<Renderer>,
    },
    /// Rendered up front: the renders and each tenant's place among them.
    Made {
        renders: Arc<Vec<TenantRender>>,
        at: HashMap<String, usize>,
    },
}

impl BatchRenders {
    /// Render each batch from `repo` as it comes, in the environments of `scope`, stamped
    /// with `hashes`.
    pub fn from_repo(repo: Arc<Repo>, scope: Arc<EnvScope>, hashes: Arc<Hashes>) -> BatchRenders {
        BatchRenders {
            source: Source::Repo {
                repo,
                scope,
                hashes,
            },
            rendered: AtomicUsize::new(0),
        }
    }

    /// Take each batch from `renders`, made (and stamped) up front; they count as rendered.
    pub fn up_front(renders: Arc<Vec<TenantRender>>) -> BatchRenders {
        let at = renders
            .iter()
            .enumerate()
            .map(|(i, r)| (r.tenant.clone(), i))
            .collect();
        let rendered = AtomicUsize::new(renders.len());
        BatchRenders {
            source: Source::Made { renders, at },
            rendered,
        }
    }

    /// The renders of the tenants `batch` names, in its order (a tenant not made up front is
    /// left out). Blocking: a render runs on this thread and the core's worker threads.
    pub fn batch(&self, batch: &[String]) -> Vec<TenantRender> {
        match &self.source {
            Source::Repo {
                repo,
                scope,
                hashes,
            } => {
                self.rendered.fetch_add(batch.len(), Ordering::Relaxed);
                let mut renders = crate::pipeline::render_all_in(repo, batch, scope);
                crate::inputs::stamp(&mut renders, hashes);
                renders
            }
            Source::Indexed {
                indexed,
                scope,
                hasher,
                renderer,
            } => {
                self.rendered.fetch_add(batch.len(), Ordering::Relaxed);
                crate::pipeline::render_indexed_some(renderer, indexed, batch, scope, hasher)
            }
            Source::Made { renders, at } => batch
                .iter()
                .filter_map(|t| at.get(t).map(|i| renders[*i].clone()))
                .collect(),
        }
    }

    /// The renders made up front; none when each batch is rendered as it comes.
    pub fn made(&self) -> &[TenantRender] {
        match &self.source {
            Source::Made { renders, .. } => renders,
            Source::Repo { .. } | Source::Indexed { .. } => &[],
        }
    }

    /// The tenants rendered so far (with renders made up front: all of them).
    pub fn rendered(&self) -> usize {
        self.rendered.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::Snapshot;

    fn repo() -> Arc<Repo> {
        let tenant = |n: &str| {
            format!(
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {n}\nspec:\n  \
                 environments: [dev]\n  components: [{{name: web}}]\n"
            )
        };
        let files: Vec<(String, String)> = vec![
            ("fief.yaml".into(), "environments: [dev]\n".into()),
            (
                "components/web/templates/cm.yaml".into(),
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n".into(),
            ),
            ("tenants/a.yaml".into(), tenant("a")),
            ("tenants/b.yaml".into(), tenant("b")),
        ];
        Arc::new(Repo::load(Arc::new(Snapshot::from_files(files))))
    }

    #[test]
    fn a_batch_from_the_repo_is_rendered_stamped_and_counted() {
        let repo = repo();
        let hashes = Arc::new(crate::inputs::tenant_hashes(&repo));
        let renders = BatchRenders::from_repo(repo, Arc::new(EnvScope::All), hashes.clone());
        let batch = renders.batch(&["b".to_string()]);
        assert_eq!(batch.len(), 1);
        assert_eq!(batch[0].tenant, "b");
        assert!(batch[0].is_ok(), "{:?}", batch[0].errors);
        assert_eq!(
            Some(batch[0].inputs.clone()),
            hashes.get("b").map(|h| h.to_string())
        );
        assert_eq!(renders.rendered(), 1);
    }

    #[test]
    fn a_pass_over_some_environments_leaves_out_the_tenants_with_none_of_them() {
        let repo = repo();
        let scope = Arc::new(EnvScope::of(&["prod".to_string()]));
        let pass = Pass::new(repo.clone(), &[], scope, "", None);
        assert!(pass.names.is_empty());
        assert_eq!(pass.known.len(), 2);
        let pass = Pass::new(repo, &["b".to_string()], Arc::new(EnvScope::All), "", None);
        assert_eq!(pass.names, ["b"]);
    }

    #[test]
    fn a_batch_of_renders_made_up_front_takes_the_named_ones_in_order() {
        let repo = repo();
        let made = crate::pipeline::render_all(&repo, &[]);
        assert_eq!(made.len(), 2);
        let renders = BatchRenders::up_front(Arc::new(made));
        let names = ["b".to_string(), "gone".to_string(), "a".to_string()];
        let batch: Vec<String> = renders
            .batch(&names)
            .into_iter()
            .map(|r| r.tenant)
            .collect();
        assert_eq!(batch, ["b", "a"]);
        assert_eq!(renders.rendered(), 2);
    }
}
