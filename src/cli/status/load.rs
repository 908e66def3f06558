//! What `fief status` reads from the cluster: the inventories (with their day-2 flags), the
//! agent's view and the rollout record.
//!
//! In: a client, the agent namespace, [`StatusArgs`]. Out: a [`View`], with a [`Summary`] of
//! each inventory (its status and how many objects it records): the inventories are read one
//! at a time and each dropped once summed up, so the command never holds them all. Someone
//! with rights in the agent namespace lists every inventory; a tenant's own people (admins, operators,
//! viewers, who may `get` only their tenants' inventory ConfigMaps, see
//! `fief_kube::status_access`) are refused the list and read the named tenants' inventories
//! one by one instead. What they may not read (the agent's view, the rollout record) is left
//! out with a note, never guessed.

use std::collections::BTreeMap;

use super::StatusArgs;
use crate::core::inventory::{Inventory, InventoryError, Status};
use crate::core::rollout::Record;
use crate::core::status::Flags;
use crate::core::status::agent::AgentStatus;
use crate::kube::ClusterError;
use crate::kube::inventory_store::Walk;

/// What `fief status` shows of one tenant's inventory.
#[derive(Debug)]
pub(super) struct Summary {
    /// The inventory's status.
    pub status: Status,
    /// The objects it records.
    pub objects: usize,
    /// The cluster the tenant file now names, while it is marked `Moved` here.
    pub moved_to: Option<String>,
}

/// Inventories as `fief status` keeps them, by tenant.
type Summaries = BTreeMap<String, Result<Summary, InventoryError>>;

/// The summary of an inventory as read (an unreadable one stays its error).
fn summary(inv: &Result<Inventory, InventoryError>) -> Result<Summary, InventoryError> {
    match inv {
        Ok(inv) => Ok(Summary {
            status: inv.status.clone(),
            objects: inv.entries.len(),
            moved_to: crate::core::status::moved::moved_to(inv).map(str::to_string),
        }),
        Err(e) => Err(InventoryError {
            namespace: e.namespace.clone(),
            name: e.name.clone(),
            detail: e.detail.clone(),
        }),
    }
}

/// Every inventory of `namespace`, summed up one at a time.
async fn list(client: &kube::Client, namespace: &str) -> Result<Summaries, ClusterError> {
    let mut walk = Walk::new(client, namespace);
    let mut out = BTreeMap::new();
    while let Some(one) = walk.next().await? {
        for (tenant, inv) in one.iter() {
            out.insert(tenant.clone(), summary(inv));
        }
    }
    Ok(out)
}

/// Everything `fief status` shows, as read.
pub(super) struct View {
    /// The agent namespace read.
    pub namespace: String,
    /// Each inventory's summary, by tenant.
    pub inventories: Summaries,
    /// The agent's view, or why it could not be read.
    pub agent: Result<AgentStatus, String>,
    /// Each tenant's day-2 flags.
    pub flags: BTreeMap<String, Flags>,
    /// The rollout record, when there is one and it could be read.
    pub rollout: Option<Record>,
    /// Set when only the named tenants could be read (the caller may not list the agent
    /// namespace): says so.
    pub narrowed: Option<String>,
}

/// Read the [`View`] for `args` in `namespace`.
pub(super) async fn view(
    client: &kube::Client,
    args: &StatusArgs,
    namespace: &str,
) -> Result<View, ClusterError> {
    let listed = list(client, namespace).await;
    let (inventories, flags, narrowed) = match listed {
        Ok(inventories) => {
            let flags = crate::kube::tenant_flags::load_flags(client, namespace).await?;
            (inventories, flags, None)
        }
        Err(e) if e.status_code() == Some(403) && !args.tenants.is_empty() => {
            let (inventories, flags) = named(client, namespace, &args.tenants).await?;
            let note = format!(
                "you may not list the tenants in {namespace}: showing the named tenants' status only"
            );
            (inventories, flags, Some(note))
        }
        Err(e) if e.status_code() == Some(403) => {
            return Err(ClusterError::Client {
                what: format!("list the tenants in {namespace}"),
                detail: format!(
                    "{e}; a tenant's admins, operators and viewers may read their own tenant's status: name it with --tenant"
                ),
            });
        }
        Err(e) => return Err(e),
    };
    let agent = agent_view(client, args, namespace).await;
    // The rollout record is best effort: without it the table is still right.
    let rollout = crate::kube::rollout_store::read_record(client, namespace)
        .await
        .ok()
        .flatten();
    Ok(View {
        namespace: namespace.to_string(),
        inventories,
        agent,
        flags,
        rollout,
        narrowed,
    })
}

/// The named tenants' inventories and flags, each read by name.
async fn named(
    client: &kube::Client,
    namespace: &str,
    tenants: &[String],
) -> Result<(Summaries, BTreeMap<String, Flags>), ClusterError> {
    let inventories: Summaries =
        crate::kube::inventory_store::get_inventories(client, namespace, tenants)
            .await?
            .iter()
            .map(|(t, inv)| (t.clone(), summary(inv)))
            .collect();
    let mut flags = BTreeMap::new();
    for tenant in inventories.keys() {
        let name = crate::core::objects::inventory_name(tenant);
        if let Some(f) = crate::kube::tenant_flags::get_flags(client, namespace, &name).await? {
            flags.insert(tenant.clone(), f);
        }
    }
    Ok((inventories, flags))
}

/// The agent's `/status`, or why it could not be read.
async fn agent_view(
    client: &kube::Client,
    args: &StatusArgs,
    namespace: &str,
) -> Result<AgentStatus, String> {
    let text = match &args.agent {
        Some(url) => get_plain_http(url, "/status").await?,
        None => {
            let path =
                format!("/api/v1/namespaces/{namespace}/services/fief-agent:http/proxy/status");
            let request = http::Request::get(path)
                .body(Vec::new())
                .map_err(|e| e.to_string())?;
            client.request_text(request).await.map_err(|e| {
                format!("through the Service fief-agent: {}", crate::kube::brief(&e))
            })?
        }
    };
    AgentStatus::parse(&text).map_err(|e| format!("not the agent's /status: {e}"))
}

/// `GET path` on `http://host:port` (the agent's port), with hyper's client: the body of a
/// success, or the status or error, within [`AGENT_TIMEOUT`].
async fn get_plain_http(url: &str, path: &str) -> Result<String, String> {
    use http_body_util::{BodyExt, Empty};
    use hyper_util::client::legacy::Client;
    use hyper_util::client::legacy::connect::HttpConnector;
    use hyper_util::rt::TokioExecutor;

    let host = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("--agent {url}: only http://HOST:PORT is supported"))?
        .trim_end_matches('/');
    let uri: http::Uri = format!("http://{host}{path}")
        .parse()
        .map_err(|e| format!("--agent {url}: {e}"))?;
    let mut connector = HttpConnector::new();
    connector.set_connect_timeout(Some(AGENT_TIMEOUT));
    let client: Client<_, Empty<hyper::body::Bytes>> =
        Client::builder(TokioExecutor::new()).build(connector);
    let get = async {
        let response = client.get(uri).await.map_err(|e| e.to_string())?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        if !status.is_success() {
            return Err(format!("answered {status}"));
        }
        Ok(String::from_utf8_lossy(&body).into_owned())
    };
    match tokio::time::timeout(AGENT_TIMEOUT, get).await {
        Ok(result) => result.map_err(|e| format!("{url}: {e}")),
        Err(_) => Err(format!(
            "{url}: no answer within {} s",
            AGENT_TIMEOUT.as_secs()
        )),
    }
}

/// How long reading the agent's `/status` may take, connection included.
const AGENT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
