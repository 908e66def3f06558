//! Unit tests of the input hashes: what each change touches, incremental updates, pins and
//! computed template names.

use super::*;
use crate::snapshot::Snapshot;
use std::sync::Arc;

fn tenant(name: &str, components: &[&str]) -> (String, String) {
    let list: String = components
        .iter()
        .map(|c| format!("    - name: {c}\n"))
        .collect();
    (
        format!("tenants/{name}.yaml"),
        format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  components:\n{list}"
        ),
    )
}

fn hashes(extra: &[(&str, &str)]) -> super::Hashes {
    let mut files = vec![
        tenant("a", &["web"]),
        tenant("b", &["db"]),
        tenant("c", &["web"]),
        (
            "components/web/templates/x.yaml".to_string(),
            "x".to_string(),
        ),
        (
            "components/web/component.yaml".to_string(),
            "dependsOn: [base]\n".to_string(),
        ),
        (
            "components/base/templates/x.yaml".to_string(),
            "b".to_string(),
        ),
        (
            "components/db/templates/x.yaml".to_string(),
            "d".to_string(),
        ),
    ];
    for (p, t) in extra {
        files.retain(|(q, _)| q != p);
        files.push((p.to_string(), t.to_string()));
    }
    tenant_hashes(&Repo::load(Arc::new(Snapshot::from_files(files))))
}

#[test]
fn a_shared_component_change_touches_exactly_its_tenants() {
    let before = hashes(&[]);
    let after = hashes(&[("components/web/templates/x.yaml", "changed")]);
    assert_ne!(before["a"], after["a"]);
    assert_ne!(before["c"], after["c"]);
    assert_eq!(before["b"], after["b"]);
}

#[test]
fn a_dependency_change_touches_the_dependent_tenants() {
    let before = hashes(&[]);
    let after = hashes(&[("components/base/templates/x.yaml", "changed")]);
    assert_ne!(before["a"], after["a"]);
    assert_eq!(before["b"], after["b"]);
}

#[test]
fn one_tenant_file_change_touches_only_that_tenant() {
    let before = hashes(&[]);
    let (p, t) = tenant("b", &["db", "web"]);
    let after = hashes(&[(p.as_str(), t.as_str())]);
    assert_ne!(before["b"], after["b"]);
    assert_eq!(before["a"], after["a"]);
    assert_eq!(before["c"], after["c"]);
}

#[test]
fn a_change_to_a_file_included_from_another_component_touches_the_including_tenants() {
    let include = (
        "components/db/templates/x.yaml",
        "{% include \"shared/snippet.txt\" %}\n",
    );
    let before = hashes(&[include, ("shared/snippet.txt", "one")]);
    let after = hashes(&[include, ("shared/snippet.txt", "two")]);
    assert_ne!(before["b"], after["b"]);
    assert_eq!(before["a"], after["a"]);
    let nested = ("shared/snippet.txt", "{%- include 'deep.txt' %}");
    let before = hashes(&[include, nested, ("shared/deep.txt", "one")]);
    let after = hashes(&[include, nested, ("shared/deep.txt", "two")]);
    assert_ne!(
        before["b"], after["b"],
        "followed transitively, relative names too"
    );
}

#[test]
fn a_tenant_secret_file_change_touches_only_that_tenant() {
    let before = hashes(&[("secrets/tenants/a.sops.yaml", "x: 1\n")]);
    let after = hashes(&[("secrets/tenants/a.sops.yaml", "x: 2\n")]);
    assert_ne!(before["a"], after["a"]);
    assert_eq!(before["b"], after["b"]);
    let shared = hashes(&[
        ("secrets/tenants/a.sops.yaml", "x: 1\n"),
        ("secrets/shared.sops.yaml", "y: 1\n"),
    ]);
    for t in ["a", "b", "c"] {
        assert_ne!(before[t], shared[t]);
    }
}

#[test]
fn fief_yaml_change_touches_every_tenant() {
    let before = hashes(&[]);
    let after = hashes(&[("fief.yaml", "baseDomain: other.example\n")]);
    for t in ["a", "b", "c"] {
        assert_ne!(before[t], after[t]);
    }
}

/// Load `before`, then `after` incrementally; the hashes must equal a full load of
/// `after`. Returns what the incremental pass parsed and hashed.
fn incremental(
    before: &[(&str, &str)],
    after: &[(&str, &str)],
) -> (crate::model::LoadStats, HashStats) {
    let files = |extra: &[(&str, &str)]| {
        let mut files: BTreeMap<String, String> = [
            tenant("a", &["web"]),
            tenant("b", &["db"]),
            tenant("c", &["web"]),
        ]
        .into_iter()
        .collect();
        for (p, t) in [
            (
                "components/web/templates/x.yaml",
                "{% include 'shared/s.txt' %}",
            ),
            ("components/web/component.yaml", "dependsOn: [base]\n"),
            ("components/base/templates/x.yaml", "b"),
            ("components/db/templates/x.yaml", "d"),
            ("environments/prod.yaml", "values: {}\n"),
            ("shared/s.txt", "one"),
        ] {
            files.insert(p.to_string(), t.to_string());
        }
        for (p, t) in extra {
            if t.is_empty() {
                files.remove(*p);
            } else {
                files.insert(p.to_string(), t.to_string());
            }
        }
        Arc::new(Snapshot::from_files(files))
    };
    let (old, new) = (files(before), files(after));
    let prev = Repo::load(old.clone());
    prev.across();
    let (index, _) = InputIndex::update(&prev, None);
    let changed = new.changed_since(&old);
    let (repo, loaded) = Repo::load_reusing(new.clone(), &prev, &changed);
    // The cross-tenant index carried over (changed tenants replaced) equals one built afresh.
    let sorted = |a: &crate::model::Across| {
        let claimed: Vec<_> = a.claimed().collect();
        let owners: BTreeMap<_, _> = claimed
            .iter()
            .flat_map(|(_, c)| &c.namespaces)
            .map(|(_, ns)| (ns.clone(), a.owners(ns)))
            .collect();
        format!("{claimed:?} {owners:?}")
    };
    let fresh = crate::model::Across::build(&repo.config, &repo.tenants);
    match repo.across.get() {
        Some(carried) => assert_eq!(sorted(carried), sorted(&fresh), "carried index == fresh"),
        None => assert!(
            changed.contains("fief.yaml"),
            "carried unless fief.yaml changed"
        ),
    }
    let (next, hashed) = InputIndex::update(&repo, Some((&index, &changed)));
    let full = Repo::load(new);
    assert_eq!(next.hashes(), tenant_hashes(&full), "incremental == full");
    assert_eq!(format!("{:?}", repo.tenants), format!("{:?}", full.tenants));
    assert_eq!(
        repo.pinning, full.pinning,
        "pinning tenants: incremental == full"
    );
    assert_eq!(
        format!("{:?}", repo.components),
        format!("{:?}", full.components)
    );
    (loaded, hashed)
}

#[test]
fn an_incremental_pass_equals_a_full_one_and_touches_only_what_changed() {
    let (p, t) = tenant("b", &["db", "web"]);
    let (loaded, hashed) = incremental(&[], &[(p.as_str(), t.as_str())]);
    assert_eq!((loaded.tenants_parsed, hashed.tenants_hashed), (1, 1));
    let (loaded, hashed) = incremental(&[], &[("components/base/templates/x.yaml", "z")]);
    assert_eq!(loaded.tenants_parsed, 0);
    assert_eq!(loaded.components_parsed, 1);
    assert_eq!(hashed.tenants_hashed, 2, "a and c use web, which uses base");
    let (_, hashed) = incremental(&[], &[("shared/s.txt", "two")]);
    assert_eq!(hashed.tenants_hashed, 2, "included from web");
    let (_, hashed) = incremental(&[], &[("environments/prod.yaml", "values: {x: 1}\n")]);
    assert_eq!(
        hashed.tenants_hashed, 3,
        "every tenant is in prod by default"
    );
    let (_, hashed) = incremental(&[], &[("secrets/tenants/c.sops.yaml", "x: 1\n")]);
    assert_eq!(hashed.tenants_hashed, 1, "a new per-tenant secret file");
    let (_, hashed) = incremental(&[], &[("secrets/shared.sops.yaml", "x: 1\n")]);
    assert_eq!(hashed.tenants_hashed, 3);
    // A tenant's own file beside a component's: the component's tenants and that one.
    let own_and_db = [
        ("components/db/templates/y.yaml", "y"),
        ("secrets/tenants/c.sops.yaml", "x: 1\n"),
    ];
    let (_, hashed) = incremental(&[], &own_and_db);
    assert_eq!(hashed.tenants_hashed, 2, "b uses db; c's own secret");
    let shared_and_db = [
        ("components/db/templates/y.yaml", "y"),
        ("secrets/shared.sops.yaml", "x: 1\n"),
    ];
    let (_, hashed) = incremental(&[], &shared_and_db);
    assert_eq!(
        hashed.tenants_hashed, 3,
        "a shared secret reaches every tenant"
    );
    let (_, hashed) = incremental(&[], &[("fief.yaml", "baseDomain: x.example\n")]);
    assert_eq!(hashed.tenants_hashed, 3);
    let (_, hashed) = incremental(&[], &[("components/db/templates/x.yaml", "")]);
    assert_eq!(hashed.tenants_hashed, 1, "db removed: b");
    let (_, hashed) = incremental(&[("components/db/templates/x.yaml", "")], &[]);
    assert_eq!(hashed.tenants_hashed, 1, "db added back: b");
    let (p, t) = tenant("d", &["db"]);
    let (loaded, hashed) = incremental(&[], &[(p.as_str(), t.as_str())]);
    assert_eq!((loaded.tenants_parsed, hashed.tenants_hashed), (1, 1));
    let (loaded, hashed) = incremental(&[], &[("tenants/c.yaml", "")]);
    assert_eq!((loaded.tenants_parsed, hashed.tenants_hashed), (0, 0));
    let (_, hashed) = incremental(&[], &[]);
    assert_eq!(hashed, HashStats::default());
}

#[test]
fn tenant_files_in_directories_are_hashed_and_updated_as_flat_ones() {
    let (_, t) = tenant("b", &["db", "web"]);
    let (_, moved) = tenant("c", &["web"]);
    // A tenant file moved into a directory: one tenant parsed and hashed, equal to a full pass.
    let (loaded, hashed) = incremental(
        &[],
        &[
            ("tenants/c.yaml", ""),
            ("tenants/eu/c.yaml", moved.as_str()),
        ],
    );
    assert_eq!((loaded.tenants_parsed, hashed.tenants_hashed), (1, 1));
    // A change to a tenant file in a directory touches that tenant alone.
    let (loaded, hashed) = incremental(
        &[
            ("tenants/b.yaml", ""),
            ("tenants/eu/b.yaml", moved.as_str()),
        ],
        &[("tenants/b.yaml", ""), ("tenants/eu/b.yaml", t.as_str())],
    );
    assert_eq!((loaded.tenants_parsed, hashed.tenants_hashed), (1, 1));
    // A second file of a tenant, in another directory, beside a shared change.
    let (_, hashed) = incremental(
        &[],
        &[("tenants/us/b.yaml", t.as_str()), ("shared/s.txt", "two")],
    );
    assert_eq!(
        hashed.tenants_hashed, 3,
        "a and c include s.txt; b has a new file"
    );
    // A `.yml` tenant file's content is in its hash.
    let (_, a) = tenant("a", &["web"]);
    let yml = |text: &str| {
        let files = [("tenants/a.yml".to_string(), text.to_string())];
        tenant_hashes(&Repo::load(Arc::new(Snapshot::from_files(files))))
    };
    assert_ne!(yml(&a)["a"], yml(&a.replace("name: web", "name: db"))["a"]);
}

#[test]
fn a_pinned_component_is_hashed_as_the_folder_read_at_its_ref() {
    let pinned = (
        "tenants/a.yaml",
        "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: a\nspec:\n  components:\n    - name: web\n      ref: v1\n",
    );
    let before = hashes(&[pinned, ("components/web@v1/templates/x.yaml", "one")]);
    let after = hashes(&[pinned, ("components/web@v1/templates/x.yaml", "two")]);
    assert_ne!(before["a"], after["a"], "the ref's content moved");
    assert_eq!(before["c"], after["c"], "c uses web at the head");
}

#[test]
fn an_environments_own_ref_is_hashed_as_the_folder_read_at_it() {
    let pinned = (
        "tenants/a.yaml",
        "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: a\nspec:\n  environments: [dev, prod]\n  components:\n    - name: web\n  overrides:\n    dev:\n      components: {web: {ref: v2}}\n",
    );
    let before = hashes(&[pinned, ("components/web@v2/templates/x.yaml", "one")]);
    let after = hashes(&[pinned, ("components/web@v2/templates/x.yaml", "two")]);
    assert_ne!(before["a"], after["a"], "dev's ref moved");
    assert_eq!(before["c"], after["c"], "c uses web at the head");
}

#[test]
fn a_tenant_whose_templates_compute_a_template_name_is_never_recorded_for_reuse() {
    let computed = (
        "components/db/templates/x.yaml",
        "{% include \"shared/\" ~ values.part %}\n",
    );
    let h = hashes(&[computed]);
    assert!(!h["b"].is_reusable(), "b uses db");
    assert!(h["a"].is_reusable());
    assert!(
        !reusable(&h["b"].to_string()),
        "as the inventory records it"
    );
    assert!(reusable(&h["a"].to_string()));
    assert_ne!(
        h["b"],
        hashes(&[computed, ("tenants/b.yaml", "x: 1\n")])["b"]
    );
    let mut renders = vec![
        crate::render::TenantRender {
            tenant: "a".into(),
            ..Default::default()
        },
        crate::render::TenantRender {
            tenant: "b".into(),
            ..Default::default()
        },
    ];
    stamp(&mut renders, &h);
    assert_eq!(renders[0].inputs, h["a"].to_string());
    assert!(renders[1].inputs.is_empty());
    assert!(!h["b"].mix("web@v1=tree").is_reusable());
    assert!(h["a"].mix("web@v1=tree").is_reusable());
    let baseline = (
        "baseline/ns.yaml",
        "{% include 'baseline/' ~ env ~ '.yaml' %}",
    );
    assert!(!hashes(&[baseline])["a"].is_reusable(), "the baseline too");
}
