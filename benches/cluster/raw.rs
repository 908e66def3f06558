//! The API server's own write rate, for reference beside fief's: tiny ConfigMaps from a plain
//! parallel client, and the very objects `fief apply` writes for a repo.

use super::*;

/// A plain parallel client: server-side apply `n` ConfigMaps, 32 at a time. Objects/s.
pub async fn raw_write_rate(client: &kube::Client, n: usize, ns: &str) -> f64 {
    let nsapi: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let _ = nsapi
        .patch(
            ns,
            &PatchParams::apply("bench").force(),
            &Patch::Apply(
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            ),
        )
        .await;
    let api: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(client.clone(), ns);
    let start = Instant::now();
    futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            async move {
                let name = format!("raw-{i}");
                let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"bench": "raw"}}, "data": {"k": "v", "i": i.to_string()}});
                let _ = api.patch(&name, &PatchParams::apply("bench").force(), &Patch::Apply(cm)).await;
            }
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;
    n as f64 / start.elapsed().as_secs_f64()
}

/// The API server's SSA rate for the very objects `fief apply` writes for `repo` (its render,
/// as admin: no inventory, no impersonation, no Events; Namespaces first, then the rest, 64
/// in flight). Objects per second of those accepted, and how many were refused.
pub async fn raw_same_objects_rate(client: &kube::Client, repo: &Path) -> (f64, usize) {
    use kube::discovery::{ApiCapabilities, ApiResource, Scope, pinned_kind};
    let out = fief()
        .args([
            "render",
            repo.to_str().unwrap(),
            "-o",
            "json",
            "--show-secrets",
        ])
        .arg("--age-key-file")
        .arg(age_key())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let items = list["items"].as_array().cloned().unwrap_or_default();
    let mut kinds: BTreeMap<(String, String), (ApiResource, ApiCapabilities)> = BTreeMap::new();
    for o in &items {
        let key = (
            o["apiVersion"].as_str().unwrap_or_default().to_string(),
            o["kind"].as_str().unwrap_or_default().to_string(),
        );
        if !kinds.contains_key(&key) {
            let (group, version) = key.0.rsplit_once('/').unwrap_or(("", &key.0));
            let gvk = kube::api::GroupVersionKind::gvk(group, version, &key.1);
            kinds.insert(key.clone(), pinned_kind(client, &gvk).await.unwrap());
        }
    }
    let (namespaces, rest): (Vec<Value>, Vec<Value>) =
        items.into_iter().partition(|o| o["kind"] == "Namespace");
    let kinds = &kinds;
    let start = Instant::now();
    let mut ok = 0;
    let mut refused = 0;
    for stage in [namespaces, rest] {
        let results: Vec<bool> = futures::stream::iter(stage)
            .map(|o| async move {
                let key = (
                    o["apiVersion"].as_str().unwrap_or_default().to_string(),
                    o["kind"].as_str().unwrap_or_default().to_string(),
                );
                let (ar, caps) = &kinds[&key];
                let name = o["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let api: Api<kube::api::DynamicObject> = match caps.scope {
                    Scope::Namespaced => Api::namespaced_with(
                        client.clone(),
                        o["metadata"]["namespace"].as_str().unwrap_or_default(),
                        ar,
                    ),
                    Scope::Cluster => Api::all_with(client.clone(), ar),
                };
                api.patch(
                    &name,
                    &PatchParams::apply("bench-raw").force(),
                    &Patch::Apply(&o),
                )
                .await
                .is_ok()
            })
            .buffer_unordered(64)
            .collect()
            .await;
        ok += results.iter().filter(|r| **r).count();
        refused += results.iter().filter(|r| !**r).count();
    }
    (ok as f64 / start.elapsed().as_secs_f64(), refused)
}
