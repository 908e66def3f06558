//! Folding keeps what differs: reserved namespaces of one tenant, a shared template's error
//! across tenants, values that repeat, long lists, names inside longer names.

use super::*;
use crate::diagnostic::Problem;

fn reserved(tenant: &str, namespace: &str) -> Diagnostic {
    Diagnostic::new(
        format!("tenants/{tenant}.yaml"),
        Some(7),
        Problem::ReservedNamespace {
            namespace: namespace.into(),
            pattern: "kube-*".into(),
        },
    )
    .for_tenant(tenant)
}

fn duplicate(tenant: &str, namespace: &str) -> Diagnostic {
    Diagnostic::new(
        "components/app/templates/cm.yaml",
        Some(1),
        Problem::DuplicateObject {
            id: format!("ConfigMap/{namespace}/hello"),
            first: "components/app/templates/a.yaml:1".into(),
        },
    )
    .for_tenant(tenant)
}

#[test]
fn a_tenants_reserved_namespaces_fold_into_one_message_naming_each_namespace() {
    let namespaces = ["kube-system", "kube-public", "kube-node-lease"];
    let ds: Vec<Diagnostic> = namespaces.iter().map(|n| reserved("sys", n)).collect();
    let mut folder = Folder::default();
    folder.add("sys", &namespaces, &ds);
    let folds = folder.finish();
    assert_eq!(folds.len(), 1, "{folds:?}");
    assert_eq!(folds[0].count, 3);
    assert_eq!(folds[0].tenants, ["sys"]);
    assert_eq!(
        folds[0].message,
        "namespace `kube-system, kube-public, kube-node-lease` is reserved (matches `kube-*`); no tenant may have it"
    );
}

#[test]
fn a_shared_error_folds_across_tenants_and_lists_the_namespaces_braced_inside_a_name() {
    let own = |t: &str| {
        [
            duplicate(t, &format!("{t}-dev")),
            duplicate(t, &format!("{t}-prod")),
        ]
    };
    let (t1, t2) = (own("t1"), own("t2"));
    let mut folder = Folder::default();
    folder.add("t1", &["t1-dev", "t1-prod"], &t1);
    folder.add("t2", &["t2-dev", "t2-prod"], &t2);
    let folds = folder.finish();
    assert_eq!(folds.len(), 1, "{folds:?}");
    assert_eq!(folds[0].count, 4);
    assert_eq!(folds[0].tenants, ["t1", "t2"]);
    assert_eq!(
        folds[0].message,
        "duplicate object ConfigMap/{t1-dev, t1-prod, t2-dev, t2-prod}/hello; first rendered from components/app/templates/a.yaml:1"
    );
}

#[test]
fn a_value_the_same_everywhere_is_shown_as_itself() {
    let ds = vec![
        duplicate("acme", "acme-prod"),
        duplicate("acme", "acme-prod"),
    ];
    let mut folder = Folder::default();
    folder.add("acme", &["acme-prod"], &ds);
    let folds = folder.finish();
    assert_eq!(folds.len(), 1);
    assert_eq!(folds[0].count, 2);
    assert!(
        folds[0].message.contains("ConfigMap/acme-prod/hello"),
        "{}",
        folds[0].message
    );
}

#[test]
fn a_tenant_name_that_differs_stays_a_placeholder_because_the_fold_lists_the_tenants() {
    let template = |t: &str| {
        Diagnostic::new(
            "components/app/templates/cm.yaml",
            Some(3),
            Problem::Template {
                detail: format!("tenant `{t}` has no value `x`"),
            },
        )
        .for_tenant(t)
    };
    let (a, b) = ([template("alpha")], [template("beta")]);
    let mut folder = Folder::default();
    folder.add("alpha", &[], &a);
    folder.add("beta", &[], &b);
    let folds = folder.finish();
    assert_eq!(folds.len(), 1);
    assert_eq!(
        folds[0].message,
        "template error: tenant `<tenant>` has no value `x`"
    );
    assert_eq!(folds[0].tenants, ["alpha", "beta"]);
}

#[test]
fn many_differing_values_list_the_first_few_and_how_many_more() {
    let namespaces: Vec<String> = (0..8).map(|i| format!("kube-n{i}")).collect();
    let refs: Vec<&str> = namespaces.iter().map(String::as_str).collect();
    let ds: Vec<Diagnostic> = refs.iter().map(|n| reserved("sys", n)).collect();
    let mut folder = Folder::default();
    folder.add("sys", &refs, &ds);
    let folds = folder.finish();
    assert_eq!(folds.len(), 1);
    assert!(
        folds[0]
            .message
            .starts_with("namespace `kube-n0, kube-n1, kube-n2, kube-n3, kube-n4 and 3 more` is"),
        "{}",
        folds[0].message
    );
}

#[test]
fn different_problems_and_different_lines_are_not_folded() {
    let other_line = {
        let mut d = reserved("sys", "kube-public");
        d.line = Some(9);
        d
    };
    let ds = vec![reserved("sys", "kube-system"), other_line];
    let mut folder = Folder::default();
    folder.add("sys", &["kube-system", "kube-public"], &ds);
    let folds = folder.finish();
    assert_eq!(folds.len(), 2);
    assert!(folds[0].message.contains("`kube-system`"));
    assert!(folds[1].message.contains("`kube-public`"));
}

#[test]
fn only_whole_names_are_places_that_may_differ() {
    let (parts, values) = split(
        "duplicate object ConfigMap/t1-dev/hello of tenant `t1`; not t10 or t1-devx",
        "t1",
        &["t1-dev", "t1-prod"],
    );
    assert_eq!(values, ["t1-dev", "t1"]);
    assert_eq!(
        parts,
        [
            Part::Text("duplicate object ConfigMap/".into()),
            Part::Slot(Slot::Namespace),
            Part::Text("/hello of tenant `".into()),
            Part::Slot(Slot::Tenant),
            Part::Text("`; not t10 or t1-devx".into()),
        ]
    );
}

#[test]
fn a_namespace_named_like_its_tenant_is_taken_as_the_namespace() {
    let (parts, values) = split("namespace `acme` is reserved", "acme", &["acme"]);
    assert_eq!(values, ["acme"]);
    assert_eq!(parts[1], Part::Slot(Slot::Namespace));
}
