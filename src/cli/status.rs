//! `fief status`: every tenant's status from its inventory in the cluster, beside the agent's
//! view (last fetched commit, last fetch error, each tenant's last attempted commit and when).
//!
//! In: [`StatusArgs`]. Out: a table or JSON on stdout. The agent's view comes from its
//! `GET /status` (an [`AgentStatus`], at `--agent` or through the API server's Service proxy);
//! when the agent cannot be reached the inventories are shown alone, with a note.

use std::io::Write;
use std::str::FromStr;

use super::{CliError, EXIT_INVALID, EXIT_OK, Format, StatusArgs, runtime};
use crate::core::condition::ConditionType::{self, Orphaned, Ready, Stalled};
use crate::core::inventory::{Inventory, InventoryError};
use crate::core::status::agent::{AgentStatus, Attempt};

/// `fief status`.
pub fn status_cmd(args: &StatusArgs) -> Result<u8, CliError> {
    let namespace = super::agent_namespace(&args.agent_ns, &args.cluster);
    let ns = namespace.as_str();
    let (inventories, agent, flags) = runtime()?.block_on(async {
        let (client, _) = crate::kube::connect(
            args.cluster.kubeconfig.as_deref(),
            args.cluster.context.as_deref(),
            args.cluster.api_qps,
        )
        .await?;
        let inventories = crate::kube::inventory_store::load_inventories(&client, ns).await?;
        let agent = agent_view(&client, args, ns).await;
        let flags = crate::kube::tenant_flags::load_flags(&client, ns).await?;
        // The rollout record is best effort: without it the table is still right.
        let rollout = crate::kube::rollout_store::read_record(&client, ns)
            .await
            .ok()
            .flatten();
        Ok::<_, CliError>((inventories, agent, (flags, rollout)))
    })?;
    let (flags, rollout) = flags;
    let wave_of = |t: &str| {
        let r = rollout.as_ref()?;
        let (i, w) = r
            .waves
            .iter()
            .enumerate()
            .find(|(_, w)| w.tenants.iter().any(|x| x == t))?;
        Some((i, w.name.clone(), r.held.contains_key(t)))
    };
    let suspended = |t: &str| flags.get(t).and_then(|f| f.suspended.clone());
    let attempt = |t: &str| agent.as_ref().ok().and_then(|a| a.tenants.get(t));
    let unknown: Vec<&str> = args
        .tenants
        .iter()
        .filter(|t| !inventories.contains_key(*t))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        return Err(CliError::Usage(format!(
            "no inventory for tenant {} in namespace {} (known: {})",
            unknown.join(", "),
            ns,
            inventories.keys().cloned().collect::<Vec<_>>().join(", ")
        )));
    }
    let condition = |inv: &Inventory, t: ConditionType| {
        inv.status
            .condition(t)
            .map(|c| c.status.clone())
            .unwrap_or_else(|| "Unknown".to_string())
    };
    let selected: Vec<(&String, &Result<Inventory, InventoryError>)> = inventories
        .iter()
        .filter(|(t, _)| args.tenants.is_empty() || args.tenants.contains(t))
        .filter(|(_, inv)| {
            !args.not_ready || inv.as_ref().map_or(true, |i| condition(i, Ready) != "True")
        })
        .collect();
    let mut out = String::new();
    match args.output {
        Format::Json => {
            let rows: Vec<serde_json::Value> = selected
                .iter()
                .map(|(t, inv)| match inv {
                    Ok(inv) => serde_json::json!({
                        "tenant": t,
                        "status": inv.status,
                        "attempt": attempt(t.as_str()),
                        "suspended": suspended(t.as_str()),
                        "rollout": wave_of(t.as_str()).map(|(i, name, held)| serde_json::json!({"commit": rollout.as_ref().map(|r| r.commit.clone()), "wave": i + 1, "waveName": name, "held": held})),
                        "lastSyncAge": last_sync(inv, attempt(t.as_str())).map(|u| (crate::agent::metrics::unix_now() - u).max(0)),
                    }),
                    Err(e) => serde_json::json!({"tenant": t, "error": e.to_string()}),
                })
                .collect();
            out = serde_json::to_string_pretty(&rows).unwrap_or_default();
            out.push('\n');
        }
        Format::Text => {
            out.push_str(&agent_line(&agent));
            if let Some(r) = &rollout {
                out.push_str(&r.summary());
                out.push('\n');
            }
            out.push_str(&format!(
                "{:<24} {:<9} {:<8} {:<5} {:<10} {:<8} {:<12} {:<22} {}\n",
                "TENANT",
                "READY",
                "STALLED",
                "AGE",
                "REVISION",
                "OBJECTS",
                "COMMIT",
                "ATTEMPTED",
                "MESSAGE"
            ));
            for (t, inv) in &selected {
                match inv {
                    Ok(inv) => {
                        let message = inv
                            .status
                            .last_error
                            .clone()
                            .or_else(|| inv.status.condition(Ready).map(|c| c.message.clone()))
                            .unwrap_or_default();
                        let message = message.lines().next().unwrap_or("").to_string();
                        let orphan = inv
                            .status
                            .condition(Orphaned)
                            .is_some_and(|c| c.status == "True");
                        let tried = attempt(t.as_str()).map(attempt_cell).unwrap_or_default();
                        let suspension = suspended(t.as_str());
                        let (ready, message) = match &suspension {
                            Some(why) => (
                                "Suspended".to_string(),
                                format!("suspended {why}; was: {message}"),
                            ),
                            None => (condition(inv, Ready), message),
                        };
                        let message = match wave_of(t.as_str()) {
                            Some((i, name, true)) => format!(
                                "held by the rollout (wave {} \"{name}\"); {message}",
                                i + 1
                            ),
                            _ => message,
                        };
                        let sync_age =
                            last_sync(inv, attempt(t.as_str())).map_or("-".to_string(), short_age);
                        let on = super::colour::stdout();
                        let pad = |w: &str, n: usize| {
                            let padded = format!("{w:<n$}");
                            match super::colour::style_of(w) {
                                Some(s) => padded.replacen(w, &super::colour::paint(on, s, w), 1),
                                None => padded,
                            }
                        };
                        let stalled = condition(inv, Stalled);
                        let stalled = if stalled == "True" {
                            super::colour::paint(
                                on,
                                super::colour::Style::Bad,
                                &format!("{stalled:<8}"),
                            )
                        } else {
                            format!("{stalled:<8}")
                        };
                        out.push_str(&format!(
                            "{:<24} {} {} {:<5} {:<10} {:<8} {:<12} {:<22} {}{}\n",
                            t,
                            pad(&ready, 9),
                            stalled,
                            sync_age,
                            inv.status.revision.chars().take(10).collect::<String>(),
                            inv.entries.len(),
                            inv.status
                                .commit
                                .as_deref()
                                .unwrap_or("-")
                                .chars()
                                .take(12)
                                .collect::<String>(),
                            if tried.is_empty() {
                                "-".to_string()
                            } else {
                                tried
                            },
                            if orphan { "ORPHANED: " } else { "" },
                            message
                        ));
                    }
                    Err(e) => out.push_str(&format!("{t:<24} unreadable inventory: {e}\n")),
                }
            }
        }
    }
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    let any_bad = selected
        .iter()
        .any(|(_, inv)| inv.as_ref().map_or(true, |i| condition(i, Ready) != "True"));
    Ok(if any_bad { EXIT_INVALID } else { EXIT_OK })
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

fn age(unix: i64) -> String {
    if unix <= 0 {
        return "never".to_string();
    }
    let secs = (crate::agent::metrics::unix_now() - unix).max(0);
    match secs {
        s if s < 120 => format!("{s}s ago"),
        s if s < 7200 => format!("{}m ago", s / 60),
        s => format!("{}h ago", s / 3600),
    }
}

/// The last attempt: `abc12345 applied 12s ago`, `3f2a91c0 failed 2m ago`.
fn attempt_cell(a: &Attempt) -> String {
    format!(
        "{} {} {}",
        a.commit.chars().take(8).collect::<String>(),
        a.outcome,
        age(a.at)
    )
}

/// The agent line above the table.
fn agent_line(agent: &Result<AgentStatus, String>) -> String {
    match agent {
        Ok(a) => format!(
            "agent: last fetched commit {} ({}), last fetch error: {}\n",
            a.fetched_commit.as_deref().unwrap_or("-"),
            age(a.fetched_at),
            a.fetch_error.as_deref().unwrap_or("none"),
        ),
        Err(e) => format!("agent: not reachable ({e}); showing the inventories alone\n"),
    }
}

/// Unix time of the tenant's last sync: the agent's last attempt when known, else the latest
/// condition transition recorded in the inventory (an unchanged sync writes nothing).
fn last_sync(inv: &Inventory, attempt: Option<&Attempt>) -> Option<i64> {
    let from_agent = attempt.map(|a| a.at).filter(|u| *u > 0);
    let recorded = inv
        .status
        .conditions
        .iter()
        .filter_map(|c| k8s_openapi::jiff::Timestamp::from_str(&c.last_transition_time).ok())
        .map(|t| t.as_second())
        .max();
    match (from_agent, recorded) {
        (Some(a), Some(r)) => Some(a.max(r)),
        (a, r) => a.or(r),
    }
}

/// `45s`, `3m`, `2h`, `4d` since `unix`.
fn short_age(unix: i64) -> String {
    let s = (crate::agent::metrics::unix_now() - unix).max(0);
    match s {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}
