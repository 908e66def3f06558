//! Adoption of a fleet another tool made (`fief diff --adopt`, `fief apply --adopt`), against
//! the real test control plane: objects server-side applied by `kustomize-controller` (as
//! Flux makes them) are taken with no delete, no recreate and no new Pod template; fief then
//! owns their fields alone; objects that differ are not taken unless `--adopt=force`.

use crate::common;

use common::cluster_cli::*;
use common::kubectl::Kubectl;
use common::util::text;
use serde_json::Value;

/// Component `web`: a ConfigMap with two keys and a Deployment.
const WEB_CONFIG: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  a: \"1\"\n  b: \"2\"\n";
const WEB_DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
        - name: web
          image: busybox:1.36
          command: [sleep, infinity]
";

/// A repo whose tenant runs component `web` in environment `prod`.
fn web_repo(tenant: &str) -> TestRepo {
    let repo = TestRepo::new("");
    repo.write("components/web/templates/config.yaml", WEB_CONFIG);
    repo.write("components/web/templates/deployment.yaml", WEB_DEPLOYMENT);
    repo.tenant(
        tenant,
        "  environments: [prod]\n  components:\n    - name: web\n",
    );
    repo
}

/// Server-side apply `yaml` as Flux's kustomize-controller does, with its labels.
fn flux_apply(ns: &str, yaml: &str) {
    let labelled = yaml.replacen(
        "metadata:\n",
        "metadata:\n  labels:\n    kustomize.toolkit.fluxcd.io/name: tenants\n    kustomize.toolkit.fluxcd.io/namespace: flux-system\n",
        1,
    );
    let mut args = vec![
        "apply",
        "--server-side",
        "--field-manager=kustomize-controller",
        "-f",
        "-",
    ];
    if !ns.is_empty() {
        args.extend(["-n", ns]);
    }
    Kubectl::admin().stdin(&labelled).ok(&args);
}

/// What Flux made of the tenant: its namespace, and the objects given.
fn flux_made(ns: &str, objects: &[&str]) {
    flux_apply(
        "",
        &format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n"),
    );
    for o in objects {
        flux_apply(ns, o);
    }
}

/// A live object with its `managedFields` (kubectl hides them unless asked).
fn with_managers(kind: &str, name: &str, ns: &str) -> Value {
    kubectl_json(&["get", kind, name, "-n", ns, "--show-managed-fields"])
}

/// The main-resource field managers of a live object.
fn managers(live: &Value) -> Vec<String> {
    live["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["subresource"].as_str().unwrap_or_default().is_empty())
        .map(|m| m["manager"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn adopt_takes_a_flux_made_tenant_with_no_change_and_fief_alone_owns_its_fields_after() {
    let tenant = common::unique("flux");
    let ns = format!("{tenant}-prod");
    let repo = web_repo(&tenant);
    flux_made(&ns, &[WEB_CONFIG, WEB_DEPLOYMENT]);
    let config = kubectl_json(&["get", "configmap", "web-config", "-n", &ns]);
    let deployment = kubectl_json(&["get", "deployment", "web", "-n", &ns]);

    // Without --adopt the namespace Flux made is refused, and nothing changes.
    let (out, _) = apply_json(repo.path(), &["--tenant", &tenant], 3);
    assert!(
        tenant_report(&out, &tenant)["errors"]
            .to_string()
            .contains("fief apply --adopt"),
        "{out}"
    );

    // diff --adopt: the objects are taken with no change; the namespace gains the baseline's
    // Pod Security labels, and fief's baseline objects are new.
    let diff = fief("diff", repo.path(), &["--tenant", &tenant, "--adopt"]);
    let (stdout, stderr) = (text(&diff.stdout), text(&diff.stderr));
    assert!(
        !stdout.contains("web-config") && !stdout.contains("Deployment.apps/"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("# Namespace/{ns} exists (made by kustomize-controller) and differs from the render: --adopt takes it"))
            && stdout.contains("+    pod-security.kubernetes.io/enforce: baseline")
            && !stdout.contains("+    fief.dev/environment"),
        "{stdout}"
    );
    assert!(
        stderr.contains("`fief apply --adopt` takes 2 existing objects with no change")
            && stderr.contains(&format!(
                "{tenant}: ConfigMap/{ns}/web-config (from kustomize-controller)"
            )),
        "{stderr}\n{stdout}"
    );

    // apply --adopt: taken, not recreated, the Pod template untouched.
    let (out, stderr) = apply_json(repo.path(), &["--tenant", &tenant, "--adopt"], 0);
    let report = tenant_report(&out, &tenant);
    assert_eq!(report["outcome"], "applied", "{out}\n{stderr}");
    let adopted = report["adopted"].to_string();
    for id in [
        format!("Namespace/{ns}"),
        format!("ConfigMap/{ns}/web-config"),
        format!("Deployment.apps/{ns}/web"),
    ] {
        assert!(adopted.contains(&id), "{id} in {adopted}");
    }
    let config_after = with_managers("configmap", "web-config", &ns);
    let deployment_after = with_managers("deployment", "web", &ns);
    assert_eq!(config_after["metadata"]["uid"], config["metadata"]["uid"]);
    assert_eq!(
        deployment_after["metadata"]["uid"],
        deployment["metadata"]["uid"]
    );
    assert_eq!(
        deployment_after["metadata"]["generation"], deployment["metadata"]["generation"],
        "a new generation would roll the Pods"
    );
    assert_eq!(
        deployment_after["metadata"]["labels"]["fief.dev/tenant"],
        tenant.as_str()
    );
    for live in [&config_after, &deployment_after] {
        let m = managers(live);
        assert!(m.contains(&"fief".to_string()), "{m:?}");
        assert!(!m.contains(&"kustomize-controller".to_string()), "{m:?}");
    }

    fief_alone_owns_what_it_took(&repo, &tenant, &ns);
}

/// After adoption: a key removed from git is removed from the object (no other manager keeps
/// it), and a re-run with --adopt takes or changes nothing more.
fn fief_alone_owns_what_it_took(repo: &TestRepo, tenant: &str, ns: &str) {
    repo.write(
        "components/web/templates/config.yaml",
        &WEB_CONFIG.replace("  b: \"2\"\n", ""),
    );
    apply_json(repo.path(), &["--tenant", tenant], 0);
    let data = kubectl_json(&["get", "configmap", "web-config", "-n", ns])["data"].clone();
    assert_eq!(data, serde_json::json!({"a": "1"}));

    // On a re-run the objects are this tenant's: nothing more is adopted or changed.
    let (out, _) = apply_json(repo.path(), &["--tenant", tenant, "--adopt"], 0);
    let report = tenant_report(&out, tenant);
    assert!(report.get("adopted").is_none(), "{report}");
    assert_eq!(report["counts"]["created"], 0, "{report}");
    assert_eq!(report["counts"]["configured"], 0, "{report}");
}

#[test]
fn adopt_leaves_a_tenant_whose_live_objects_differ_and_force_takes_them_as_rendered() {
    let tenant = common::unique("argo");
    let ns = format!("{tenant}-prod");
    let repo = web_repo(&tenant);
    let drifted = WEB_CONFIG.replace("a: \"1\"", "a: edited");
    flux_made(&ns, &[&drifted, WEB_DEPLOYMENT]);
    let uid =
        kubectl_json(&["get", "configmap", "web-config", "-n", &ns])["metadata"]["uid"].clone();

    // diff --adopt shows the difference and what each mode does.
    let diff = fief("diff", repo.path(), &["--tenant", &tenant, "--adopt"]);
    assert_eq!(diff.status.code(), Some(1));
    let stdout = text(&diff.stdout);
    assert!(
        stdout.contains("differs from the render: --adopt does not take it")
            && stdout.contains("-  a: edited")
            && stdout.contains("+  a: \"1\""),
        "{stdout}"
    );

    // apply --adopt: the tenant is not applied at all; the live objects are untouched.
    let (out, _) = apply_json(repo.path(), &["--tenant", &tenant, "--adopt"], 3);
    let report = tenant_report(&out, &tenant);
    assert_eq!(report["outcome"], "failed", "{out}");
    let errors = report["errors"].to_string();
    assert!(
        errors.contains("1 object(s) exist and differ from the render")
            && errors.contains(&format!("ConfigMap/{ns}/web-config"))
            && errors.contains("--adopt=force"),
        "{errors}"
    );
    let live = kubectl_json(&["get", "configmap", "web-config", "-n", &ns]);
    assert_eq!(live["data"]["a"], "edited");
    assert!(
        live["metadata"]["labels"]["fief.dev/tenant"].is_null(),
        "{live}"
    );
    let namespace = kubectl_json(&["get", "namespace", &ns]);
    assert!(
        namespace["metadata"]["labels"]["fief.dev/tenant"].is_null(),
        "{namespace}"
    );
    assert_eq!(count("rolebindings", &ns), 0);

    // --adopt=force takes it, in place, as rendered.
    let (out, _) = apply_json(repo.path(), &["--tenant", &tenant, "--adopt=force"], 0);
    assert_eq!(tenant_report(&out, &tenant)["outcome"], "applied", "{out}");
    let live = with_managers("configmap", "web-config", &ns);
    assert_eq!(live["data"]["a"], "1");
    assert_eq!(live["metadata"]["uid"], uid);
    assert!(
        !managers(&live).contains(&"kustomize-controller".to_string()),
        "{live}"
    );
}
