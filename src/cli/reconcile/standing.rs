//! Where each tenant stands once the agent answered a `fief reconcile`, read from its
//! inventory's status conditions, not from the answer: the answer says whether the agent
//! synced, and a held prune or a wait for health is synced without being Ready.
//!
//! In: the inventories (and suspensions) in the agent namespace, read after the answer until
//! no tenant is pending or the deadline passes. Out: a [`Standing`] per tenant, the exit code
//! ([`exit_code`]) and the text printed ([`report`]).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::cli::colour::{self, Style};
use crate::cli::{CliError, EXIT_INVALID, EXIT_OK, EXIT_PRUNE_HELD, EXIT_UNHEALTHY};
use crate::core::condition::{ConditionType, Reason};
use crate::core::inventory::{Inventory, InventoryError};
use crate::core::status::moved::moved_to;
use crate::kube::ClusterError;
use crate::kube::inventory_store::{Walk, get_inventories};
use crate::kube::tenant_flags::load_flags;

/// How long a `Ready` the sync wrote (reason `Applied`, no health verdict yet) is watched
/// before it counts: the agent's health gate writes `WaitingForHealth` about a second after a
/// sync whose objects are not healthy at once, and writes nothing when they are.
const SETTLE: Duration = Duration::from_secs(2);
/// How often pending tenants are read again.
const POLL: Duration = Duration::from_millis(500);

/// Why a tenant was left alone by the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LeftAlone {
    /// `fief suspend`.
    Suspended,
    /// The tenant file names another cluster.
    Moved,
    /// The tenant file left git.
    Orphaned,
}

impl LeftAlone {
    /// The word printed.
    fn as_str(self) -> &'static str {
        match self {
            LeftAlone::Suspended => "Suspended",
            LeftAlone::Moved => "Moved",
            LeftAlone::Orphaned => "Orphaned",
        }
    }
}

/// Where one tenant stands, from its inventory's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Standing {
    /// `Ready=True`. `judged`: the health gate's verdict (or one on record); else the sync's
    /// own `Ready`, which the gate may still replace with a wait for health.
    Ready {
        /// The Ready message.
        message: String,
        /// Whether a health verdict stands behind it.
        judged: bool,
    },
    /// `Stalled=True`, reason `PruneHeld`: objects that left git still run.
    PruneHeld(String),
    /// `Reconciling=True`, reason `WaitingForHealth`.
    WaitingForHealth(String),
    /// `Reconciling=True` otherwise: a sync is under way, components wait for those they
    /// depend on, or no sync finished yet. The reason as written, and the message.
    Syncing(String, String),
    /// `Stalled=True`, reason `Unhealthy`: applied, objects failed or timed out.
    Unhealthy(String),
    /// Stalled or not Ready for another reason (render, apply, access), or unreadable.
    Failed {
        /// The condition's reason, as written.
        reason: String,
        /// What went wrong.
        message: String,
    },
    /// Not synced here, on purpose.
    LeftAlone(LeftAlone, String),
}

/// The first word of the agent's answer (`fief.dev/reconcileResult`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Answer {
    /// Every asked tenant synced.
    Ready,
    /// A tenant failed, or git could not be fetched or read.
    Failed,
    /// Every asked tenant is suspended: nothing synced.
    Suspended,
    /// A word this version does not know (another agent version): the standings decide.
    Other,
}

impl Answer {
    /// Read the word before the first `:` of the agent's answer.
    pub(super) fn of(result: &str) -> Answer {
        match result.split(':').next().map(str::trim) {
            Some("Ready") => Answer::Ready,
            Some("Failed") => Answer::Failed,
            Some("Suspended") => Answer::Suspended,
            _ => Answer::Other,
        }
    }
}

impl Standing {
    /// The standing the inventory's status says; `suspended` says why, when it is.
    pub(super) fn of(inv: &Inventory, suspended: Option<&str>) -> Standing {
        if let Some(why) = suspended {
            return Standing::LeftAlone(LeftAlone::Suspended, format!("suspended {why}"));
        }
        if let Some(to) = moved_to(inv) {
            return Standing::LeftAlone(LeftAlone::Moved, format!("moved to cluster {to}"));
        }
        let holds = |t: ConditionType| inv.status.condition(t).filter(|c| c.is_true());
        if let Some(c) = holds(ConditionType::Orphaned) {
            return Standing::LeftAlone(LeftAlone::Orphaned, c.message.clone());
        }
        if let Some(c) = holds(ConditionType::Stalled) {
            return if c.has_reason(Reason::PruneHeld) {
                Standing::PruneHeld(c.message.clone())
            } else if c.has_reason(Reason::Unhealthy) {
                Standing::Unhealthy(c.message.clone())
            } else {
                failed(&c.reason, &c.message, inv)
            };
        }
        if let Some(c) = holds(ConditionType::Reconciling) {
            return if c.has_reason(Reason::WaitingForHealth) {
                Standing::WaitingForHealth(c.message.clone())
            } else {
                Standing::Syncing(c.reason.clone(), c.message.clone())
            };
        }
        match inv.status.condition(ConditionType::Ready) {
            Some(c) if c.is_true() => Standing::Ready {
                message: c.message.clone(),
                judged: crate::core::health::holds_verdict(&inv.status),
            },
            Some(c) => failed(&c.reason, &c.message, inv),
            None => Standing::Syncing(
                Reason::Progressing.to_string(),
                "not synced yet".to_string(),
            ),
        }
    }

    /// Whether to read the tenant again: it waits for health or a sync, or its `Ready` has
    /// no verdict behind it and [`SETTLE`] has not passed (`settled`).
    fn pending(&self, settled: bool) -> bool {
        match self {
            Standing::WaitingForHealth(_) | Standing::Syncing(..) => true,
            Standing::Ready { judged, .. } => !judged && !settled,
            _ => false,
        }
    }

    /// The exit code this standing asks for; a tenant left alone fails a request for it
    /// alone (`single`), not one for every tenant.
    fn code(&self, single: bool) -> u8 {
        match self {
            Standing::Ready { .. } => EXIT_OK,
            Standing::PruneHeld(_) => EXIT_PRUNE_HELD,
            Standing::WaitingForHealth(_) | Standing::Syncing(..) | Standing::Unhealthy(_) => {
                EXIT_UNHEALTHY
            }
            Standing::Failed { .. } => EXIT_INVALID,
            Standing::LeftAlone(..) if single => EXIT_INVALID,
            Standing::LeftAlone(..) => EXIT_OK,
        }
    }

    /// The word printed (`Stalled (PruneHeld)`), its style, and the message.
    fn words(&self) -> (String, Style, &str) {
        let reason = |t: ConditionType, r: Reason| format!("{t} ({r})");
        match self {
            Standing::Ready { message, .. } => ("Ready".to_string(), Style::Good, message),
            Standing::PruneHeld(m) => (
                reason(ConditionType::Stalled, Reason::PruneHeld),
                Style::Bad,
                m,
            ),
            Standing::WaitingForHealth(m) => (
                reason(ConditionType::Reconciling, Reason::WaitingForHealth),
                Style::Warn,
                m,
            ),
            Standing::Syncing(r, m) => (
                format!("{} ({r})", ConditionType::Reconciling),
                Style::Warn,
                m,
            ),
            Standing::Unhealthy(m) => (
                reason(ConditionType::Stalled, Reason::Unhealthy),
                Style::Bad,
                m,
            ),
            Standing::Failed { reason, message } => {
                (format!("Failed ({reason})"), Style::Bad, message)
            }
            Standing::LeftAlone(why, m) => (why.as_str().to_string(), Style::Warn, m),
        }
    }
}

/// A failure, with the inventory's last error when it says more than the condition.
fn failed(reason: &str, message: &str, inv: &Inventory) -> Standing {
    let message = match &inv.status.last_error {
        Some(e) if message.is_empty() => e.clone(),
        _ => message.to_string(),
    };
    Standing::Failed {
        reason: reason.to_string(),
        message,
    }
}

/// The exit code of a request: 1 when a tenant failed, else 4 when a prune is held, else 5
/// when a tenant is not healthy (or still waiting), else 0. An answer that says the agent
/// failed (git could not be fetched) or synced nothing is 1 unless a tenant explains it.
pub(super) fn exit_code(
    answer: Answer,
    standings: &BTreeMap<String, Standing>,
    single: bool,
) -> u8 {
    let rank = |code: u8| match code {
        EXIT_INVALID => 3,
        EXIT_PRUNE_HELD => 2,
        EXIT_UNHEALTHY => 1,
        _ => 0,
    };
    let code = standings
        .values()
        .map(|s| s.code(single))
        .max_by_key(|c| rank(*c))
        .unwrap_or(EXIT_OK);
    let agent_failed = matches!(answer, Answer::Failed | Answer::Suspended);
    if agent_failed && rank(code) < rank(EXIT_PRUNE_HELD) {
        EXIT_INVALID
    } else {
        code
    }
}

/// The text on stdout: one line per tenant (for every tenant, only those not Ready), then for
/// every tenant a summary; the agent's answer when it failed and no tenant says why.
pub(super) fn report(
    what: &str,
    result: &str,
    standings: &BTreeMap<String, Standing>,
    code: u8,
    single: bool,
    took: Duration,
) -> String {
    let on = colour::stdout();
    let secs = format!("({:.1}s)", took.as_secs_f64());
    let mut out = String::new();
    for (tenant, s) in standings {
        if !single && matches!(s, Standing::Ready { .. }) {
            continue;
        }
        let (word, style, message) = s.words();
        let message = message.lines().next().unwrap_or("");
        let line = format!("{}: {message}", colour::paint(on, style, &word));
        if single {
            out.push_str(&format!("tenant {tenant}: {line} {secs}\n"));
        } else {
            out.push_str(&format!("{tenant}: {line}\n"));
        }
    }
    let unexplained =
        code == EXIT_INVALID && !standings.values().any(|s| s.code(single) == EXIT_INVALID);
    if unexplained {
        let failed = colour::paint(on, Style::Bad, "Failed");
        out.push_str(&format!(
            "{what}: {failed}: the agent answered: {result} {secs}\n"
        ));
    } else if !single || standings.is_empty() {
        out.push_str(&format!(
            "{what}: {} {secs}\n",
            summary(on, standings, code)
        ));
    }
    out
}

/// `Ready: 3 tenant(s) Ready` or `PruneHeld: 2 Ready, 1 Stalled (PruneHeld)`.
fn summary(on: bool, standings: &BTreeMap<String, Standing>, code: u8) -> String {
    let (word, style) = match code {
        EXIT_OK => ("Ready", Style::Good),
        EXIT_PRUNE_HELD => ("PruneHeld", Style::Bad),
        EXIT_UNHEALTHY => ("NotHealthy", Style::Bad),
        _ => ("Failed", Style::Bad),
    };
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for s in standings.values() {
        *counts.entry(s.words().0).or_default() += 1;
    }
    let counts: Vec<String> = counts.iter().map(|(w, n)| format!("{n} {w}")).collect();
    let counts = if counts.is_empty() {
        "no tenant inventory to judge".to_string()
    } else {
        counts.join(", ")
    };
    format!("{}: {counts}", colour::paint(on, style, word))
}

/// Read the tenants' standings until none is pending or `deadline` passes; tell once on
/// stderr when tenants wait for health.
pub(super) async fn settle(
    client: &kube::Client,
    namespace: &str,
    tenant: Option<&str>,
    deadline: Instant,
    timeout: Duration,
) -> Result<BTreeMap<String, Standing>, CliError> {
    let answered = Instant::now();
    let mut standings = read(client, namespace, tenant, None).await?;
    let mut told = false;
    loop {
        let settled = answered.elapsed() >= SETTLE;
        let pending: Vec<String> = standings
            .iter()
            .filter(|(_, s)| s.pending(settled))
            .map(|(t, _)| t.clone())
            .collect();
        if pending.is_empty() || Instant::now() >= deadline {
            return Ok(standings);
        }
        let waiting: Vec<&str> = standings
            .iter()
            .filter(|(_, s)| matches!(s, Standing::WaitingForHealth(_)))
            .map(|(t, _)| t.as_str())
            .collect();
        if !told && !waiting.is_empty() {
            eprintln!(
                "waiting for {} to become healthy (--timeout {}s in all)",
                waiting.join(", "),
                timeout.as_secs()
            );
            told = true;
        }
        tokio::time::sleep(POLL).await;
        standings.extend(read(client, namespace, tenant, Some(&pending)).await?);
    }
}

/// The standings of `tenant`, else of the `only` tenants, else of every tenant (with their
/// suspensions; their inventories read one at a time, each dropped once judged).
async fn read(
    client: &kube::Client,
    namespace: &str,
    tenant: Option<&str>,
    only: Option<&[String]>,
) -> Result<BTreeMap<String, Standing>, ClusterError> {
    let named = match (tenant, only) {
        (Some(t), _) => get_inventories(client, namespace, &[t.to_string()]).await?,
        (None, Some(names)) => get_inventories(client, namespace, names).await?,
        (None, None) => return read_every(client, namespace).await,
    };
    Ok(named
        .into_iter()
        .map(|(t, inv)| {
            let s = standing(&inv, None);
            (t, s)
        })
        .collect())
}

/// The standing of every tenant with an inventory, with its suspension.
async fn read_every(
    client: &kube::Client,
    namespace: &str,
) -> Result<BTreeMap<String, Standing>, ClusterError> {
    let flags = load_flags(client, namespace).await?;
    let mut walk = Walk::new(client, namespace);
    let mut standings = BTreeMap::new();
    while let Some(one) = walk.next().await? {
        for (t, inv) in one.iter() {
            let suspended = flags.get(t).and_then(|f| f.suspended.as_deref());
            standings.insert(t.clone(), standing(inv, suspended));
        }
    }
    Ok(standings)
}

/// The standing of an inventory as read; an unreadable one is a failure.
fn standing(inv: &Result<Inventory, InventoryError>, suspended: Option<&str>) -> Standing {
    match inv {
        Ok(inv) => Standing::of(inv, suspended),
        Err(e) => Standing::Failed {
            reason: "UnreadableInventory".to_string(),
            message: e.to_string(),
        },
    }
}

#[cfg(test)]
mod tests;
