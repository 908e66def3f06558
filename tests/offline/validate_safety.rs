//! Safety promises kept at render/validate time, before anything reaches a cluster:
//! reserved namespaces, host-suffix ownership, allowed component kinds, object names and
//! `render --out` paths, and YAML read as kubectl reads it. Each test runs `fief` as a user does.

use crate::common::offline;
use offline::{fief, stderr, stdout};

use std::path::Path;
use std::process::Output;

const CONFIGMAP: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  a: b\n";

fn tenant(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n{spec}  components:\n    - name: app\n"
    )
}

/// A repo with component `app` (one ConfigMap) and the given files.
fn repo(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "components/app/templates/configmap.yaml",
        CONFIGMAP,
    );
    for (path, text) in files {
        write(dir.path(), path, text);
    }
    dir
}

fn write(root: &Path, path: &str, text: &str) {
    let p = root.join(path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn validate(dir: &Path) -> Output {
    fief(&["validate", dir.to_str().unwrap()])
}

#[test]
fn validate_refuses_reserved_namespaces_with_the_tenant_file_line() {
    let dir = repo(&[
        (
            "fief.yaml",
            "agentNamespace: ops-system\nreservedNamespaces: [\"cert-*\"]\n",
        ),
        (
            "tenants/kube.yaml",
            &tenant("kube", "  environments: [system]\n"),
        ),
        (
            "tenants/cert.yaml",
            &tenant("cert", "  environments: [manager]\n"),
        ),
        (
            "tenants/ops.yaml",
            &tenant("ops", "  environments: [system]\n"),
        ),
        ("tenants/default.yaml", &tenant("default", "")),
        (
            "tenants/fine.yaml",
            &tenant("fine", "  environments: [prod]\n"),
        ),
    ]);
    let out = validate(dir.path());
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    for (file, ns, pattern) in [
        ("tenants/kube.yaml:6", "kube-system", "kube-*"),
        ("tenants/cert.yaml:6", "cert-manager", "cert-*"),
        ("tenants/ops.yaml:6", "ops-system", "ops-system"),
    ] {
        assert!(
            err.contains(&format!(
                "{file}: tenant `{}`: namespace `{ns}` is reserved (matches `{pattern}`)",
                ns.split('-').next().unwrap()
            )),
            "{err}"
        );
    }
    // `default-prod` is not reserved; the tenant named `default` is fine.
    assert!(!err.contains("tenant `default`"), "{err}");
    assert!(!err.contains("tenant `fine`"), "{err}");
    assert!(
        err.contains("hint: rename the tenant or the environment"),
        "{err}"
    );
    // The reserved tenants are not rendered at all: nothing to apply.
    let out = fief(&["render", dir.path().to_str().unwrap()]);
    assert!(
        !stdout(&out).contains("(tenant kube, env system)"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn reserved_namespaces_of_one_tenant_are_told_once_naming_each_namespace() {
    let dir = repo(&[(
        "tenants/kube.yaml",
        &tenant("kube", "  environments: [system, public, node-lease]\n"),
    )]);
    let out = validate(dir.path());
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(
        err.lines().filter(|l| l.starts_with("error: ")).count(),
        1,
        "one folded error: {err}"
    );
    let folded = err
        .lines()
        .find(|l| l.starts_with("error: tenants/kube.yaml:6: tenant `kube`: namespace `"))
        .unwrap_or_else(|| panic!("the folded error: {err}"));
    for ns in ["kube-system", "kube-public", "kube-node-lease"] {
        assert!(folded.contains(ns), "{ns} named in: {err}");
    }
    assert!(
        folded.ends_with("is reserved (matches `kube-*`); no tenant may have it (3 times)"),
        "{err}"
    );
    assert!(!folded.contains("<namespace>"), "{err}");
}

#[test]
fn validate_refuses_a_host_suffix_claimed_by_another_tenant() {
    let dir = repo(&[
        // `thief` claims the default suffix of `victim`: only the thief fails.
        ("tenants/victim.yaml", &tenant("victim", "")),
        (
            "tenants/thief.yaml",
            &tenant("thief", "  hostSuffixes: [shop.victim.example.com]\n"),
        ),
        // Two explicit claims where one lies under the other: both fail.
        (
            "tenants/one.yaml",
            &tenant("one", "  hostSuffixes: [brand.io]\n"),
        ),
        (
            "tenants/two.yaml",
            &tenant("two", "  hostSuffixes: [eu.brand.io]\n"),
        ),
    ]);
    let out = validate(dir.path());
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("tenants/thief.yaml:6: tenant `thief`: host suffix `shop.victim.example.com` overlaps `victim.example.com`, a host suffix of tenant `victim`"),
        "{err}"
    );
    assert!(!err.contains("tenant `victim`:"), "{err}");
    assert!(err.contains("tenants/one.yaml:6: tenant `one`"), "{err}");
    assert!(err.contains("tenants/two.yaml:6: tenant `two`"), "{err}");
    assert!(
        err.contains("hint: a host suffix belongs to one tenant"),
        "{err}"
    );
}

#[test]
fn validate_refuses_a_component_kind_outside_the_list_and_names_the_setting() {
    let monitor = "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata:\n  name: app\nspec:\n  endpoints: [{port: http}]\n";
    let role = "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: leader\nrules:\n  - apiGroups: [coordination.k8s.io]\n    resources: [leases]\n    verbs: [get, create, update]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: leader\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: leader}\nsubjects: [{kind: ServiceAccount, name: default}]\n";
    let dir = repo(&[
        ("tenants/acme.yaml", &tenant("acme", "")),
        ("components/app/templates/monitor.yaml", monitor),
        ("components/app/templates/role.yaml", role),
    ]);
    let out = validate(dir.path());
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("components/app/templates/monitor.yaml:1: tenant `acme`: ServiceMonitor `app` (group `monitoring.coreos.com`) is not a kind components may create"),
        "{err}"
    );
    assert!(err.contains("fief.yaml componentKinds"), "{err}");
    // Roles and RoleBindings are allowed by default.
    assert!(!err.contains("role.yaml"), "{err}");

    // A component RoleBinding may bind only the tenant's own ServiceAccounts.
    write(
        dir.path(),
        "components/app/templates/open.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: open\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: leader}\nsubjects:\n  - {kind: Group, apiGroup: rbac.authorization.k8s.io, name: \"system:authenticated\"}\n  - {kind: ServiceAccount, name: fief-tenant, namespace: other-prod}\n",
    );
    let err = stderr(&validate(dir.path()));
    assert!(
        err.contains("components/app/templates/open.yaml:1: tenant `acme`: RoleBinding `open` binds Group system:authenticated, which is not a ServiceAccount of this tenant"),
        "{err}"
    );
    assert!(
        err.contains("binds ServiceAccount other-prod/fief-tenant"),
        "{err}"
    );
    std::fs::remove_file(dir.path().join("components/app/templates/open.yaml")).unwrap();

    write(
        dir.path(),
        "fief.yaml",
        "componentKinds: [monitoring.coreos.com/ServiceMonitor]\n",
    );
    let out = fief(&["render", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The deployer Role grants the added kind to the tenant identity.
    let text = stdout(&out);
    let deployer = text
        .split("\n---\n")
        .find(|d| d.contains("kind: Role\n") && d.contains("name: fief-deployer"))
        .unwrap();
    assert!(deployer.contains("- servicemonitors"), "{deployer}");
    assert!(deployer.contains("- roles") && deployer.contains("- rolebindings"));

    write(
        dir.path(),
        "fief.yaml",
        "componentKinds: [ServiceMonitor]\n",
    );
    let out = validate(dir.path());
    assert!(
        stderr(&out).contains("fief.yaml:1: ")
            && stderr(&out).contains("componentKinds: `ServiceMonitor` is not `group/Kind`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_object_name_that_leaves_the_out_folder_is_refused_and_nothing_is_written_outside() {
    let root = tempfile::tempdir().unwrap();
    let repo_dir = root.path().join("repo");
    write(&repo_dir, "tenants/acme.yaml", &tenant("acme", ""));
    write(
        &repo_dir,
        "components/app/templates/configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ../../../escaped\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: 1web\n",
    );
    let out_dir = root.path().join("out");
    let out = fief(&[
        "render",
        repo_dir.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("components/app/templates/configmap.yaml:1: tenant `acme`: ConfigMap `../../../escaped`: the name must be a DNS-1123 subdomain"),
        "{err}"
    );
    assert!(
        err.contains("configmap.yaml:6: tenant `acme`: Service `1web`: a Service name must be a DNS-1035 label"),
        "{err}"
    );
    assert!(!root.path().join("escaped.yaml").exists());
    assert!(!root.path().join("configmap.escaped.yaml").exists());
    assert!(!out_dir.join("acme").exists());
}

#[test]
fn render_out_into_the_same_folder_leaves_no_stale_files() {
    let dir = repo(&[("tenants/acme.yaml", &tenant("acme", ""))]);
    write(
        dir.path(),
        "components/app/templates/extra.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n",
    );
    let out_dir = tempfile::tempdir().unwrap();
    let render = || {
        fief(&[
            "render",
            dir.path().to_str().unwrap(),
            "--out",
            out_dir.path().to_str().unwrap(),
        ])
    };
    let out = render();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let extra = out_dir.path().join("acme/acme-prod/configmap.extra.yaml");
    assert!(extra.is_file());
    // A file the user put there is never touched.
    std::fs::write(out_dir.path().join("notes.txt"), "mine").unwrap();

    std::fs::remove_file(dir.path().join("components/app/templates/extra.yaml")).unwrap();
    let out = render();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!extra.exists(), "a file no longer rendered is removed");
    assert!(
        out_dir
            .path()
            .join("acme/acme-prod/configmap.app-config.yaml")
            .is_file()
    );
    assert!(out_dir.path().join("notes.txt").is_file());

    // A non-empty folder fief did not write is refused.
    let foreign = tempfile::tempdir().unwrap();
    std::fs::write(foreign.path().join("important.yaml"), "x").unwrap();
    let out = fief(&[
        "render",
        dir.path().to_str().unwrap(),
        "--out",
        foreign.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not written by `fief render`"),
        "{}",
        stderr(&out)
    );
    assert!(!foreign.path().join("acme").exists());
}

#[test]
fn yaml_1_1_octal_reaches_the_output_as_kubectl_sends_it_and_no_document_is_dropped() {
    let dir = repo(&[("tenants/acme.yaml", &tenant("acme", ""))]);
    write(
        dir.path(),
        "components/app/templates/configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\n--- # the pod\napiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers: [{name: c, image: nginx}]\n  volumes:\n    - name: cfg\n      configMap: {name: app-config, defaultMode: 0644}\n--- {apiVersion: v1, kind: ConfigMap, metadata: {name: inline}}\n",
    );
    let out = fief(&["render", dir.path().to_str().unwrap()]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(text.contains("defaultMode: 420"), "{text}");
    assert!(text.contains("name: web"), "{text}");
    assert!(text.contains("name: inline"), "{text}");

    // A block mapping cannot start on its `---` line: refused with its line, not dropped.
    write(
        dir.path(),
        "components/app/templates/configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\n--- apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: second\n",
    );
    let out = validate(dir.path());
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("components/app/templates/configmap.yaml:"),
        "{err}"
    );
    assert!(err.contains("move it to the next line"), "{err}");
}
