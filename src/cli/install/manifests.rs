//! The agent's manifests as `fief install` writes them: the files of `deploy/` (built into the
//! binary, so the kustomize base and `fief install` are one source) with the options applied.
//!
//! In: [`Settings`] (namespace, image, repo, branch, interval, replicas, cluster, the
//! container's resources, the optional objects asked for) and the credentials' contents. Out:
//! the objects in apply order (Namespace, Secrets, RBAC, admission policy, Deployment,
//! Service, then the optional NetworkPolicy, ServiceMonitor, PrometheusRule and dashboard
//! ConfigMap of [`super::options`]). Pure: nothing is read or sent here.
//!
//! The namespace is set everywhere the agent's own namespace is named (object namespaces, the
//! RoleBinding subjects, the admission policy's CEL, `--lease-namespace`). Outside
//! `fief-system` the cluster-scoped objects carry the namespace in their names, so two installs
//! in one cluster never share (and overwrite) one.

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::options::{Optional, Resources};

/// The namespace the files of `deploy/` name.
pub const DEFAULT_NAMESPACE: &str = "fief-system";

/// The files of `deploy/`, in the kustomization's order.
const FILES: [(&str, &str); 4] = [
    (
        "deploy/namespace.yaml",
        include_str!("../../../deploy/namespace.yaml"),
    ),
    (
        "deploy/rbac.yaml",
        include_str!("../../../deploy/rbac.yaml"),
    ),
    (
        "deploy/admission-policy.yaml",
        include_str!("../../../deploy/admission-policy.yaml"),
    ),
    (
        "deploy/agent.yaml",
        include_str!("../../../deploy/agent.yaml"),
    ),
];

/// Where the agent reads each credential (the Secret volumes of `deploy/agent.yaml`).
const GIT_TOKEN: &str = "/etc/fief/git/token";
const SSH_KEY: &str = "/etc/fief/git/ssh-key";
const KNOWN_HOSTS: &str = "/etc/fief/git/known_hosts";
const WEBHOOK_SECRET: &str = "/etc/fief/webhook/secret";
const AGE_KEY: &str = "/etc/fief/age/keys.txt";
const WEB_TOKEN: &str = "/etc/fief/web/token";

/// The credentials `fief install` puts in Secrets (contents, never printed).
#[derive(Default)]
pub struct Credentials {
    /// An https token for the tenants repo.
    pub git_token: Option<String>,
    /// An SSH private key and the known_hosts that vouch for the git host.
    pub ssh: Option<(String, String)>,
    /// The push webhook's HMAC secret (GitHub) or token (GitLab).
    pub webhook_secret: Option<String>,
    /// age identities that decrypt the repo's SOPS files.
    pub age_key: Option<String>,
    /// The token the web view asks for.
    pub web_token: Option<String>,
    /// Helm's repository config (credentials of private chart repositories).
    pub helm_repositories: Option<String>,
    /// Helm's registry config (logins of private OCI registries).
    pub helm_registry: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("git_token", &self.git_token.is_some())
            .field("ssh", &self.ssh.is_some())
            .field("webhook_secret", &self.webhook_secret.is_some())
            .field("age_key", &self.age_key.is_some())
            .field("web_token", &self.web_token.is_some())
            .field("helm_repositories", &self.helm_repositories.is_some())
            .field("helm_registry", &self.helm_registry.is_some())
            .finish()
    }
}

/// What `fief install` was asked for.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The agent's namespace.
    pub namespace: String,
    /// The agent's image.
    pub image: String,
    /// The tenants repo's git URL.
    pub repo: String,
    /// The branch to follow.
    pub branch: String,
    /// The fetch interval, as given (`30s`).
    pub interval: String,
    /// Replicas of the Deployment.
    pub replicas: u32,
    /// Shards the tenants are split into across the replicas (0: none, one leader).
    pub shards: u32,
    /// The agent keeps one sync-duration histogram for the fleet (`--sync-durations fleet`).
    pub fleet_durations: bool,
    /// The `spec.cluster` this agent owns.
    pub cluster: String,
    /// The agent container's requests and limits.
    pub resources: Resources,
    /// The objects made only when asked for.
    pub optional: Optional,
    /// Serve the read-only web view (`--web`).
    pub web: bool,
}

/// The name of a cluster-scoped object of the install in `namespace`.
pub fn cluster_name(name: &str, namespace: &str) -> String {
    if namespace == DEFAULT_NAMESPACE {
        name.to_string()
    } else {
        format!("{name}-{namespace}")
    }
}

/// The objects of `deploy/` for `settings`, in apply order, with the Secrets for
/// `credentials` (applied after the Namespace, before anything that reads them) and the
/// optional objects asked for (last).
pub fn objects(settings: &Settings, credentials: &Credentials) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for (file, text) in FILES {
        let text = text.replace(DEFAULT_NAMESPACE, &settings.namespace);
        for doc in crate::core::yaml::split_documents(&text) {
            let parsed = crate::core::yaml::parse_value(&doc)
                .map_err(|e| format!("{file} (built in): {e}"))?;
            let Some(mut object) = parsed else { continue };
            rename_cluster_scoped(&mut object, &settings.namespace);
            if object["kind"] == "Deployment" {
                configure(&mut object, settings, credentials);
            }
            out.push(object);
            if out.len() == 1 {
                out.extend(secrets(&settings.namespace, credentials));
            }
        }
    }
    out.extend(super::options::objects(
        &settings.namespace,
        &settings.optional,
    ));
    Ok(out)
}

/// Cluster-scoped objects (and the references between them) named for the namespace.
fn rename_cluster_scoped(object: &mut Value, namespace: &str) {
    let kind = object["kind"].as_str().unwrap_or_default().to_string();
    let cluster_scoped = matches!(
        kind.as_str(),
        "ClusterRole"
            | "ClusterRoleBinding"
            | "ValidatingAdmissionPolicy"
            | "ValidatingAdmissionPolicyBinding"
    );
    if !cluster_scoped || namespace == DEFAULT_NAMESPACE {
        return;
    }
    if let Some(name) = object["metadata"]["name"].as_str() {
        object["metadata"]["name"] = json!(cluster_name(name, namespace));
    }
    if kind == "ClusterRoleBinding"
        && let Some(role) = object["roleRef"]["name"].as_str()
    {
        object["roleRef"]["name"] = json!(cluster_name(role, namespace));
    }
    if kind == "ValidatingAdmissionPolicyBinding"
        && let Some(policy) = object["spec"]["policyName"].as_str()
    {
        object["spec"]["policyName"] = json!(cluster_name(policy, namespace));
    }
}

/// The Secrets the credentials go in (the names and keys `deploy/agent.yaml` mounts).
fn secrets(namespace: &str, c: &Credentials) -> Vec<Value> {
    let mut git = Vec::new();
    if let Some(token) = &c.git_token {
        git.push(("token", token.as_str()));
    }
    if let Some((key, hosts)) = &c.ssh {
        git.push(("ssh-key", key.as_str()));
        git.push(("known_hosts", hosts.as_str()));
    }
    let mut out = Vec::new();
    if !git.is_empty() {
        out.push(secret(namespace, "fief-git", &git));
    }
    if let Some(s) = &c.webhook_secret {
        out.push(secret(namespace, "fief-webhook", &[("secret", s.as_str())]));
    }
    if let Some(k) = &c.age_key {
        out.push(secret(
            namespace,
            "fief-age-key",
            &[("keys.txt", k.as_str())],
        ));
    }
    if let Some(t) = &c.web_token {
        out.push(secret(namespace, "fief-web", &[("token", t.as_str())]));
    }
    // Where the agent's HELM_REPOSITORY_CONFIG and HELM_REGISTRY_CONFIG point.
    let helm: Vec<(&str, &str)> = [
        ("repositories.yaml", &c.helm_repositories),
        ("config.json", &c.helm_registry),
    ]
    .into_iter()
    .filter_map(|(key, value)| Some((key, value.as_deref()?)))
    .collect();
    if !helm.is_empty() {
        out.push(secret(namespace, "fief-helm", &helm));
    }
    out
}

fn secret(namespace: &str, name: &str, data: &[(&str, &str)]) -> Value {
    let engine = base64::engine::general_purpose::STANDARD;
    let data: serde_json::Map<String, Value> = data
        .iter()
        .map(|(k, v)| (k.to_string(), json!(engine.encode(v))))
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/part-of": "fief"},
        },
        "type": "Opaque",
        "data": data,
    })
}

/// The Deployment with the image, repo, branch, replicas and the credential flags set. The
/// Pod template carries a hash of the credentials, so a new key rolls the Pods.
fn configure(deployment: &mut Value, s: &Settings, c: &Credentials) {
    deployment["spec"]["replicas"] = json!(s.replicas);
    deployment["spec"]["template"]["metadata"]["annotations"]["fief.dev/credentials"] =
        json!(credentials_digest(c));
    let Some(container) = deployment["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .and_then(|cs| cs.iter_mut().find(|c| c["name"] == "agent"))
    else {
        return;
    };
    container["image"] = json!(s.image);
    match s.resources.to_value() {
        Some(resources) => container["resources"] = resources,
        None => {
            if let Some(fields) = container.as_object_mut() {
                fields.remove("resources");
            }
        }
    }
    if let Some(env) = container["env"].as_array_mut() {
        for var in env.iter_mut() {
            match var["name"].as_str() {
                Some("FIEF_REPO") => var["value"] = json!(s.repo),
                Some("FIEF_BRANCH") => var["value"] = json!(s.branch),
                _ => {}
            }
        }
    }
    let mut args: Vec<Value> = container["args"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|a| {
            c.webhook_secret.is_some()
                || a.as_str() != Some(&flag("webhook-secret-file", WEBHOOK_SECRET))
        })
        .map(|a| match a.as_str() {
            Some(x) if x.starts_with("--interval=") => json!(format!("--interval={}", s.interval)),
            Some(x) if x.starts_with("--cluster=") => json!(format!("--cluster={}", s.cluster)),
            _ => a,
        })
        .collect();
    let mut add = |name: &str, path: &str| args.push(json!(flag(name, path)));
    if c.git_token.is_some() {
        add("git-token-file", GIT_TOKEN);
    }
    if c.ssh.is_some() {
        add("ssh-key-file", SSH_KEY);
        add("known-hosts-file", KNOWN_HOSTS);
    }
    if c.age_key.is_some() {
        add("age-key-file", AGE_KEY);
    }
    if s.shards > 1 {
        args.push(json!(format!("--shards={}", s.shards)));
    }
    if s.fleet_durations {
        args.push(json!("--sync-durations=fleet"));
    }
    if s.web {
        args.push(json!("--web"));
        if c.web_token.is_some() {
            args.push(json!(flag("web-token-file", WEB_TOKEN)));
        }
    }
    container["args"] = json!(args);
}

/// A short hash of every credential, for the Pod template: a new key rolls the Pods.
fn credentials_digest(c: &Credentials) -> String {
    let mut hash = Sha256::new();
    for part in [
        &c.git_token,
        &c.webhook_secret,
        &c.age_key,
        &c.web_token,
        &c.helm_repositories,
        &c.helm_registry,
    ]
    .into_iter()
    .flatten()
    {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    if let Some((key, hosts)) = &c.ssh {
        hash.update(key.as_bytes());
        hash.update(hosts.as_bytes());
    }
    hash.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn flag(name: &str, path: &str) -> String {
    format!("--{name}={path}")
}

#[cfg(test)]
#[path = "manifests_tests.rs"]
mod tests;
