//! Ownership of namespaces: fief adopts a namespace it did not create for the tenant only when
//! told to (`--adopt`), and never one labelled as another fief tenant's.
//!
//! In: the Namespaces a tenant's plan applies for the first time (absent from its inventory),
//! and the [`Adopt`] mode. Out: one GET each; the names that do not exist yet (fief creates
//! them, and records that in the inventory entry's `created` flag) and those taken by
//! `--adopt` (recorded as not created: never deleted by fief), or a one-line refusal when one
//! exists without this tenant's labels and is not adopted — then nothing of the tenant is
//! applied or pruned.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::Api;

use super::ClusterError;
use super::adoption::Adopt;
use super::sync::Ctx;
use fief_core::objects;
use fief_core::plan::Plan;

/// Why a tenant may not take a namespace.
#[derive(Debug, thiserror::Error)]
pub(super) enum AdoptError {
    /// The namespace exists and is not labelled as this tenant's.
    #[error(
        "namespace {namespace} already exists and was not created by fief for tenant {tenant} ({found}); \
         refusing to adopt it, nothing of this tenant is applied or pruned: choose another environment name, \
         or delete the namespace, or take it over with `fief apply --adopt` (see `fief diff --adopt` first)"
    )]
    Foreign {
        /// The namespace.
        namespace: String,
        /// The tenant.
        tenant: String,
        /// What its labels say.
        found: String,
    },
    /// The namespace is labelled as another fief tenant's: never taken, even by `--adopt`.
    #[error(
        "namespace {namespace} belongs to fief tenant `{owner}`; tenant {tenant} may never take it \
         (not even with --adopt): nothing of this tenant is applied or pruned: choose another environment name"
    )]
    OtherTenant {
        /// The namespace.
        namespace: String,
        /// The tenant.
        tenant: String,
        /// The tenant its labels name.
        owner: String,
    },
    /// The namespace could not be read.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
}

/// Whether a plan entry is a Namespace.
pub(super) fn is_namespace(group: &str, kind: &str) -> bool {
    group.is_empty() && kind == "Namespace"
}

/// The namespaces of a plan that are new to the tenant's inventory.
#[derive(Debug, Default)]
pub(super) struct NewNamespaces {
    /// Those that do not exist: fief creates them.
    pub(super) absent: BTreeSet<String>,
    /// Those that exist and that `--adopt` takes (made by another tool).
    pub(super) adopted: BTreeSet<String>,
}

/// Read every Namespace the plan applies for the first time; return those that do not exist
/// (fief will create them) and those adopted. A namespace that exists must carry
/// `fief.dev/tenant: <tenant>` and `app.kubernetes.io/managed-by: fief` (then it is taken, but
/// not marked created), or be adopted (`--adopt`; never one labelled as another tenant's).
pub(super) async fn check_new_namespaces(
    ctx: &Ctx<'_>,
    tenant: &str,
    plan: &Plan<'_>,
) -> Result<NewNamespaces, AdoptError> {
    let api: Api<Namespace> = Api::all(ctx.resources.client().clone());
    let mut new = NewNamespaces::default();
    for a in plan.stages.iter().flatten() {
        let id = &a.object.id;
        if !is_namespace(&id.group, &id.kind) || a.existed {
            continue;
        }
        let live = api
            .get_opt(&id.name)
            .await
            .map_err(|e| ClusterError::request(format!("get Namespace/{}", id.name), e))?;
        let Some(live) = live else {
            new.absent.insert(id.name.clone());
            continue;
        };
        let labels = live.metadata.labels.unwrap_or_default();
        let owner = labels.get(objects::LABEL_TENANT).map(String::as_str);
        let managed = labels.get(objects::LABEL_MANAGED_BY).map(String::as_str);
        if let Some(owner) = owner.filter(|o| *o != tenant) {
            return Err(AdoptError::OtherTenant {
                namespace: id.name.clone(),
                tenant: tenant.to_string(),
                owner: owner.to_string(),
            });
        }
        if owner != Some(tenant) || managed != Some("fief") {
            if ctx.options.adopt != Adopt::Never {
                new.adopted.insert(id.name.clone());
                continue;
            }
            let found = match owner {
                Some(other) => format!("it is labelled {}={other}", objects::LABEL_TENANT),
                None => format!("it has no {} label", objects::LABEL_TENANT),
            };
            return Err(AdoptError::Foreign {
                namespace: id.name.clone(),
                tenant: tenant.to_string(),
                found,
            });
        }
    }
    Ok(new)
}
