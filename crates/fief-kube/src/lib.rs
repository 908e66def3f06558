//! Cluster: the only module that talks to the Kubernetes API server.
//!
//! In: a kubeconfig, rendered tenants and their plans. Out: server-side applies, deletes,
//! inventory ConfigMaps, and the live state fief reads to plan (`sync`, `diff`). Discovery
//! resolves each object's resource and scope; arbitrary kinds are applied as dynamic objects.

pub mod adopt;
pub mod adoption;
pub mod apply;
pub mod batched;
mod chart_crds;
mod config;
pub mod counter;
pub mod depends;
pub mod diff;
pub mod fence;
pub mod health;
mod hold;
pub mod inventory_store;
pub mod live;
pub mod moved;
pub mod observe;
pub mod pass;
pub mod phases;
pub mod prune;
pub mod rollout_store;
pub mod status_access;
pub mod sync;
pub mod tenant_events;
pub mod tenant_flags;
pub mod transport;

pub use config::load_config;

#[cfg(any(test, feature = "test-kit"))]
pub mod fixtures;
#[cfg(test)]
mod sync_tests;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::{ApiCapabilities, ApiResource, Discovery, Scope};
use kube::{Client, Config};
use serde_json::Value;
use tokio::sync::RwLock;

use fief_core::objects::ObjectId;

/// Field manager of every server-side apply.
pub const FIELD_MANAGER: &str = "fief";

/// Parameters of a forced server-side apply as `manager`, with `fieldValidation=Ignore`.
/// For an apply, that setting only skips the API server's second, strict YAML parse of the
/// body, which looks for duplicate keys (fief's bodies are serialized maps and have none); a
/// field the schema does not declare is still refused by the apply itself. The default
/// (`Warn`) parsed every body twice, which at a shared change across 1,000 tenants was about
/// 6 % of the API server's CPU.
pub fn forced_apply(manager: &str) -> kube::api::PatchParams {
    kube::api::PatchParams::apply(manager)
        .force()
        .validation_ignore()
}

/// Failures talking to the cluster. Each prints as one line: what failed (verb, kind,
/// namespace/name), the server's answer or the connection failure, and a hint.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The kubeconfig could not be loaded.
    #[error("cannot load kubeconfig: {0}")]
    Kubeconfig(String),
    /// No kubeconfig file where one is looked for (and not in a Pod).
    #[error(
        "no kubeconfig: {} does not exist ({from}); give --kubeconfig FILE or set KUBECONFIG",
        path.display()
    )]
    NoKubeconfig {
        /// The file looked for.
        path: std::path::PathBuf,
        /// Where its name came from.
        from: &'static str,
    },
    /// No connection to the API server (refused, timed out, TLS failed): never an answer
    /// of the server.
    #[error(
        "cannot reach the API server {server} ({what}): {}; check the kubeconfig's server address and that the cluster is up",
        root_cause(.source)
    )]
    Unreachable {
        /// What fief was doing (verb and target).
        what: String,
        /// The server address from the kubeconfig.
        server: String,
        /// The client error.
        source: kube::Error,
    },
    /// The API server answered with an error status.
    #[error("{what}: the API server answered {code}{}: {message}; {}", reason_part(.reason), hint(*.code, .message))]
    Api {
        /// What fief was doing (verb and target).
        what: String,
        /// HTTP status code.
        code: u16,
        /// Status reason (`Forbidden`, `Invalid`, ...).
        reason: String,
        /// The server's message.
        message: String,
    },
    /// A request failed on the client side (building it, decoding the answer).
    #[error("{what}: {detail}")]
    Client {
        /// What fief was doing (verb and target).
        what: String,
        /// What went wrong.
        detail: String,
    },
    /// fief refuses to send this object.
    #[error("{id}: refused: {reason}")]
    Refused {
        /// The object.
        id: ObjectId,
        /// Why.
        reason: &'static str,
    },
    /// The cluster does not serve this kind.
    #[error("{id}: the cluster serves no resource for apiVersion {api_version}, kind {kind}")]
    UnknownKind {
        /// The object.
        id: ObjectId,
        /// Its apiVersion.
        api_version: String,
        /// Its kind.
        kind: String,
    },
    /// A CustomResourceDefinition did not become Established in time.
    #[error("{id}: CustomResourceDefinition not Established after {seconds}s")]
    CrdTimeout {
        /// The CRD.
        id: ObjectId,
        /// How long fief waited.
        seconds: u64,
    },
}

impl ClusterError {
    /// Classify a client error of a request: an answer of the API server ([`ClusterError::Api`]),
    /// no connection ([`ClusterError::Unreachable`], naming the server), or a client-side
    /// failure. `what` is the verb and target, e.g. `apply ConfigMap/acme-prod/web`.
    pub fn request(what: impl Into<String>, source: kube::Error) -> ClusterError {
        let what = what.into();
        match source {
            kube::Error::Api(s) => ClusterError::Api {
                what,
                code: s.code,
                reason: s.reason.clone(),
                message: s.message.clone(),
            },
            e @ (kube::Error::HyperError(_) | kube::Error::Service(_)) => {
                ClusterError::Unreachable {
                    what,
                    server: server_url(),
                    source: e,
                }
            }
            other => ClusterError::Client {
                what,
                detail: root_cause(&other),
            },
        }
    }

    /// The HTTP status the API server answered, if it answered.
    pub fn status_code(&self) -> Option<u16> {
        match self {
            ClusterError::Api { code, .. } => Some(*code),
            _ => None,
        }
    }
}

fn reason_part(reason: &str) -> String {
    if reason.is_empty() {
        String::new()
    } else {
        format!(" {reason}")
    }
}

/// What to do about an API error status.
fn hint(code: u16, message: &str) -> &'static str {
    // Server-side apply reports an object that does not fit its kind's schema as a 500.
    let schema = [
        "failed to create typed patch object",
        "failed to convert",
        "unable to convert",
    ];
    if code == 500 && schema.iter().any(|s| message.contains(s)) {
        return "the object does not fit its kind's schema; fix it in the tenants repo";
    }
    match code {
        401 => "the credentials were refused; check the kubeconfig's user",
        403 => {
            "the identity lacks the RBAC right for this; grant it or check the tenant's and agent's roles"
        }
        404 => "it does not exist (or its namespace does not)",
        409 => "a conflicting change happened; the next sync retries",
        400 | 422 => "the object is invalid; fix it in the tenants repo",
        429 => "the API server is overloaded; lower --api-qps or retry later",
        c if c >= 500 => "the API server failed; retry later and check its logs",
        _ => "see the message",
    }
}

/// The innermost cause of an error, in one line (the chain's last message).
pub fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut last = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        let text = s.to_string();
        if !text.is_empty() {
            last = text;
        }
        cur = s.source();
    }
    last.replace('\n', " ")
}

/// The API server address of the client built by [`connect`] (one per process).
static SERVER_URL: std::sync::OnceLock<String> = std::sync::OnceLock::new();

fn server_url() -> String {
    SERVER_URL
        .get()
        .cloned()
        .unwrap_or_else(|| "(server unknown)".to_string())
}

/// A client error in one line: for API errors the code, reason and message only.
pub fn brief(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => format!("{} {}: {}", s.code, s.reason, s.message),
        other => root_cause(other),
    }
}

/// Build a client from `--kubeconfig` / `--context`, `KUBECONFIG`, `~/.kube/config` or the
/// in-cluster service account, as kubectl does. Every request it sends is counted.
/// Requests are limited to `qps` per second on the client side.
pub async fn connect(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
    qps: u32,
) -> Result<(Client, counter::RequestCounter), ClusterError> {
    let config = load_config(kubeconfig, context).await?;
    let counter = counter::RequestCounter::default();
    let client = build_client(config, &counter, Some(qps), None)
        .map_err(|source| ClusterError::request("build the client", source))?;
    Ok((client, counter))
}

/// [`connect`], then the API resources the cluster serves: what a command that syncs needs.
pub async fn connect_resources(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
    qps: u32,
) -> Result<(Resources, counter::RequestCounter), ClusterError> {
    let (client, counter) = connect(kubeconfig, context, qps).await?;
    Ok((Resources::discover(client).await?, counter))
}

/// A client for `config` whose requests `counter` counts, limited to `qps` per second on the
/// client side (`None`: not limited), and whose writes pass only while `fence` admits them
/// (see [`fence`]).
pub fn build_client(
    config: Config,
    counter: &counter::RequestCounter,
    qps: Option<u32>,
    fence: Option<fence::Fence>,
) -> Result<Client, kube::Error> {
    let (builder, outer_fence) = transport::client_builder(config, fence)?;
    let limit = qps.map(|qps| {
        tower::limit::RateLimitLayer::new(u64::from(qps.max(1)), std::time::Duration::from_secs(1))
    });
    Ok(builder
        .with_layer(counter)
        .with_layer(&fence::FenceLayer(outer_fence))
        .with_layer(&tower::util::option_layer(limit))
        .build())
}

/// A resolved resource: how to address objects of one group/version/kind.
#[derive(Debug, Clone)]
pub struct Resource {
    /// The API resource.
    pub api: ApiResource,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
}

/// Resources by (group, version, kind).
type ResourceMap = HashMap<(String, String, String), Resource>;

/// Discovery, run once per sync and refreshed when a kind is unknown.
#[derive(Clone)]
pub struct Resources {
    client: Client,
    discovery: Arc<RwLock<ResourceMap>>,
}

fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

impl Resources {
    /// Run discovery (aggregated: two requests).
    pub async fn discover(client: Client) -> Result<Resources, ClusterError> {
        let r = Resources {
            client,
            discovery: Arc::new(RwLock::new(HashMap::new())),
        };
        r.refresh().await?;
        Ok(r)
    }

    /// Run discovery again (after a CRD was applied, or a kind was not found).
    pub async fn refresh(&self) -> Result<(), ClusterError> {
        let discovery = Discovery::new(self.client.clone())
            .run_aggregated()
            .await
            .map_err(|source| {
                ClusterError::request("discover the API (GET /api, /apis)", source)
            })?;
        let mut map = HashMap::new();
        for group in discovery.groups() {
            for version in group.versions() {
                for (ar, caps) in group.versioned_resources(version) {
                    insert(&mut map, ar, &caps);
                }
            }
        }
        *self.discovery.write().await = map;
        Ok(())
    }

    /// The resource of an apiVersion/kind, refreshing discovery once if it is unknown.
    pub async fn resolve(&self, api_version: &str, kind: &str) -> Option<Resource> {
        let (group, version) = split_api_version(api_version);
        let key = (group.to_string(), version.to_string(), kind.to_string());
        if let Some(r) = self.discovery.read().await.get(&key) {
            return Some(r.clone());
        }
        if self.refresh().await.is_err() {
            return None;
        }
        self.discovery.read().await.get(&key).cloned()
    }

    /// The resource of an object, or [`ClusterError::UnknownKind`] naming it.
    pub async fn require(
        &self,
        id: &ObjectId,
        api_version: &str,
    ) -> Result<Resource, ClusterError> {
        self.resolve(api_version, &id.kind)
            .await
            .ok_or_else(|| ClusterError::UnknownKind {
                id: id.clone(),
                api_version: api_version.to_string(),
                kind: id.kind.clone(),
            })
    }

    /// The client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The dynamic API for an object of this resource in `namespace` (ignored when
    /// cluster-scoped).
    pub fn api(&self, resource: &Resource, namespace: &str) -> Api<DynamicObject> {
        if resource.namespaced {
            Api::namespaced_with(self.client.clone(), namespace, &resource.api)
        } else {
            Api::all_with(self.client.clone(), &resource.api)
        }
    }
}

fn insert(map: &mut ResourceMap, ar: ApiResource, caps: &ApiCapabilities) {
    let key = (ar.group.clone(), ar.version.clone(), ar.kind.clone());
    // Subresources share the kind of their parent; keep the plain resource.
    if ar.plural.contains('/') {
        return;
    }
    map.insert(
        key,
        Resource {
            namespaced: caps.scope == Scope::Namespaced,
            api: ar,
        },
    );
}

/// The identity component objects of a tenant namespace are applied as.
pub fn tenant_identity(namespace: &str) -> String {
    format!("system:serviceaccount:{namespace}:{TENANT_SERVICE_ACCOUNT}")
}

/// Name of the ServiceAccount the baseline creates in every tenant namespace.
pub const TENANT_SERVICE_ACCOUNT: &str = "fief-tenant";

/// Send a request built by `kube::core::Request`, impersonating `user` when given.
pub async fn send_as<T: serde::de::DeserializeOwned>(
    client: &Client,
    request: Result<http::Request<Vec<u8>>, kube::core::request::Error>,
    user: Option<&str>,
) -> Result<T, kube::Error> {
    let mut request = request.map_err(kube::Error::BuildRequest)?;
    if let Some(user) = user {
        let value = http::HeaderValue::from_str(user)
            .map_err(|e| kube::Error::HttpError(http::Error::from(e)))?;
        request.headers_mut().insert("Impersonate-User", value);
    }
    client.request(request).await
}

/// An object's identity from its live (or returned) form.
pub fn live_id(resource: &Resource, object: &Value) -> ObjectId {
    ObjectId {
        group: resource.api.group.clone(),
        kind: resource.api.kind.clone(),
        namespace: object["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        name: object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    }
}

/// Every object of a resource (all namespaces) matching `selector`, page by page.
pub async fn list_all(
    resources: &Resources,
    resource: &Resource,
    selector: &str,
) -> Result<Vec<Value>, kube::Error> {
    let api: Api<DynamicObject> = Api::all_with(resources.client.clone(), &resource.api);
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut params = ListParams::default().labels(selector).limit(500);
        if let Some(t) = &token {
            params = params.continue_token(t);
        }
        let page = api.list(&params).await?;
        for item in page.items {
            out.push(serde_json::to_value(item).unwrap_or(Value::Null));
        }
        match page.metadata.continue_ {
            Some(t) if !t.is_empty() => token = Some(t),
            _ => break,
        }
    }
    Ok(out)
}
