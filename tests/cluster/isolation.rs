//! Tenant isolation on the real API server: render-time checks, impersonated apply, the
//! baseline roles, quota, and the agent's own ClusterRole from `deploy/`.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use fief::core::objects::ObjectId;
use fief::core::render::{RenderedObject, Source};
use fief::core::status::{Failure, Outcome};
use fief::kube::Resources;
use fief::kube::sync::{SyncOptions, sync};
use serde_json::json;

use common::kubectl::Kubectl;

mod agent_rights;
mod roles;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn write(root: &Path, path: &str, body: &str) {
    let p = root.join(path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, body).unwrap();
}

fn tenant_file(name: &str, spec: &str) -> String {
    format!("apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n{spec}")
}

/// A repo with component `app` (a ConfigMap and a Secret) in its own agent namespace.
fn repo(agent_ns: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "fief.yaml",
        &format!("agentNamespace: {agent_ns}\n"),
    );
    write(
        dir.path(),
        "components/app/templates/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  owner: {{ tenant.name }}\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: app-secret\nstringData:\n  token: t0ken\n",
    );
    dir
}

fn fief_as(kubeconfig: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .output()
        .unwrap()
}

fn apply_admin(repo: &Path, tenants: &[&str]) {
    let mut args = vec!["apply", repo.to_str().unwrap()];
    for t in tenants {
        args.extend(["--tenant", t]);
    }
    let out = fief_as(common::control_plane().admin_kubeconfig(), &args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// Run kubectl as `user` (or the admin); Ok(stdout) or Err(stderr).
fn kubectl(user: Option<&str>, args: &[&str]) -> Result<String, String> {
    match user {
        Some(u) => Kubectl::user(u),
        None => Kubectl::admin(),
    }
    .run(args)
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn allowed(user: &str, args: &[&str]) {
    if let Err(e) = kubectl(Some(user), args) {
        panic!("{user} should be allowed to {args:?}: {e}");
    }
}

fn forbidden(user: &str, args: &[&str]) {
    match kubectl(Some(user), args) {
        Ok(out) => panic!("{user} must not be allowed to {args:?}, but got: {out}"),
        Err(e) => assert!(
            e.contains("Forbidden") || e.contains("forbidden"),
            "{user} {args:?}: {e}"
        ),
    }
}

#[test]
fn cross_tenant_and_cluster_scoped_component_objects_are_refused_by_validate() {
    let dir = repo("unused");
    let a = common::unique("ta");
    let b = common::unique("tb");
    write(
        dir.path(),
        &format!("tenants/{a}.yaml"),
        &tenant_file(&a, "  components:\n    - name: app\n    - name: sneaky\n"),
    );
    write(
        dir.path(),
        &format!("tenants/{b}.yaml"),
        &tenant_file(&b, "  components:\n    - name: app\n"),
    );
    write(
        dir.path(),
        "components/sneaky/templates/x.yaml",
        &format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stolen\n  namespace: {b}-prod\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {a}-god\nrules: []\n"
        ),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(["validate", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("components/sneaky/templates/x.yaml:1"),
        "{err}"
    );
    assert!(
        err.contains(&format!("targets namespace `{b}-prod`")),
        "{err}"
    );
    assert!(
        err.contains("components/sneaky/templates/x.yaml:7"),
        "{err}"
    );
    assert!(err.contains("ClusterRole"), "{err}");
    assert!(text(&out.stdout).contains(&format!("{b}: ok")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_render_check_bypassed_the_api_server_refuses_the_impersonated_apply() {
    let cp = common::control_plane();
    let agent_ns = common::unique("fief-iso");
    let dir = repo(&agent_ns);
    let a = common::unique("ia");
    let b = common::unique("ib");
    for t in [&a, &b] {
        write(
            dir.path(),
            &format!("tenants/{t}.yaml"),
            &tenant_file(t, "  components:\n    - name: app\n"),
        );
    }
    let root = dir.path().to_path_buf();
    let (a2, b2) = (a.clone(), b.clone());
    tokio::task::spawn_blocking(move || apply_admin(&root, &[&a2, &b2]))
        .await
        .unwrap();
    let before = kubectl(
        None,
        &["get", "configmap", "-n", &format!("{b}-prod"), "-o", "json"],
    )
    .unwrap();

    // Render tenant A, then smuggle objects past the render check (test-only: there is no
    // switch for this in fief), and sync it with admin credentials.
    let snapshot = fief::source::fs::read_dir(dir.path()).unwrap();
    let model = fief::core::model::Repo::load(Arc::new(snapshot));
    let mut renders = fief::core::pipeline::render_all(&model, std::slice::from_ref(&a));
    let applyset = fief::core::objects::tenant_applyset_id(&a, &agent_ns);
    let smuggler = Smuggler {
        tenant: &a,
        applyset,
    };
    renders[0]
        .objects
        .push(smuggler.object("ConfigMap", "v1", "", &format!("{b}-prod"), "stolen"));
    renders[0].objects.push(smuggler.object(
        "ConfigMap",
        "v1",
        "",
        &format!("{b}-prod"),
        "app-config",
    ));
    let client = cp.admin_client().await;
    let resources = Resources::discover(client).await.unwrap();
    let options = admin_sync_options(&agent_ns);
    let known: BTreeSet<String> = model.tenants.keys().cloned().collect();
    let reports = sync(&resources, &renders, &known, false, &options)
        .await
        .unwrap();
    let report = &reports[0];
    assert_eq!(report.outcome, Outcome::Failed, "{report:?}");
    assert_eq!(report.counts.failed, 2, "{report:?}");
    for e in &report.errors {
        assert_eq!(e.failure, Failure::Forbidden, "{e}");
        let e = e.as_str();
        assert!(e.contains("403") || e.contains("forbidden"), "{e}");
        assert!(
            e.contains(&format!("system:serviceaccount:{a}-prod:fief-tenant")),
            "{e}"
        );
    }
    // Tenant B is unchanged.
    let after = kubectl(
        None,
        &["get", "configmap", "-n", &format!("{b}-prod"), "-o", "json"],
    )
    .unwrap();
    assert_eq!(configmap_versions(&before), configmap_versions(&after));

    a_cluster_scoped_kind_never_leaves_fief(&model, &a, &smuggler, &resources, &known, &options)
        .await;
}

/// A cluster-scoped kind smuggled into tenant `a`'s render never leaves fief (discovery
/// knows its scope), and the identity it would be sent as cannot create one either.
async fn a_cluster_scoped_kind_never_leaves_fief(
    model: &fief::core::model::Repo,
    a: &str,
    smuggler: &Smuggler<'_>,
    resources: &Resources,
    known: &BTreeSet<String>,
    options: &SyncOptions,
) {
    // A cluster-scoped kind from a component never leaves fief (discovery knows its scope)...
    let mut renders = fief::core::pipeline::render_all(model, &[a.to_string()]);
    renders[0].objects.push(smuggler.object(
        "ClusterRole",
        "rbac.authorization.k8s.io/v1",
        "rbac.authorization.k8s.io",
        "",
        &format!("{a}-god"),
    ));
    let reports = sync(resources, &renders, known, false, options)
        .await
        .unwrap();
    assert!(
        reports[0].errors[0].as_str().contains("cluster-scoped"),
        "{:?}",
        reports[0]
    );
    // ...and the identity it would be sent as cannot create one either.
    let out = kubectl(
        None,
        &[
            "create",
            "clusterrole",
            &format!("{a}-god"),
            "--verb=get",
            "--resource=pods",
            &format!("--as=system:serviceaccount:{a}-prod:fief-tenant"),
        ],
    );
    assert!(out.unwrap_err().contains("forbidden"));
    assert!(kubectl(None, &["get", "clusterrole", &format!("{a}-god")]).is_err());
}

/// Objects of `tenant` made to look rendered, past the render check (test-only: there is no
/// switch for this in fief).
struct Smuggler<'a> {
    tenant: &'a str,
    applyset: String,
}

impl Smuggler<'_> {
    /// A labelled object of the tenant's `app` component: a ConfigMap with data, or a
    /// ClusterRole with no rules.
    fn object(
        &self,
        kind: &str,
        api_version: &str,
        group: &str,
        namespace: &str,
        name: &str,
    ) -> RenderedObject {
        let mut object = json!({"apiVersion": api_version, "kind": kind,
            "metadata": {"name": name}, "data": {"stolen": "yes"}, "rules": []});
        if !namespace.is_empty() {
            object["metadata"]["namespace"] = json!(namespace);
        }
        if kind == "ClusterRole" {
            object.as_object_mut().unwrap().remove("data");
        } else {
            object.as_object_mut().unwrap().remove("rules");
        }
        fief::core::objects::add_labels(&mut object, self.tenant, "app", &self.applyset);
        RenderedObject {
            hash: Default::default(),
            component: "app".into(),
            env: "prod".into(),
            id: ObjectId {
                group: group.into(),
                kind: kind.into(),
                namespace: namespace.into(),
                name: name.into(),
            },
            source: Source {
                file: "smuggled".into(),
                line: 1,
            },
            object,
        }
    }
}

/// The settings of a sync with admin credentials into `agent_ns`.
fn admin_sync_options(agent_ns: &str) -> SyncOptions {
    SyncOptions {
        agent_namespace: agent_ns.to_string(),
        concurrency: 2,
        object_concurrency: 4,
        release: fief_kube::sync::PruneRelease::None,
        guard: Default::default(),
        cluster: "default".into(),
        commit: None,
        progress: None,
        adopt: Default::default(),
    }
}

/// The (name, resourceVersion) of each ConfigMap of a `kubectl get -o json` list.
fn configmap_versions(list: &str) -> Vec<(String, String)> {
    let v: serde_json::Value = serde_json::from_str(list).unwrap();
    v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["metadata"]["name"].to_string(),
                i["metadata"]["resourceVersion"].to_string(),
            )
        })
        .collect()
}
