//! `fief status`: every tenant's status from its inventory in the cluster, beside the agent's
//! view (last fetched commit, last fetch error, each tenant's last attempted commit and when).
//!
//! In: [`StatusArgs`]. Out: a table or JSON on stdout. The agent's view comes from its
//! `GET /status` (an [`AgentStatus`], at `--agent` or through the API server's Service proxy);
//! when the agent cannot be reached the inventories are shown alone, with a note. A tenant's
//! own people, without rights in the agent namespace, see their named tenants only (see
//! [`load`]). The agent namespace read is named on the agent line; when it holds no
//! inventory, a message names it (and where it came from) instead of an empty table.

mod load;
mod table;

use std::io::Write;
use std::str::FromStr;

use super::agent_ns::{self, AgentNamespace};
use super::{CliError, EXIT_INVALID, EXIT_OK, EXIT_USAGE, Format, StatusArgs, runtime};
use crate::core::condition::ConditionStatus;
use crate::core::condition::ConditionType::{self, Ready};
use crate::core::inventory::InventoryError;
use crate::core::status::agent::{AgentStatus, Attempt};
use load::{Summary, View};

/// One tenant's place in the rollout: wave index, wave name, held.
type WavePlace = (usize, String, bool);

/// `fief status`.
pub fn status_cmd(args: &StatusArgs) -> Result<u8, CliError> {
    // `-l`: the tenants are chosen by the labels of their files in --repo (or here).
    if let Some(selector) = &args.selector {
        let dir = args
            .agent_ns
            .repo
            .clone()
            .unwrap_or_else(|| std::path::PathBuf::from("."));
        let mut chosen = args.clone();
        chosen.tenants = super::selector::select_in(&dir, selector, &args.tenants)?;
        chosen.selector = None;
        return status_cmd(&chosen);
    }
    let namespace = agent_ns::resolve(&args.agent_ns)?;
    let ns = namespace.name.as_str();
    let (view, presence) = runtime()?.block_on(async {
        let (client, _) = crate::kube::connect(
            args.cluster.kubeconfig.as_deref(),
            args.cluster.context.as_deref(),
            args.cluster.api_qps,
        )
        .await?;
        let view = load::view(&client, args, ns).await?;
        // Nothing listed: say whether an agent is there at all.
        let presence = if view.inventories.is_empty() && view.narrowed.is_none() {
            Some(crate::kube::tenant_flags::presence(&client, ns).await?)
        } else {
            None
        };
        Ok::<_, CliError>((view, presence))
    })?;
    if let Some(presence) = presence {
        return Ok(nothing_listed(args, &namespace, presence));
    }
    let unknown: Vec<&str> = args
        .tenants
        .iter()
        .filter(|t| !view.inventories.contains_key(*t))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        let known = match &view.narrowed {
            Some(_) => "none you may read".to_string(),
            None => view
                .inventories
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
        };
        return Err(CliError::Usage(format!(
            "no inventory for tenant {} in namespace {} (known: {known})",
            unknown.join(", "),
            ns,
        )));
    }
    let selected: Vec<(&String, &Result<Summary, InventoryError>)> = view
        .inventories
        .iter()
        .filter(|(t, _)| args.tenants.is_empty() || args.tenants.contains(t))
        .filter(|(_, inv)| {
            !args.not_ready
                || inv
                    .as_ref()
                    .map_or(true, |i| condition(i, Ready) != ConditionStatus::True)
        })
        .collect();
    let out = match args.output {
        Format::Json => json_rows(&view, &selected),
        Format::Text => table::text(&view, &selected),
    };
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    let any_bad = selected.iter().any(|(_, inv)| {
        inv.as_ref()
            .map_or(true, |i| condition(i, Ready) != ConditionStatus::True)
    });
    Ok(if any_bad { EXIT_INVALID } else { EXIT_OK })
}

/// No inventory in the namespace read: name it and say why; an empty list for `-o json`.
/// Exit 2 when the namespace holds nothing of fief (the wrong namespace), 1 when the agent
/// there has synced no tenant yet.
fn nothing_listed(
    args: &StatusArgs,
    namespace: &AgentNamespace,
    presence: crate::kube::tenant_flags::Presence,
) -> u8 {
    if args.output == Format::Json {
        println!("[]");
    }
    if presence.agent {
        eprintln!("no tenant inventory in {namespace}: the agent there has synced no tenant yet");
        EXIT_INVALID
    } else {
        eprintln!(
            "{} {}",
            super::colour::error_prefix(),
            agent_ns::nothing_here(namespace, &args.cluster)
        );
        EXIT_USAGE
    }
}

/// A condition's status (`Unknown` when absent).
fn condition(inv: &Summary, t: ConditionType) -> ConditionStatus {
    inv.status
        .condition(t)
        .map_or(ConditionStatus::Unknown, |c| c.status)
}

/// Where `tenant` stands in the view's rollout, if it is in one.
fn wave_of(view: &View, tenant: &str) -> Option<WavePlace> {
    let r = view.rollout.as_ref()?;
    let (i, w) = r
        .waves
        .iter()
        .enumerate()
        .find(|(_, w)| w.tenants.iter().any(|x| x == tenant))?;
    Some((i, w.name.clone(), r.held.contains_key(tenant)))
}

/// The agent's last attempt at `tenant`, when the agent's view was read.
fn attempt<'a>(view: &'a View, tenant: &str) -> Option<&'a Attempt> {
    view.agent.as_ref().ok().and_then(|a| a.tenants.get(tenant))
}

/// Why `tenant` is suspended, if it is.
fn suspended(view: &View, tenant: &str) -> Option<String> {
    view.flags.get(tenant).and_then(|f| f.suspended.clone())
}

/// `-o json`: one object per selected tenant.
fn json_rows(view: &View, selected: &[(&String, &Result<Summary, InventoryError>)]) -> String {
    let rows: Vec<serde_json::Value> = selected
        .iter()
        .map(|(t, inv)| match inv {
            Ok(inv) => {
                let rollout = wave_of(view, t).map(|(i, name, held)| {
                    serde_json::json!({
                        "commit": view.rollout.as_ref().map(|r| r.commit.clone()),
                        "wave": i + 1,
                        "waveName": name,
                        "held": held,
                    })
                });
                serde_json::json!({
                    "tenant": t,
                    "status": inv.status,
                    "attempt": attempt(view, t),
                    "suspended": suspended(view, t),
                    "rollout": rollout,
                    "lastSyncAge": last_sync(inv, attempt(view, t))
                        .map(|u| (crate::agent::metrics::unix_now() - u).max(0)),
                })
            }
            Err(e) => serde_json::json!({"tenant": t, "error": e.to_string()}),
        })
        .collect();
    let mut out = serde_json::to_string_pretty(&rows).unwrap_or_default();
    out.push('\n');
    out
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

/// The agent line above the table, naming the agent namespace read.
fn agent_line(namespace: &str, agent: &Result<AgentStatus, String>) -> String {
    match agent {
        Ok(a) => format!(
            "agent (namespace {namespace}): last fetched commit {} ({}), last fetch error: {}\n",
            a.fetched_commit.as_deref().unwrap_or("-"),
            age(a.fetched_at),
            a.fetch_error.as_deref().unwrap_or("none"),
        ),
        Err(e) => format!(
            "agent (namespace {namespace}): not reachable ({e}); showing the inventories alone\n"
        ),
    }
}

/// Unix time of the tenant's last sync: the agent's last attempt when known, else the latest
/// condition transition recorded in the inventory (an unchanged sync writes nothing).
fn last_sync(inv: &Summary, attempt: Option<&Attempt>) -> Option<i64> {
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
