//! What `fief status` reads from the cluster: the inventories (with their day-2 flags), the
//! agent's view and the rollout record.
//!
//! In: a client, the agent namespace, [`StatusArgs`]. Out: a [`View`]. Someone with rights
//! in the agent namespace lists every inventory; a tenant's own people (admins, operators,
//! viewers, who may `get` only their tenants' inventory ConfigMaps, see
//! `fief_kube::status_access`) are refused the list and read the named tenants' inventories
//! one by one instead. What they may not read (the agent's view, the rollout record) is left
//! out with a note, never guessed.

use std::collections::BTreeMap;
use std::io::Write;

use super::StatusArgs;
use crate::core::inventory::{Inventory, InventoryError};
use crate::core::rollout::Record;
use crate::core::status::Flags;
use crate::core::status::agent::AgentStatus;
use crate::kube::ClusterError;

/// Everything `fief status` shows, as read.
pub(super) struct View {
    /// The agent namespace read.
    pub namespace: String,
    /// Inventories by tenant.
    pub inventories: BTreeMap<String, Result<Inventory, InventoryError>>,
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
    let listed = crate::kube::inventory_store::load_inventories(client, namespace).await;
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
) -> Result<
    (
        BTreeMap<String, Result<Inventory, InventoryError>>,
        BTreeMap<String, Flags>,
    ),
    ClusterError,
> {
    let inventories =
        crate::kube::inventory_store::get_inventories(client, namespace, tenants).await?;
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

/// `GET path` on `http://host:port` (plain HTTP/1.1; the agent's port).
async fn get_plain_http(url: &str, path: &str) -> Result<String, String> {
    use std::io::Read;
    let host = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("--agent {url}: only http://HOST:PORT is supported"))?
        .trim_end_matches('/')
        .to_string();
    let req = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    let io = move || {
        let addr = std::net::ToSocketAddrs::to_socket_addrs(host.as_str())?
            .next()
            .ok_or_else(|| std::io::Error::other("no address"))?;
        let timeout = std::time::Duration::from_secs(5);
        let mut s = std::net::TcpStream::connect_timeout(&addr, timeout)?;
        s.set_read_timeout(Some(timeout))?;
        s.write_all(req.as_bytes())?;
        let mut out = Vec::new();
        s.read_to_end(&mut out)?;
        Ok::<_, std::io::Error>(String::from_utf8_lossy(&out).into_owned())
    };
    let text = tokio::task::spawn_blocking(io)
        .await
        .map_err(|e| format!("{url}: {e}"))?
        .map_err(|e| format!("{url}: {e}"))?;
    text.split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .ok_or_else(|| format!("{url}: not an HTTP response"))
}
