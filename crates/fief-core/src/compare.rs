//! Compare two renders of the repo (two git revisions) without a cluster: what a pull request
//! changes, per tenant and per object, with identical changes across tenants grouped.
//!
//! In: the tenants rendered at the base revision and at the new one. Out: a [`Comparison`]:
//! per tenant the objects added, changed and removed (with unified diffs of the object bodies,
//! Secrets redacted, `# Source:` comments never compared), and groups of tenants whose changes
//! are the same once the tenant's name is abstracted. Pure.

use std::collections::BTreeMap;

use serde::Serialize;
use similar::TextDiff;

use crate::objects::ObjectId;
use crate::redact::redact;
use crate::render::TenantRender;
use crate::yaml;

/// The placeholder a tenant's name is replaced with when changes are grouped.
pub const TENANT_PLACEHOLDER: &str = "{tenant}";

/// What happens to one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// New in the new revision.
    Added,
    /// In both, with another body.
    Changed,
    /// Gone from the new revision (apply would prune it).
    Removed,
}

/// One object's change.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ObjectChange {
    /// Added, changed or removed.
    pub action: Action,
    /// `group/kind namespace/name`.
    pub id: String,
    /// Unified diff of the object's YAML (Secret values redacted).
    pub diff: String,
}

/// One tenant's changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TenantChange {
    /// Tenant name.
    pub tenant: String,
    /// Its object changes, sorted by action then id.
    pub objects: Vec<ObjectChange>,
}

impl TenantChange {
    /// How many objects have this action.
    pub fn count(&self, action: Action) -> usize {
        self.objects.iter().filter(|o| o.action == action).count()
    }
}

/// Tenants whose changes are identical once their own name is abstracted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Group {
    /// The tenants, sorted.
    pub tenants: Vec<String>,
    /// The changes of the first tenant, shown for all.
    pub objects: Vec<ObjectChange>,
}

/// The whole comparison.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Comparison {
    /// Tenants with at least one change, sorted.
    pub tenants: Vec<TenantChange>,
    /// Tenants compared and found unchanged.
    pub unchanged: usize,
    /// Tenants that do not render or validate at the new revision (not compared).
    pub invalid: Vec<String>,
    /// Tenants whose file is gone at the new revision: apply reports them orphaned and leaves
    /// their objects running (deleting a tenant is `state: purged`).
    pub orphaned: Vec<String>,
    /// Changed tenants grouped by identical change, largest group first.
    pub groups: Vec<Group>,
}

impl Comparison {
    /// Whether anything differs (or a tenant is invalid).
    pub fn differs(&self) -> bool {
        !self.tenants.is_empty() || !self.invalid.is_empty() || !self.orphaned.is_empty()
    }
}

/// Each object's body as shown (Secret values redacted) and a hash of its real content, so a
/// changed Secret value is reported as changed without being shown.
fn bodies(render: Option<&TenantRender>) -> BTreeMap<&ObjectId, (String, String)> {
    render
        .into_iter()
        .flat_map(|r| r.objects.iter())
        .map(|o| {
            let shown = yaml::to_string(&redact(&o.object)).unwrap_or_default();
            (&o.id, (shown, o.content_hash().to_string()))
        })
        .collect()
}

/// The diff shown for a changed object; a change only in redacted values says so.
fn changed_diff(before: &str, after: &str, id: &str) -> String {
    if before == after {
        format!("{id}: Secret values changed (not shown)\n")
    } else {
        unified(before, after, id)
    }
}

fn unified(old: &str, new: &str, id: &str) -> String {
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{id}"), &format!("b/{id}"))
        .to_string()
}

/// Compare the base render with the new one. A tenant invalid at the new revision is listed in
/// `invalid` and not compared (apply would neither apply nor prune it).
pub fn compare(base: &[TenantRender], new: &[TenantRender]) -> Comparison {
    let base: BTreeMap<&str, &TenantRender> = base
        .iter()
        .filter(|r| r.is_ok())
        .map(|r| (r.tenant.as_str(), r))
        .collect();
    let mut out = Comparison::default();
    for r in new {
        if !r.is_ok() {
            out.invalid.push(r.tenant.clone());
            continue;
        }
        let old = bodies(base.get(r.tenant.as_str()).copied());
        let cur = bodies(Some(r));
        let mut objects = Vec::new();
        for (id, (body, hash)) in &cur {
            let name = id.to_string();
            match old.get(id) {
                None => objects.push(ObjectChange {
                    action: Action::Added,
                    diff: unified("", body, &name),
                    id: name,
                }),
                Some((before, old_hash)) if old_hash != hash => objects.push(ObjectChange {
                    action: Action::Changed,
                    diff: changed_diff(before, body, &name),
                    id: name,
                }),
                Some(_) => {}
            }
        }
        for (id, (body, _)) in &old {
            if !cur.contains_key(id) {
                let name = id.to_string();
                objects.push(ObjectChange {
                    action: Action::Removed,
                    diff: unified(body, "", &name),
                    id: name,
                });
            }
        }
        if objects.is_empty() {
            out.unchanged += 1;
        } else {
            objects.sort_by(|a, b| (a.action, &a.id).cmp(&(b.action, &b.id)));
            out.tenants.push(TenantChange {
                tenant: r.tenant.clone(),
                objects,
            });
        }
    }
    let present: std::collections::BTreeSet<&str> = new.iter().map(|r| r.tenant.as_str()).collect();
    out.orphaned = base
        .keys()
        .filter(|t| !present.contains(*t))
        .map(|t| t.to_string())
        .collect();
    out.tenants.sort_by(|a, b| a.tenant.cmp(&b.tenant));
    out.groups = group(&out.tenants);
    out
}

impl Comparison {
    /// A comparison from per-tenant changes found another way (e.g. against a cluster):
    /// sorted and grouped like [`compare`]'s.
    pub fn from_changes(
        mut tenants: Vec<TenantChange>,
        unchanged: usize,
        invalid: Vec<String>,
    ) -> Comparison {
        for t in &mut tenants {
            t.objects
                .sort_by(|a, b| (a.action, &a.id).cmp(&(b.action, &b.id)));
        }
        tenants.sort_by(|a, b| a.tenant.cmp(&b.tenant));
        let groups = group(&tenants);
        Comparison {
            tenants,
            unchanged,
            invalid,
            orphaned: Vec::new(),
            groups,
        }
    }
}

/// Group tenants whose changes are the same with their name replaced by a placeholder.
fn group(tenants: &[TenantChange]) -> Vec<Group> {
    let mut by_shape: BTreeMap<Vec<ObjectChange>, Vec<&TenantChange>> = BTreeMap::new();
    for t in tenants {
        let shape: Vec<ObjectChange> = t
            .objects
            .iter()
            .map(|o| ObjectChange {
                action: o.action,
                id: o.id.replace(&t.tenant, TENANT_PLACEHOLDER),
                diff: o.diff.replace(&t.tenant, TENANT_PLACEHOLDER),
            })
            .collect();
        by_shape.entry(shape).or_default().push(t);
    }
    let mut groups: Vec<Group> = by_shape
        .into_values()
        .map(|members| Group {
            tenants: members.iter().map(|t| t.tenant.clone()).collect(),
            objects: members[0].objects.clone(),
        })
        .collect();
    groups.sort_by(|a, b| {
        b.tenants
            .len()
            .cmp(&a.tenants.len())
            .then(a.tenants.cmp(&b.tenants))
    });
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Repo;
    use crate::pipeline::render_all;
    use crate::snapshot::Snapshot;
    use std::sync::Arc;

    fn render(tenants: &[&str], greeting: &str, extra: Option<&str>) -> Vec<TenantRender> {
        let mut files = vec![
            (
                "components/app/templates/cm.yaml".to_string(),
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  greeting: {{ values.greeting }}\n".to_string(),
            ),
            ("components/app/varz.yaml".to_string(), format!("greeting: {greeting}\n")),
        ];
        if let Some(t) = extra {
            files.push((
                "components/app/templates/extra.yaml".to_string(),
                t.to_string(),
            ));
        }
        for t in tenants {
            files.push((
                format!("tenants/{t}.yaml"),
                format!("apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {t}\nspec:\n  components: [{{name: app}}]\n"),
            ));
        }
        render_all(&Repo::load(Arc::new(Snapshot::from_files(files))), &[])
    }

    #[test]
    fn identical_render_has_no_changes() {
        let a = render(&["acme", "beta"], "hi", None);
        let c = compare(&a, &a);
        assert!(!c.differs());
        assert_eq!(c.unchanged, 2);
    }

    #[test]
    fn a_shared_change_is_one_group_of_every_tenant() {
        let a = render(&["acme", "beta", "gamma"], "hi", None);
        let b = render(&["acme", "beta", "gamma"], "hello", None);
        let c = compare(&a, &b);
        assert_eq!(c.tenants.len(), 3);
        assert_eq!(c.groups.len(), 1);
        assert_eq!(c.groups[0].tenants, ["acme", "beta", "gamma"]);
        let diff = &c.groups[0].objects[0].diff;
        assert!(
            diff.contains("-  greeting: hi") && diff.contains("+  greeting: hello"),
            "{diff}"
        );
    }

    #[test]
    fn added_and_removed_objects_and_tenants_are_reported() {
        let extra = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  password: hunter2\n";
        let a = render(&["acme"], "hi", Some(extra));
        let b = render(&["acme", "beta"], "hi", None);
        let c = compare(&a, &b);
        let acme = &c.tenants[0];
        assert_eq!(acme.count(Action::Removed), 1);
        assert!(
            !acme.objects[0].diff.contains("hunter2"),
            "secret values are redacted"
        );
        let rotated = extra.replace("hunter2", "correct-horse");
        let a = render(&["acme"], "hi", Some(extra));
        let b2 = render(&["acme"], "hi", Some(&rotated));
        let r = compare(&a, &b2);
        assert_eq!(
            r.tenants[0].count(Action::Changed),
            1,
            "a rotated secret is a change"
        );
        let shown = &r.tenants[0].objects[0].diff;
        assert!(
            !shown.contains("hunter2") && !shown.contains("correct-horse"),
            "{shown}"
        );
        let beta = &c.tenants[1];
        assert!(
            beta.count(Action::Added) > 1,
            "a new tenant adds its baseline and components"
        );
    }
}
