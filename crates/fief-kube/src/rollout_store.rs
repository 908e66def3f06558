//! The rollout record in the cluster: the ConfigMap `fief-rollout` in the agent namespace.
//!
//! In: a [`Record`] (written by the agent on every change of its rollout). Out: the record
//! read back by `fief status` and by an agent that starts while a rollout is under way.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch};

use super::ClusterError;
use fief_core::rollout::Record;

/// Name of the ConfigMap holding the rollout record.
pub const NAME: &str = "fief-rollout";
/// Its data key.
const KEY: &str = "rollout.json";

/// Write `record` (server-side apply, field manager `fief-rollout`).
pub async fn write_record(
    client: &kube::Client,
    namespace: &str,
    record: &Record,
) -> Result<(), ClusterError> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let text = serde_json::to_string(record).unwrap_or_default();
    let cm = serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": NAME,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": "fief"},
        },
        "data": {KEY: text},
    });
    api.patch(
        NAME,
        &super::forced_apply("fief-rollout"),
        &Patch::Apply(&cm),
    )
    .await
    .map_err(|e| ClusterError::request(format!("write ConfigMap/{namespace}/{NAME}"), e))?;
    Ok(())
}

/// The record, if there is one (`Ok(None)`: none, or not readable as a record).
pub async fn read_record(
    client: &kube::Client,
    namespace: &str,
) -> Result<Option<Record>, ClusterError> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let cm = api
        .get_opt(NAME)
        .await
        .map_err(|e| ClusterError::request(format!("read ConfigMap/{namespace}/{NAME}"), e))?;
    Ok(cm
        .and_then(|cm| cm.data)
        .and_then(|d| d.get(KEY).cloned())
        .and_then(|text| serde_json::from_str(&text).ok()))
}
