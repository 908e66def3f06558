//! Components pinned to a git ref per tenant: `components: [{name: web, ref: web-1.5.0}]`
//! renders `components/web/` as it is at that ref, everything else at the head; an
//! environment's override (`overrides: {dev: {components: {web: {ref: web-1.6.0}}}}`) pins
//! it in that environment only.
//!
//! In: the head [`Repo`], and for each pinned (component, ref) the snapshot of the repo at
//! that ref (read by a source: the checkout's git history for the CLI). Out: a snapshot with
//! each pinned component's folder added as `components/<name>@<ref>/`, which
//! [`crate::model::ComponentRef::key`] names. A ref that cannot be read, or that has no
//! such component, becomes a problem entry there, so only the tenants that pin it fail. With
//! each pin's resolution ([`Resolved`]), tenant input hashes get the pinned tree ids mixed
//! in ([`hashes_with`]), so a moved tag changes exactly the tenants pinned to it. Pure.

use std::collections::{BTreeMap, BTreeSet};

use crate::diagnostic::Problem;
use crate::inputs::Hashes;
use crate::model::{Repo, pinned_key};
use crate::snapshot::Snapshot;

/// Each pinned (component, ref) and what it resolved to: the component's tree id at the
/// ref, or why it cannot be read.
pub type Resolved = BTreeMap<(String, String), Result<String, String>>;

/// Every (component, ref) some tenant pins, on a component entry or in an environment's
/// override (read from the pinning tenants only).
pub fn pins(repo: &Repo) -> BTreeSet<(String, String)> {
    repo.pinning
        .iter()
        .filter_map(|name| repo.tenants.get(name)?.as_ref().ok())
        .flat_map(|t| t.spec.pinned_refs())
        .map(|(c, r)| (c.to_string(), r.to_string()))
        .collect()
}

/// `head` with each pinned component's folder added from the snapshot of its ref.
pub fn with_pins(
    head: &Snapshot,
    pinned: &[(String, String, Result<Snapshot, String>)],
) -> Snapshot {
    let mut out = head.clone();
    for (component, git_ref, at_ref) in pinned {
        let dir = format!("components/{}", pinned_key(component, git_ref));
        let problem = |detail: String| Problem::PinnedRef {
            component: component.clone(),
            git_ref: git_ref.clone(),
            detail,
        };
        match at_ref {
            Err(detail) => out.insert(
                format!("{dir}/component.yaml"),
                Err(problem(detail.clone())),
            ),
            Ok(snapshot) => {
                let from = format!("components/{component}");
                if !snapshot.has_dir(&from) {
                    out.insert(
                        format!("{dir}/component.yaml"),
                        Err(problem(format!("the repo has no {from}/ at that ref"))),
                    );
                    continue;
                }
                for (path, entry) in snapshot.under(&from) {
                    let rest = &path[from.len()..];
                    out.insert(format!("{dir}{rest}"), entry.clone());
                }
            }
        }
    }
    out
}

/// Tenant input hashes with each pinned component's tree id (or why it cannot be read)
/// mixed into the hash of the tenants that pin it: moving a tag re-syncs exactly them.
pub fn hashes_with(repo: &Repo, mut hashes: Hashes, resolved: &Resolved) -> Hashes {
    if resolved.is_empty() {
        return hashes;
    }
    for name in &repo.pinning {
        let Some(Ok(tenant)) = repo.tenants.get(name) else {
            continue;
        };
        let mut mix = String::new();
        // Component entries' refs and environment overrides' refs alike.
        for (component, git_ref) in tenant.spec.pinned_refs() {
            let at = resolved.get(&(component.to_string(), git_ref.to_string()));
            mix.push_str(&format!("{component}@{git_ref}={at:?};"));
        }
        if mix.is_empty() {
            continue;
        }
        if let Some(h) = hashes.get_mut(name) {
            *h = h.mix(&mix);
        }
    }
    hashes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::render_all;
    use std::sync::Arc;

    fn files(greeting: &str, pins: &str) -> Vec<(String, String)> {
        vec![
            (
                "components/web/templates/cm.yaml".into(),
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  greeting: {{ values.greeting }}\n".into(),
            ),
            ("components/web/varz.yaml".into(), format!("greeting: {greeting}\n")),
            (
                "tenants/a.yaml".into(),
                format!("apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: a\nspec:\n  components: [{{name: web{pins}}}]\n"),
            ),
            (
                "tenants/b.yaml".into(),
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: b\nspec:\n  components: [{name: web}]\n".into(),
            ),
        ]
    }

    fn greeting(r: &crate::render::TenantRender) -> String {
        r.objects
            .iter()
            .find(|o| o.id.kind == "ConfigMap")
            .map(|o| o.object["data"]["greeting"].to_string())
            .unwrap_or_default()
    }

    #[test]
    fn a_pinned_tenant_renders_the_component_at_its_ref_and_the_others_at_head() {
        let head = Repo::load(Arc::new(Snapshot::from_files(files("new", ", ref: v1"))));
        assert_eq!(
            pins(&head).into_iter().collect::<Vec<_>>(),
            [("web".to_string(), "v1".to_string())]
        );
        let old = Snapshot::from_files(files("old", ""));
        let merged = with_pins(&head.snapshot, &[("web".into(), "v1".into(), Ok(old))]);
        let repo = Repo::load(Arc::new(merged));
        let renders = render_all(&repo, &[]);
        assert!(renders.iter().all(|r| r.is_ok()), "{:?}", renders[0].errors);
        assert_eq!(greeting(&renders[0]), "\"old\"");
        assert_eq!(greeting(&renders[1]), "\"new\"");
        let labels = &renders[0]
            .objects
            .last()
            .map(|o| o.object["metadata"]["labels"].clone());
        assert_eq!(
            labels.as_ref().map(|l| l["fief.dev/component"].clone()),
            Some("web".into())
        );
    }

    #[test]
    fn an_environments_own_ref_renders_that_environment_at_it_over_the_entrys_ref() {
        let mut head_files = files("new", "");
        head_files[2].1 = "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: a\nspec:\n  environments: [dev, prod, stage]\n  components: [{name: web, ref: v1}]\n  overrides:\n    dev:\n      components: {web: {ref: v2}}\n".into();
        let head = Repo::load(Arc::new(Snapshot::from_files(head_files)));
        assert_eq!(
            pins(&head).into_iter().collect::<Vec<_>>(),
            [("web".into(), "v1".into()), ("web".into(), "v2".into())]
        );
        let tenant = head.tenants["a"].as_ref().expect("tenant parses");
        assert_eq!(tenant.spec.component_ref("web", "dev"), Some("v2"));
        assert_eq!(tenant.spec.component_ref("web", "prod"), Some("v1"));
        let merged = with_pins(
            &head.snapshot,
            &[
                (
                    "web".into(),
                    "v1".into(),
                    Ok(Snapshot::from_files(files("one", ""))),
                ),
                (
                    "web".into(),
                    "v2".into(),
                    Ok(Snapshot::from_files(files("two", ""))),
                ),
            ],
        );
        let renders = render_all(&Repo::load(Arc::new(merged)), &["a".to_string()]);
        assert!(renders[0].is_ok(), "{:?}", renders[0].errors);
        let in_env = |env: &str| {
            renders[0]
                .objects
                .iter()
                .find(|o| o.id.kind == "ConfigMap" && o.env == env)
                .map(|o| o.object["data"]["greeting"].to_string())
        };
        assert_eq!(in_env("dev").as_deref(), Some("\"two\""));
        assert_eq!(in_env("prod").as_deref(), Some("\"one\""));
        assert_eq!(in_env("stage").as_deref(), Some("\"one\""));
    }

    #[test]
    fn an_incremental_load_finds_a_pin_added_and_forgets_one_removed() {
        let unpinned = Arc::new(Snapshot::from_files(files("new", "")));
        let pinned = Arc::new(Snapshot::from_files(files("new", ", ref: v1")));
        let first = Repo::load(unpinned.clone());
        assert!(pins(&first).is_empty());
        let changed = pinned.changed_since(&unpinned);
        let (second, _) = Repo::load_reusing(pinned.clone(), &first, &changed);
        assert_eq!(
            pins(&second).into_iter().collect::<Vec<_>>(),
            [("web".to_string(), "v1".to_string())]
        );
        let changed = unpinned.changed_since(&pinned);
        let (third, _) = Repo::load_reusing(unpinned, &second, &changed);
        assert!(pins(&third).is_empty(), "{:?}", third.pinning);
    }

    #[test]
    fn an_unreadable_ref_fails_only_the_tenants_that_pin_it() {
        let head = Repo::load(Arc::new(Snapshot::from_files(files("new", ", ref: nope"))));
        let merged = with_pins(
            &head.snapshot,
            &[("web".into(), "nope".into(), Err("unknown revision".into()))],
        );
        let renders = render_all(&Repo::load(Arc::new(merged)), &[]);
        assert!(!renders[0].is_ok());
        assert!(
            renders[0].errors[0]
                .to_string()
                .contains("pinned to ref `nope`")
        );
        assert!(renders[1].is_ok());
    }
}
