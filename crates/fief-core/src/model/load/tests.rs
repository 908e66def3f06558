//! Tests of the loader (tenant, fief.yaml and component files).

use super::*;

fn repo(files: &[(&str, &str)]) -> Repo {
    Repo::load(Arc::new(Snapshot::from_files(files.iter().copied())))
}

const TENANT: &str = "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: acme\nspec:\n  components:\n    - name: web\n";

#[test]
fn tenant_file_parses_with_defaults() {
    let r = repo(&[("tenants/acme.yaml", TENANT)]);
    let t = r.tenants["acme"].as_ref().unwrap();
    assert_eq!(t.spec.state, TenantState::Active);
    assert_eq!(t.spec.cluster, "default");
    assert_eq!(t.spec.components[0].name, "web");
}

#[test]
fn unknown_field_in_tenant_is_an_error_with_line() {
    let text = TENANT.replace("spec:\n", "spec:\n  colour: blue\n");
    let r = repo(&[("tenants/acme.yaml", &text)]);
    let errs = r.tenants["acme"].as_ref().unwrap_err();
    assert_eq!(errs[0].line, Some(6), "{errs:?}");
    assert!(errs[0].to_string().contains("colour"), "{}", errs[0]);
}

#[test]
fn file_name_must_match_metadata_name() {
    let r = repo(&[("tenants/other.yaml", TENANT)]);
    let errs = r.tenants["other"].as_ref().unwrap_err();
    assert!(matches!(*errs[0].problem, Problem::NameMismatch { .. }));
    assert_eq!(errs[0].line, Some(4));
}

#[test]
fn bad_tenant_name_is_rejected() {
    let text = TENANT.replace("name: acme", "name: Acme_Inc");
    let r = repo(&[("tenants/Acme_Inc.yaml", &text)]);
    let errs = r.tenants["Acme_Inc"].as_ref().unwrap_err();
    assert!(errs[0].to_string().contains("DNS-1123"), "{}", errs[0]);
}

#[test]
fn unknown_field_in_fief_yaml_is_an_error() {
    let r = repo(&[("fief.yaml", "namespacePatern: x\n")]);
    assert!(r.config.is_err());
}

#[test]
fn component_lists_templates_but_not_partials() {
    let r = repo(&[
        ("components/web/varz.yaml", "replicas: 1\n"),
        ("components/web/templates/deploy.yaml", "x"),
        ("components/web/templates/_helpers.tpl", "x"),
        ("components/web/templates/_part.yaml", "x"),
    ]);
    let c = r.components["web"].as_ref().unwrap();
    assert_eq!(c.templates, ["components/web/templates/deploy.yaml"]);
}

#[test]
fn repo_baseline_replaces_builtin() {
    let r = repo(&[("baseline/ns.yaml", "x")]);
    assert_eq!(r.baseline, ["baseline/ns.yaml"]);
    let r = repo(&[]);
    assert_eq!(r.baseline.len(), BUILTIN_BASELINE.len());
}

#[test]
fn dns_label_rules() {
    assert!(is_dns_label("acme-1"));
    assert!(!is_dns_label("-acme"));
    assert!(!is_dns_label("Acme"));
    assert!(!is_dns_label(&"a".repeat(64)));
}

/// The repo of `files`, loaded afresh and loaded incrementally from the load of `before`;
/// both loads must agree on the tenants and their files.
fn both_loads(before: &[(&str, &str)], files: &[(&str, &str)]) -> Repo {
    let prev = repo(before);
    let snapshot = Arc::new(Snapshot::from_files(files.iter().copied()));
    let changed = snapshot.changed_since(&prev.snapshot);
    let (reloaded, _) = Repo::load_reusing(Arc::clone(&snapshot), &prev, &changed);
    let fresh = Repo::load(snapshot);
    assert_eq!(reloaded.tenant_files, fresh.tenant_files);
    let names = |r: &Repo| -> Vec<(String, bool)> {
        r.tenants
            .iter()
            .map(|(n, t)| (n.clone(), t.is_ok()))
            .collect()
    };
    assert_eq!(names(&reloaded), names(&fresh));
    fresh
}

#[test]
fn a_tenant_file_in_a_directory_under_tenants_declares_the_tenant_of_its_file_name() {
    let r = both_loads(&[], &[("tenants/eu/shops/acme.yaml", TENANT)]);
    assert!(r.tenants["acme"].is_ok());
    assert_eq!(r.tenant_file("acme"), "tenants/eu/shops/acme.yaml");
    assert_eq!(r.tenant_file("nobody"), "tenants/nobody.yaml");
}

#[test]
fn one_tenant_in_two_directories_is_an_error_at_both_files() {
    let r = both_loads(
        &[("tenants/eu/acme.yaml", TENANT)],
        &[
            ("tenants/eu/acme.yaml", TENANT),
            ("tenants/us/acme.yaml", TENANT),
        ],
    );
    let errs = r.tenants["acme"].as_ref().unwrap_err();
    let files: Vec<&str> = errs.iter().map(|d| d.file.as_str()).collect();
    assert_eq!(files, ["tenants/eu/acme.yaml", "tenants/us/acme.yaml"]);
    assert!(
        errs[0].to_string().contains("declared twice")
            && errs[0].to_string().contains("tenants/us/acme.yaml"),
        "{}",
        errs[0]
    );
}

#[test]
fn a_tenant_file_moved_to_another_directory_is_the_same_tenant_read_from_its_new_place() {
    let r = both_loads(
        &[("tenants/acme.yaml", TENANT)],
        &[("tenants/eu/acme.yaml", TENANT)],
    );
    assert!(r.tenants["acme"].is_ok());
    assert_eq!(r.tenant_file("acme"), "tenants/eu/acme.yaml");
}

#[test]
fn removing_one_of_two_files_of_a_tenant_leaves_the_other_in_force() {
    let r = both_loads(
        &[
            ("tenants/eu/acme.yaml", TENANT),
            ("tenants/us/acme.yaml", TENANT),
        ],
        &[("tenants/us/acme.yaml", TENANT)],
    );
    assert!(r.tenants["acme"].is_ok());
    assert_eq!(r.tenant_file("acme"), "tenants/us/acme.yaml");
}

#[test]
fn removing_a_tenant_file_in_a_directory_removes_the_tenant() {
    let r = both_loads(
        &[("tenants/eu/acme.yaml", TENANT), ("fief.yaml", "")],
        &[("fief.yaml", "")],
    );
    assert!(!r.tenants.contains_key("acme"));
    assert!(!r.tenant_files.contains_key("acme"));
}

#[test]
fn tenants_of_one_load_share_their_alike_entries_environments_owners_and_quotas() {
    let tenant = |name: &str, replicas: u32, cpu: &str| {
        format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  environments: [dev, prod]\n  quota: {{cpu: \"{cpu}\"}}\n  components:\n    - name: db\n    - name: web\n      values: {{replicas: {replicas}}}\n"
        )
    };
    let (a, b, c) = (
        tenant("a", 1, "2"),
        tenant("b", 1, "2"),
        tenant("c", 2, "4"),
    );
    let r = repo(&[
        ("tenants/a.yaml", &a),
        ("tenants/b.yaml", &b),
        ("tenants/c.yaml", &c),
    ]);
    let spec = |n: &str| &r.tenants[n].as_ref().unwrap().spec;
    let (a, b, c) = (spec("a"), spec("b"), spec("c"));
    assert!(Arc::ptr_eq(&a.components[0], &c.components[0]), "db alike");
    assert!(Arc::ptr_eq(&a.components[1], &b.components[1]), "web alike");
    assert!(
        !Arc::ptr_eq(&a.components[1], &c.components[1]),
        "web's values differ"
    );
    assert_eq!(
        c.components[1].values.as_ref().unwrap().text(),
        r#"{"replicas":2}"#
    );
    assert!(Arc::ptr_eq(&a.environments, &c.environments));
    assert!(Arc::ptr_eq(&a.owner, &c.owner), "no owner named, alike");
    assert!(Arc::ptr_eq(&a.quota, &b.quota));
    assert!(!Arc::ptr_eq(&a.quota, &c.quota), "the cpu differs");
    assert_eq!(
        *a.quota,
        Quota {
            cpu: Some(Quantity::Text("2".into())),
            ..Quota::default()
        }
    );
}
