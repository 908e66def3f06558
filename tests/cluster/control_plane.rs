//! The test control plane itself: pinned version, admin and non-admin
//! credentials, server-side apply, and the controller-manager's namespace
//! controller finishing namespace deletion.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::ObjectMeta;

/// The pinned Kubernetes release (tools/controlplane/go.mod).
const KUBERNETES_VERSION: &str = "v1.36.3";

fn api_code(err: &kube::Error) -> Option<u16> {
    match err {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

fn config_map(name: &str, namespace: &str, data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            ..Default::default()
        },
        data: Some(
            data.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        ),
        ..Default::default()
    }
}

#[tokio::test]
async fn apiserver_reports_the_pinned_version() {
    let cp = common::control_plane();
    let info = cp
        .admin_client()
        .await
        .apiserver_version()
        .await
        .expect("GET /version");
    assert_eq!(info.git_version, KUBERNETES_VERSION);
    assert_eq!(info.major, "1");
    assert_eq!(info.minor, "36");
    assert_eq!(info.git_tree_state, "clean");
}

#[tokio::test]
async fn apply_read_forbid_and_delete_namespace() {
    let cp = common::control_plane();
    let admin = cp.admin_client().await;
    let alice = cp.client_for("alice").await;
    let ns = common::unique("cp-test");

    let namespaces: Api<Namespace> = Api::all(admin.clone());
    namespaces
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: ObjectMeta {
                    name: Some(ns.clone()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .expect("create namespace as admin");

    // Server-side apply as the admin, with fief's field manager.
    let config_maps: Api<ConfigMap> = Api::namespaced(admin.clone(), &ns);
    let apply = PatchParams::apply("fief").force();
    let desired = config_map("settings", &ns, &[("colour", "blue"), ("size", "3")]);
    let applied = config_maps
        .patch("settings", &apply, &Patch::Apply(&desired))
        .await
        .expect("server-side apply as admin");
    let managers: Vec<_> = applied
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.manager.as_deref())
        .collect();
    assert!(managers.contains(&"fief"), "field managers: {managers:?}");

    let read = config_maps.get("settings").await.expect("read back");
    let expected: BTreeMap<String, String> = [("colour", "blue"), ("size", "3")]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    assert_eq!(read.data, Some(expected));

    // alice is authenticated but has no RBAC: every request is 403.
    let alice_config_maps: Api<ConfigMap> = Api::namespaced(alice.clone(), &ns);
    let err = alice_config_maps
        .get("settings")
        .await
        .expect_err("alice must not read the ConfigMap");
    assert_eq!(api_code(&err), Some(403), "{err:?}");
    let err = alice_config_maps
        .patch(
            "settings",
            &apply,
            &Patch::Apply(&config_map("settings", &ns, &[("colour", "red")])),
        )
        .await
        .expect_err("alice must not apply the ConfigMap");
    assert_eq!(api_code(&err), Some(403), "{err:?}");
    let err = Api::<Namespace>::all(alice)
        .delete(&ns, &DeleteParams::default())
        .await
        .expect_err("alice must not delete the namespace");
    assert_eq!(api_code(&err), Some(403), "{err:?}");

    // Deleting a namespace that still holds objects completes only if the
    // controller-manager's namespace controller empties and finalizes it.
    namespaces
        .delete(&ns, &DeleteParams::default())
        .await
        .expect("delete namespace as admin");
    common::eventually(
        &format!("namespace {ns} to be gone"),
        Duration::from_secs(60),
        || async {
            match namespaces.get(&ns).await {
                Err(e) if api_code(&e) == Some(404) => Ok(()),
                Err(e) => Err(format!("{e}")),
                Ok(n) => Err(format!(
                    "still there, phase {:?}",
                    n.status.and_then(|s| s.phase)
                )),
            }
        },
    )
    .await;
}

#[tokio::test]
async fn users_authenticate_with_their_names_and_group() {
    let cp = common::control_plane();
    for user in common::DEFAULT_USERS {
        let review = Api::<SelfSubjectReview>::all(cp.client_for(user).await)
            .create(&PostParams::default(), &SelfSubjectReview::default())
            .await
            .unwrap_or_else(|e| panic!("SelfSubjectReview as {user}: {e}"));
        let info = review
            .status
            .and_then(|s| s.user_info)
            .expect("user info in SelfSubjectReview");
        assert_eq!(info.username.as_deref(), Some(user));
        let groups = info.groups.unwrap_or_default();
        assert!(
            groups.iter().any(|g| g == "fief:users"),
            "{user}'s groups: {groups:?}"
        );
        assert!(
            !groups.iter().any(|g| g == "system:masters"),
            "{user}'s groups: {groups:?}"
        );
    }
}

#[test]
fn kubectl_gets_the_default_namespace() {
    let cp = common::control_plane();
    let out = cp
        .kubectl_admin()
        .args(["get", "namespace", "default", "-o", "name"])
        .output()
        .expect("run kubectl");
    assert!(
        out.status.success(),
        "kubectl failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "namespace/default"
    );

    let out = cp
        .kubectl_admin()
        .args(["version", "--client", "-o", "json"])
        .output()
        .expect("run kubectl version");
    assert!(out.status.success());
    let version: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        version["clientVersion"]["gitVersion"], KUBERNETES_VERSION,
        "{version}"
    );

    // A non-admin user is refused by kubectl too.
    let out = cp
        .kubectl_as("bob")
        .args(["get", "namespace", "default"])
        .output()
        .expect("run kubectl as bob");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("forbidden"), "{stderr}");
}
