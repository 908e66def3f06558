//! The renders a pass over the fleet syncs, a batch of tenants at a time.
//!
//! In: the loaded repo, the environments in scope and each tenant's input hash — or renders
//! made up front (`fief apply --wait` waits on every render afterwards). Out: for the tenants
//! a batch names, their renders, each stamped with its input hash; how many were rendered.
//! The sync (`fief_kube::sync::sync_batched`) asks for each batch as it comes, so memory
//! holds a few batches' objects, and it calls the core for them itself: the command that
//! starts the pass hands over this value, not a function of its own.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::inputs::Hashes;
use crate::model::Repo;
use crate::render::TenantRender;
use crate::scope::EnvScope;

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
    pub fn made(renders: Arc<Vec<TenantRender>>) -> BatchRenders {
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
            Source::Made { renders, at } => batch
                .iter()
                .filter_map(|t| at.get(t).map(|i| renders[*i].clone()))
                .collect(),
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
        assert_eq!(Some(&batch[0].inputs), hashes.get("b"));
        assert_eq!(renders.rendered(), 1);
    }

    #[test]
    fn a_batch_of_renders_made_up_front_takes_the_named_ones_in_order() {
        let repo = repo();
        let made = crate::pipeline::render_all(&repo, &[]);
        assert_eq!(made.len(), 2);
        let renders = BatchRenders::made(Arc::new(made));
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
