//! Objects: identity, scope of built-in kinds, the labels fief adds, ApplySet ids, hashes.
//!
//! In: rendered objects as `serde_json::Value`. Out: [`ObjectId`]s, labelled objects,
//! content hashes. Pure.

use std::fmt;

use base64::Engine;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// `app.kubernetes.io/managed-by`.
pub const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// `fief.dev/tenant`.
pub const LABEL_TENANT: &str = "fief.dev/tenant";
/// `fief.dev/component`.
pub const LABEL_COMPONENT: &str = "fief.dev/component";
/// KEP-3659 member label.
pub const LABEL_PART_OF: &str = "applyset.kubernetes.io/part-of";
/// Per-object opt-out of pruning (`disabled`).
pub const ANNOTATION_PRUNE: &str = "fief.dev/prune";

/// Identity of an object: group, kind, namespace, name.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct ObjectId {
    /// API group, empty for the core group.
    pub group: String,
    /// Kind.
    pub kind: String,
    /// Namespace, empty for cluster-scoped objects.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let group = if self.group.is_empty() {
            String::new()
        } else {
            format!(".{}", self.group)
        };
        if self.namespace.is_empty() {
            write!(f, "{}{}/{}", self.kind, group, self.name)
        } else {
            write!(f, "{}{}/{}/{}", self.kind, group, self.namespace, self.name)
        }
    }
}

/// The group of an `apiVersion` (`apps/v1` → `apps`, `v1` → ``).
pub fn group_of(api_version: &str) -> &str {
    match api_version.split_once('/') {
        Some((group, _)) => group,
        None => "",
    }
}

/// Scope of a kind, as far as fief knows it without a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Lives in a namespace.
    Namespaced,
    /// Cluster-wide.
    Cluster,
}

/// Cluster-scoped built-in kinds, by (group, kind).
const CLUSTER_SCOPED: &[(&str, &str)] = &[
    ("", "Namespace"),
    ("", "Node"),
    ("", "PersistentVolume"),
    ("", "ComponentStatus"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("apiregistration.k8s.io", "APIService"),
    (
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
    ),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "MutatingAdmissionPolicyBinding",
    ),
    ("storage.k8s.io", "StorageClass"),
    ("storage.k8s.io", "CSIDriver"),
    ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "VolumeAttachment"),
    ("storage.k8s.io", "VolumeAttributesClass"),
    ("scheduling.k8s.io", "PriorityClass"),
    ("node.k8s.io", "RuntimeClass"),
    ("networking.k8s.io", "IngressClass"),
    ("networking.k8s.io", "IPAddress"),
    ("networking.k8s.io", "ServiceCIDR"),
    ("certificates.k8s.io", "CertificateSigningRequest"),
    ("certificates.k8s.io", "ClusterTrustBundle"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ("resource.k8s.io", "DeviceClass"),
    ("resource.k8s.io", "ResourceSlice"),
];

/// The scope of a kind. Kinds fief does not know (custom resources) count as namespaced at
/// render time; at apply time discovery decides.
pub fn scope_of(group: &str, kind: &str) -> Scope {
    if CLUSTER_SCOPED
        .iter()
        .any(|(g, k)| *g == group && *k == kind)
    {
        Scope::Cluster
    } else {
        Scope::Namespaced
    }
}

/// KEP-3659 ApplySet id of a parent: `applyset-<base64url(sha256(name.ns.kind.group))>-v1`.
pub fn applyset_id(name: &str, namespace: &str, kind: &str, group: &str) -> String {
    let digest = Sha256::digest(format!("{name}.{namespace}.{kind}.{group}").as_bytes());
    format!(
        "applyset-{}-v1",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest)
    )
}

/// Name of a tenant's ApplySet parent ConfigMap (in the agent namespace).
pub fn inventory_name(tenant: &str) -> String {
    format!("fief-tenant-{tenant}")
}

/// The ApplySet id of a tenant's inventory.
pub fn tenant_applyset_id(tenant: &str, agent_namespace: &str) -> String {
    applyset_id(&inventory_name(tenant), agent_namespace, "ConfigMap", "")
}

/// Lower-case hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    crate::digest::Digest::of(bytes).to_hex()
}

/// Whether `name` is a DNS-1123 label (lowercase alphanumerics and `-`, ≤ 63).
pub fn is_dns_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

/// Hash of an object's rendered content (keys are sorted, so it is canonical).
pub fn content_hash(object: &Value) -> String {
    sha256_hex(&serde_json::to_vec(object).unwrap_or_default())
}

/// Set fief's labels on an object, creating `metadata.labels` when needed.
pub fn add_labels(object: &mut Value, tenant: &str, component: &str, applyset: &str) {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let labels = metadata
        .entry("labels")
        .or_insert_with(|| Value::Object(Map::new()));
    if !labels.is_object() {
        *labels = Value::Object(Map::new());
    }
    if let Some(labels) = labels.as_object_mut() {
        for (k, v) in [
            (LABEL_MANAGED_BY, "fief"),
            (LABEL_TENANT, tenant),
            (LABEL_COMPONENT, component),
            (LABEL_PART_OF, applyset),
        ] {
            labels.insert(k.to_string(), Value::String(v.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn applyset_id_matches_kep_3659_format() {
        // kubectl's own example: parent Secret "my-set" in "default" (group "").
        let id = applyset_id("my-set", "default", "Secret", "");
        assert!(id.starts_with("applyset-") && id.ends_with("-v1"));
        assert_eq!(id.len(), "applyset-".len() + 43 + "-v1".len());
        assert!(!id.contains('='));
    }

    #[test]
    fn scope_knows_cluster_kinds_and_defaults_to_namespaced() {
        assert_eq!(scope_of("", "Namespace"), Scope::Cluster);
        assert_eq!(
            scope_of("rbac.authorization.k8s.io", "ClusterRole"),
            Scope::Cluster
        );
        assert_eq!(scope_of("apps", "Deployment"), Scope::Namespaced);
        assert_eq!(scope_of("example.com", "Widget"), Scope::Namespaced);
    }

    #[test]
    fn labels_are_added_and_overwrite_user_values() {
        let mut o =
            json!({"metadata": {"name": "x", "labels": {"fief.dev/tenant": "evil", "app": "web"}}});
        add_labels(&mut o, "acme", "web", "applyset-x-v1");
        let labels = &o["metadata"]["labels"];
        assert_eq!(labels["fief.dev/tenant"], "acme");
        assert_eq!(labels["app"], "web");
        assert_eq!(labels["applyset.kubernetes.io/part-of"], "applyset-x-v1");
    }

    #[test]
    fn object_id_display_is_readable() {
        let id = ObjectId {
            group: "apps".into(),
            kind: "Deployment".into(),
            namespace: "acme-prod".into(),
            name: "web".into(),
        };
        assert_eq!(id.to_string(), "Deployment.apps/acme-prod/web");
    }
}
