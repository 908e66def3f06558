//! `fief apply` / `fief diff` against the real test control plane: apply, steady state,
//! drift, prune and its guards, orphaned and purged tenants.
//!
//! Every test uses its own tenants and its own agent namespace (fief.yaml `agentNamespace`),
//! so tests share one control plane without seeing each other's inventories.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::cluster_cli::{exists, fief_with, kubectl, kubectl_json, tenant_report, wait_gone};
use common::util::text;
use serde_json::Value;

mod noop_reads;
mod prune;

fn fief_bin() -> &'static str {
    env!("CARGO_BIN_EXE_fief")
}

struct TestRepo {
    dir: tempfile::TempDir,
    agent_ns: String,
}

const APP_CONFIG: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  greeting: {{ values.greeting | quote }}\n";
const APP_EXTRA: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-extra\n  labels: {tier: extra}\ndata:\n  k: v\n";
const APP_SERVICE: &str = "apiVersion: v1\nkind: Service\nmetadata:\n  name: app\nspec:\n  selector: {app: app}\n  ports: [{port: 80, targetPort: 8080}]\n";
const KEEP_PVC: &str = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\n  annotations: {fief.dev/prune: disabled}\nspec:\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n";

impl TestRepo {
    /// A repo with component `app` (two ConfigMaps, a Service) and component `store` (a PVC
    /// with pruning disabled), and the given extra fief.yaml lines.
    fn new(fief_yaml: &str) -> TestRepo {
        let repo = TestRepo {
            dir: tempfile::tempdir().unwrap(),
            agent_ns: common::unique("fief-sys"),
        };
        repo.write(
            "fief.yaml",
            &format!("agentNamespace: {}\n{fief_yaml}", repo.agent_ns),
        );
        repo.write("components/app/varz.yaml", "greeting: hello\n");
        repo.write("components/app/templates/config.yaml", APP_CONFIG);
        repo.write("components/app/templates/extra.yaml", APP_EXTRA);
        repo.write("components/app/templates/service.yaml", APP_SERVICE);
        repo.write("components/store/templates/pvc.yaml", KEEP_PVC);
        repo
    }

    fn write(&self, path: &str, body: &str) {
        let p = self.dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }

    fn remove(&self, path: &str) {
        std::fs::remove_file(self.dir.path().join(path)).unwrap();
    }

    fn tenant(&self, name: &str, spec: &str) {
        self.write(
            &format!("tenants/{name}.yaml"),
            &format!("apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n{spec}"),
        );
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

const BOTH: &str = "  components:\n    - name: app\n    - name: store\n";

/// Run `fief <cmd> <repo> --kubeconfig admin [args]` (with the example repo's test-only age
/// key as $SOPS_AGE_KEY_FILE, which only repos with SOPS secrets read).
/// `fief <cmd> <repo>` as cluster admin, with the example's test-only age key.
fn fief(cmd: &str, repo: &Path, args: &[&str]) -> Output {
    let key = example_age_key();
    let key = key.to_str().expect("utf-8 path");
    fief_with(
        cmd,
        repo,
        common::control_plane().admin_kubeconfig(),
        args,
        &[("SOPS_AGE_KEY_FILE", key)],
    )
}

/// `fief apply --output json`, asserting the exit code; returns the summary.
fn apply_json(repo: &Path, args: &[&str], code: i32) -> Value {
    let mut all = vec!["--output", "json"];
    all.extend_from_slice(args);
    let out = fief("apply", repo, &all);
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        text(&out.stdout),
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json summary")
}

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tenants-repo")
}

fn example_age_key() -> PathBuf {
    example().join("age-key.TEST-ONLY.txt")
}

/// The kinds of the example repo's objects, for `kubectl get`.
const EXAMPLE_KINDS: &str = "namespaces,roles,rolebindings,resourcequotas,limitranges,networkpolicies,serviceaccounts,configmaps,secrets,services,deployments,statefulsets,persistentvolumeclaims,ingresses,cronjobs";

#[test]
fn example_repo_applies_every_object_labelled_and_a_second_apply_sends_no_mutating_request() {
    // The example repo's tenants (acme, globex, ...) are used by this test only.
    let first = apply_json(&example(), &[], 0);
    assert!(
        first["requests"]["patch"].as_u64().unwrap() >= 167,
        "{first}"
    );

    every_rendered_object_exists_with_fiefs_labels();
    // Second apply: nothing to do, and not one mutating request.
    let second = apply_json(&example(), &[], 0);
    assert_eq!(second["requests"]["post"], 0, "{second}");
    assert_eq!(second["requests"]["put"], 0, "{second}");
    assert_eq!(second["requests"]["patch"], 0, "{second}");
    assert_eq!(second["requests"]["delete"], 0, "{second}");
    assert_eq!(tenant_report(&second, "acme")["counts"]["unchanged"], 54);

    kubectl_sees_one_applyset_parent_per_tenant_and_its_members();
    rendered_secrets_pass_the_api_servers_validation();
    // And diff shows nothing.
    let diff = fief("diff", &example(), &[]);
    assert_eq!(
        diff.status.code(),
        Some(0),
        "{}{}",
        text(&diff.stdout),
        text(&diff.stderr)
    );
}

/// Every object the example repo renders exists in the cluster, with fief's labels.
fn every_rendered_object_exists_with_fiefs_labels() {
    // Every rendered object exists, with fief's labels.
    let mut repo = fief::core::model::Repo::load(std::sync::Arc::new(
        fief::source::fs::read_dir(&example()).unwrap(),
    ));
    let keys =
        fief::core::secrets::Keys::parse(&std::fs::read_to_string(example_age_key()).unwrap())
            .unwrap();
    repo.secrets
        .set_unlock(fief::core::secrets::Unlock::Keys(std::sync::Arc::new(keys)));
    let renders = fief::core::pipeline::render_all(&repo, &[]);
    let live = kubectl_json(&[
        "get",
        EXAMPLE_KINDS,
        "-A",
        "-l",
        "app.kubernetes.io/managed-by=fief,fief.dev/component,fief.dev/tenant in (acme,globex,hooli,initech,piedpiper)",
    ]);
    let live_ids: BTreeSet<(String, String, String)> = live["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let labels = &o["metadata"]["labels"];
            assert!(labels["fief.dev/tenant"].is_string(), "{o}");
            assert!(labels["fief.dev/component"].is_string(), "{o}");
            assert!(
                labels["applyset.kubernetes.io/part-of"]
                    .as_str()
                    .unwrap()
                    .starts_with("applyset-")
            );
            (
                o["kind"].as_str().unwrap().to_string(),
                o["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                o["metadata"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut count = 0;
    for r in &renders {
        for o in &r.objects {
            count += 1;
            let id = (o.id.kind.clone(), o.id.namespace.clone(), o.id.name.clone());
            assert!(live_ids.contains(&id), "{:?} was not applied", o.id);
        }
    }
    assert_eq!(count, 167);
}

/// kubectl sees one ApplySet parent per tenant, and every member through part-of; the
/// parent records the tenant Ready.
fn kubectl_sees_one_applyset_parent_per_tenant_and_its_members() {
    // kubectl sees one ApplySet parent per tenant, and every member through part-of.
    let parents = kubectl_json(&[
        "get",
        "configmap",
        "-n",
        "fief-system",
        "-l",
        "applyset.kubernetes.io/id",
    ]);
    let names: BTreeSet<&str> = parents["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap())
        .collect();
    for t in ["acme", "globex", "hooli", "initech", "piedpiper"] {
        assert!(
            names.contains(format!("fief-tenant-{t}").as_str()),
            "{names:?}"
        );
    }
    let acme_id = fief::core::objects::tenant_applyset_id("acme", "fief-system");
    let members = kubectl_json(&[
        "get",
        EXAMPLE_KINDS,
        "-A",
        "-l",
        &format!("applyset.kubernetes.io/part-of={acme_id}"),
    ]);
    assert_eq!(members["items"].as_array().unwrap().len(), 54);
    let acme = parents["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["metadata"]["name"] == "fief-tenant-acme")
        .unwrap();
    assert_eq!(
        acme["metadata"]["labels"]["applyset.kubernetes.io/id"],
        acme_id.as_str()
    );
    assert!(
        acme["metadata"]["annotations"]["applyset.kubernetes.io/contains-group-kinds"]
            .as_str()
            .unwrap()
            .contains("Deployment.apps")
    );
    let status: Value = serde_json::from_str(acme["data"]["status"].as_str().unwrap()).unwrap();
    let ready = status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap();
    assert_eq!(ready["status"], "True", "{status}");
}

/// `fief render --show-secrets` output passes the API server's own validation (server-side
/// dry-run); without --show-secrets its Secrets are invalid on purpose (tests/cluster/secrets.rs).
fn rendered_secrets_pass_the_api_servers_validation() {
    // `fief render --show-secrets` output passes the API server's own validation (server-side
    // dry-run); without --show-secrets its Secrets are invalid on purpose (tests/cluster/secrets.rs).
    let rendered = Command::new(fief_bin())
        .arg("render")
        .arg(example())
        .arg("--show-secrets")
        .arg("--age-key-file")
        .arg(example_age_key())
        .output()
        .unwrap();
    assert!(rendered.status.success());
    let dry = common::kubectl::Kubectl::admin()
        .stdin(&text(&rendered.stdout))
        .output(&["apply", "--dry-run=server", "-f", "-"]);
    assert!(
        dry.status.success(),
        "kubectl apply --dry-run=server: {}",
        text(&dry.stderr)
    );
}

#[test]
fn changes_apply_only_what_changed_and_prune_what_left_git() {
    let repo = TestRepo::new("");
    let t = common::unique("chg");
    let ns = format!("{t}-prod");
    repo.tenant(&t, BOTH);
    let first = apply_json(repo.path(), &["--tenant", &t], 0);
    assert_eq!(tenant_report(&first, &t)["counts"]["failed"], 0, "{first}");
    assert!(exists("configmap", &ns, "app-extra"));

    // A changed value: exactly one object is applied.
    repo.write("components/app/varz.yaml", "greeting: bonjour\n");
    let changed = apply_json(repo.path(), &["--tenant", &t], 0);
    let r = tenant_report(&changed, &t);
    assert_eq!(r["counts"]["configured"], 1, "{changed}");
    assert_eq!(r["counts"]["created"], 0, "{changed}");
    assert_eq!(
        changed["requests"]["patch"], 2,
        "one object and the inventory once (no object added: no union write): {changed}"
    );
    let cm = kubectl_json(&["get", "configmap", "-n", &ns, "app-config"]);
    assert_eq!(cm["data"]["greeting"], "bonjour");

    // An object removed from git is pruned.
    repo.remove("components/app/templates/extra.yaml");
    let pruned = apply_json(repo.path(), &["--tenant", &t], 0);
    assert_eq!(
        tenant_report(&pruned, &t)["counts"]["pruned"],
        1,
        "{pruned}"
    );
    assert!(!exists("configmap", &ns, "app-extra"));

    // A component removed: its objects are pruned, but `fief.dev/prune: disabled` survives.
    repo.tenant(&t, "  components:\n    - name: app\n");
    let removed = apply_json(repo.path(), &["--tenant", &t], 0);
    let r = tenant_report(&removed, &t);
    assert_eq!(r["counts"]["pruned"], 0, "{removed}");
    assert!(
        r["kept"][0].as_str().unwrap().contains("prune: disabled"),
        "{removed}"
    );
    assert!(exists("persistentvolumeclaim", &ns, "data"));
    repo.tenant(&t, "  components: []\n");
    let gone = apply_json(repo.path(), &["--tenant", &t], 0);
    assert_eq!(tenant_report(&gone, &t)["counts"]["pruned"], 2, "{gone}");
    assert!(!exists("service", &ns, "app"));
    assert!(!exists("configmap", &ns, "app-config"));
    assert!(exists("persistentvolumeclaim", &ns, "data"));
}

#[test]
fn hand_edit_of_a_managed_field_is_restored_by_the_next_apply_and_shown_by_diff() {
    let repo = TestRepo::new("");
    let t = common::unique("drift");
    let ns = format!("{t}-prod");
    repo.tenant(&t, BOTH);
    apply_json(repo.path(), &["--tenant", &t], 0);
    let clean = fief("diff", repo.path(), &["--tenant", &t]);
    assert_eq!(clean.status.code(), Some(0), "{}", text(&clean.stdout));
    assert!(text(&clean.stdout).is_empty());

    let out = kubectl(&[
        "-n",
        &ns,
        "patch",
        "configmap",
        "app-config",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"greeting":"hacked"}}"#,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let diff = fief("diff", repo.path(), &["--tenant", &t]);
    let shown = text(&diff.stdout);
    assert_eq!(diff.status.code(), Some(1), "{shown}");
    assert!(shown.contains("-  greeting: hacked"), "{shown}");
    assert!(shown.contains("+  greeting: hello"), "{shown}");
    assert_eq!(
        shown.matches("# tenant").count(),
        1,
        "only one object differs: {shown}"
    );

    let fixed = apply_json(repo.path(), &["--tenant", &t], 0);
    assert_eq!(
        tenant_report(&fixed, &t)["counts"]["configured"],
        1,
        "{fixed}"
    );
    let cm = kubectl_json(&["get", "configmap", "-n", &ns, "app-config"]);
    assert_eq!(cm["data"]["greeting"], "hello");
}

/// The entries of a tenant's inventory ConfigMap.
fn inventory_entries(agent_ns: &str, tenant: &str) -> Vec<Value> {
    let cm = kubectl_json(&[
        "get",
        "configmap",
        "-n",
        agent_ns,
        &format!("fief-tenant-{tenant}"),
    ]);
    serde_json::from_str(cm["data"]["entries"].as_str().expect("entries")).expect("entries JSON")
}

/// Rewrite the inventory entry of ConfigMap `name` (as a hand edit of the inventory would).
fn edit_inventory_entry(agent_ns: &str, tenant: &str, name: &str, edit: impl Fn(&mut Value)) {
    edit_entry_of(agent_ns, tenant, "ConfigMap", name, edit);
}

/// Rewrite the inventory entry of the `kind` object `name`.
fn edit_entry_of(agent_ns: &str, tenant: &str, kind: &str, name: &str, edit: impl Fn(&mut Value)) {
    let mut entries = inventory_entries(agent_ns, tenant);
    let entry = entries
        .iter_mut()
        .find(|e| e["kind"] == kind && e["name"] == name)
        .expect("entry recorded");
    edit(entry);
    let patch = serde_json::json!({"data": {"entries": serde_json::to_string(&entries).unwrap()}});
    let out = kubectl(&[
        "-n",
        agent_ns,
        "patch",
        "configmap",
        &format!("fief-tenant-{tenant}"),
        "--type",
        "merge",
        "-p",
        &patch.to_string(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}
