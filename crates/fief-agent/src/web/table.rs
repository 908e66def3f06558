//! The tenant table: one row per tenant with its state, and the search, filters, sort and
//! paging of `/ui/tenants`.
//!
//! In: what the agent holds about every tenant ([`Inputs`]: the revision's tenant files, the
//! sync history, the health verdicts, suspended and syncing tenants, wave membership) and a
//! request's [`Filter`]. Out: the rows ([`rows`], one pass over the fleet) and the page of
//! rows a filter selects ([`select`]: one pass over the rows, then a sort of the matches).
//! Pure: nothing here locks, reads the cluster or allocates per request beyond the rows.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use serde::Serialize;

use super::history::{Entry, History, Kind};
use fief_core::model::{Tenant, Tenants};
use fief_core::status::Outcome;
use fief_core::status::agent::HealthState;

/// Rows per page.
pub const PAGE: usize = 100;

/// A tenant's state as the web view shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Synced at its commit and healthy (or found as last applied at start).
    Ready,
    /// Syncing, waiting for health, or not synced yet.
    Reconciling,
    /// Applied, but an object failed or is still unhealthy after its timeout.
    Stalled,
    /// Its last sync failed, or it does not render or validate.
    Failed,
    /// Suspended with `fief suspend`: left alone.
    Suspended,
    /// Its tenant file left git; its objects are left running.
    Orphaned,
    /// Its file now names another cluster, and this cluster still runs what it left here
    /// (until `fief retire`).
    Moved,
    /// Another cluster's agent owns it (`spec.cluster`).
    Skipped,
    /// With shards: another replica of this cluster's agent syncs it (its view shows it).
    Elsewhere,
}

impl State {
    /// Every state, in the order the overview counts them.
    pub const ALL: [State; 9] = [
        State::Ready,
        State::Reconciling,
        State::Stalled,
        State::Failed,
        State::Suspended,
        State::Orphaned,
        State::Moved,
        State::Skipped,
        State::Elsewhere,
    ];

    /// The state as the view writes it: `ready`, `reconciling`, ...
    pub const fn as_str(self) -> &'static str {
        match self {
            State::Ready => "ready",
            State::Reconciling => "reconciling",
            State::Stalled => "stalled",
            State::Failed => "failed",
            State::Suspended => "suspended",
            State::Orphaned => "orphaned",
            State::Moved => "moved",
            State::Skipped => "skipped",
            State::Elsewhere => "elsewhere",
        }
    }

    /// The state written as [`State::as_str`] does (any case).
    pub fn parse(text: &str) -> Option<State> {
        State::ALL
            .into_iter()
            .find(|s| s.as_str().eq_ignore_ascii_case(text))
    }
}

/// What the rows are built from: the revision's tenant files (`'a`, which the rows borrow)
/// and what the agent holds about them (`'h`, copied into the rows).
pub struct Inputs<'a, 'h> {
    /// The revision's tenant files (none before the first fetch).
    pub tenants: Option<&'a Tenants>,
    /// This agent's cluster (`--cluster`).
    pub cluster: &'h str,
    /// Each tenant's recent syncs.
    pub history: &'h History,
    /// The health gate's verdicts.
    pub verdicts: &'h HashMap<String, HealthState>,
    /// Suspended tenants (who, when, why).
    pub suspended: &'h BTreeMap<String, String>,
    /// Tenants being synced now.
    pub syncing: &'h HashSet<String>,
    /// Each tenant's wave under fief.yaml `rollout.waves` (empty without waves).
    pub waves: &'h HashMap<String, Arc<str>>,
    /// With shards: whether this replica syncs a tenant (none: it syncs every tenant).
    pub mine: Option<&'h (dyn Fn(&str) -> bool + Sync)>,
}

/// One tenant's row, borrowing its name and tenant file from the revision.
#[derive(Debug, Clone, Serialize)]
pub struct Row<'a> {
    /// The tenant (its file's name).
    pub name: Cow<'a, str>,
    /// Its parsed tenant file (none when it does not parse, or for an orphan).
    #[serde(skip)]
    pub tenant: Option<&'a Tenant>,
    /// Where it stands.
    pub state: State,
    /// `spec.cluster` (empty when its file does not parse).
    pub cluster: Cow<'a, str>,
    /// Its wave under fief.yaml `rollout.waves`.
    #[serde(serialize_with = "text")]
    pub wave: Option<Arc<str>>,
    /// The commit it last synced at.
    #[serde(serialize_with = "text")]
    pub commit: Option<Arc<str>>,
    /// Unix time of its last sync (0: none).
    pub at: i64,
    /// What its last sync did (`applied`, `failed`, ..., `verified`).
    pub outcome: Option<&'static str>,
    /// The first line of its last error.
    pub error: Option<String>,
}

impl Row<'_> {
    /// The row holding its own copies (without the tenant file).
    pub fn into_owned(self) -> Row<'static> {
        Row {
            name: Cow::Owned(self.name.into_owned()),
            tenant: None,
            state: self.state,
            cluster: Cow::Owned(self.cluster.into_owned()),
            wave: self.wave,
            commit: self.commit,
            at: self.at,
            outcome: self.outcome,
            error: self.error,
        }
    }
}

/// A shared string, serialized as text.
fn text<S: serde::Serializer>(value: &Option<Arc<str>>, s: S) -> Result<S::Ok, S::Error> {
    value.as_deref().serialize(s)
}

/// The state of a tenant from what the agent knows of it.
pub fn state_of(
    tenant: Option<&Tenant>,
    cluster: &str,
    suspended: bool,
    last: Option<&Entry>,
    syncing: bool,
    verdict: Option<HealthState>,
) -> State {
    let Some(tenant) = tenant else {
        return State::Failed;
    };
    let kind = last.map(|e| e.kind);
    if tenant.spec.cluster != cluster {
        return match kind {
            Some(Kind::Synced(Outcome::Moved)) => State::Moved,
            _ => State::Skipped,
        };
    }
    if suspended {
        return State::Suspended;
    }
    if matches!(kind, Some(Kind::Synced(Outcome::Failed | Outcome::Invalid))) {
        return State::Failed;
    }
    if syncing {
        return State::Reconciling;
    }
    match verdict {
        Some(HealthState::Stalled) => State::Stalled,
        Some(HealthState::Reconciling) => State::Reconciling,
        Some(HealthState::Ready) => State::Ready,
        None => match kind {
            Some(Kind::Verified | Kind::Synced(Outcome::Applied | Outcome::Purged)) => State::Ready,
            _ => State::Reconciling,
        },
    }
}

/// The word a history entry's kind is written as.
pub fn kind_str(kind: Kind) -> &'static str {
    match kind {
        Kind::Synced(o) => o.as_str(),
        Kind::Verified => "verified",
    }
}

/// One row per tenant of the revision (sorted by name), then the orphaned tenants.
pub fn rows<'a>(inputs: &Inputs<'a, '_>) -> Vec<Row<'a>> {
    let mut out = Vec::new();
    for (name, parsed) in inputs.tenants.into_iter().flatten() {
        let tenant = parsed.as_ref().ok().map(Arc::as_ref);
        out.push(row(inputs, Cow::Borrowed(name.as_str()), tenant));
    }
    let mut orphans: Vec<String> = inputs
        .history
        .orphaned()
        .into_iter()
        .filter(|t| !inputs.tenants.is_some_and(|all| all.contains_key(t)))
        .collect();
    orphans.sort();
    for name in orphans {
        out.push(orphan(inputs, name));
    }
    out
}

/// The row of an orphaned tenant (its file left git).
pub fn orphan<'a>(inputs: &Inputs<'a, '_>, name: String) -> Row<'a> {
    let mut r = row(inputs, Cow::Owned(name), None);
    r.state = State::Orphaned;
    r
}

/// The row of one tenant (`tenant`: its parsed file, if it parses).
pub fn row<'a>(inputs: &Inputs<'a, '_>, name: Cow<'a, str>, tenant: Option<&'a Tenant>) -> Row<'a> {
    let last = inputs.history.last(&name);
    let mut state = state_of(
        tenant,
        inputs.cluster,
        inputs.suspended.contains_key(name.as_ref()),
        last,
        inputs.syncing.contains(name.as_ref()),
        inputs.verdicts.get(name.as_ref()).copied(),
    );
    let here = !matches!(state, State::Skipped | State::Moved);
    if here && inputs.mine.is_some_and(|mine| !mine(&name)) {
        state = State::Elsewhere;
    }
    Row {
        wave: inputs.waves.get(name.as_ref()).cloned(),
        name,
        tenant,
        state,
        cluster: Cow::Borrowed(tenant.map_or("", |t| t.spec.cluster.as_str())),
        commit: last.map(|e| e.commit.clone()),
        at: last.map_or(0, |e| e.at),
        outcome: last.map(|e| kind_str(e.kind)),
        error: last.and_then(|e| e.error.as_deref()).map(|e| {
            e.lines()
                .next()
                .unwrap_or_default()
                .chars()
                .take(160)
                .collect()
        }),
    }
}

/// How the table is sorted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sort {
    /// By name.
    #[default]
    Name,
    /// By state (in [`State::ALL`]'s order), then name.
    State,
    /// Last synced first.
    Synced,
    /// By wave name, then name.
    Wave,
}

impl Sort {
    /// `name`, `state`, `synced` or `wave`; anything else is by name.
    pub fn parse(text: &str) -> Sort {
        match text {
            "state" => Sort::State,
            "synced" => Sort::Synced,
            "wave" => Sort::Wave,
            _ => Sort::Name,
        }
    }

    /// The word [`Sort::parse`] reads.
    pub const fn as_str(self) -> &'static str {
        match self {
            Sort::Name => "name",
            Sort::State => "state",
            Sort::Synced => "synced",
            Sort::Wave => "wave",
        }
    }
}

/// A request's search, filters, sort and page (1-based).
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Part of the tenant's name (any case).
    pub q: String,
    /// Only tenants in this state.
    pub state: Option<State>,
    /// Only tenants of this wave.
    pub wave: Option<String>,
    /// Only tenants of this cluster.
    pub cluster: Option<String>,
    /// Only tenants carrying this label (key, value).
    pub label: Option<(String, String)>,
    /// The order.
    pub sort: Sort,
    /// The page, from 1.
    pub page: usize,
}

impl Filter {
    /// Whether `row` matches.
    fn matches(&self, row: &Row<'_>, q: &str) -> bool {
        (q.is_empty() || row.name.contains(q))
            && self.state.is_none_or(|s| row.state == s)
            && self
                .wave
                .as_deref()
                .is_none_or(|w| row.wave.as_deref() == Some(w))
            && self.cluster.as_deref().is_none_or(|c| row.cluster == c)
            && self
                .label
                .as_ref()
                .is_none_or(|(k, v)| row.tenant.and_then(|t| t.metadata.labels.get(k)) == Some(v))
    }
}

/// One page of the rows a filter selects.
#[derive(Debug)]
pub struct Page<'r, 'a> {
    /// The rows of this page.
    pub rows: Vec<&'r Row<'a>>,
    /// How many rows matched.
    pub matched: usize,
    /// This page (from 1; the last one when the filter asked past it).
    pub page: usize,
    /// Pages in all (at least 1).
    pub pages: usize,
}

/// The page of `rows` `filter` selects.
pub fn select<'r, 'a>(rows: &'r [Row<'a>], filter: &Filter) -> Page<'r, 'a> {
    let q = filter.q.trim().to_lowercase();
    let mut matched: Vec<&Row<'a>> = rows.iter().filter(|r| filter.matches(r, &q)).collect();
    match filter.sort {
        // Rows come sorted by name already (the orphans after them).
        Sort::Name => matched.sort_by(|a, b| a.name.cmp(&b.name)),
        Sort::State => matched.sort_by_key(|r| r.state),
        Sort::Synced => matched.sort_by_key(|r| std::cmp::Reverse(r.at)),
        Sort::Wave => matched.sort_by(|a, b| a.wave.cmp(&b.wave)),
    }
    let pages = matched.len().div_ceil(PAGE).max(1);
    let page = filter.page.clamp(1, pages);
    let total = matched.len();
    let rows = matched
        .into_iter()
        .skip((page - 1) * PAGE)
        .take(PAGE)
        .collect();
    Page {
        rows,
        matched: total,
        page,
        pages,
    }
}

/// Tenants by state.
pub fn counts(rows: &[Row<'_>]) -> BTreeMap<State, usize> {
    let mut out: BTreeMap<State, usize> = State::ALL.into_iter().map(|s| (s, 0)).collect();
    for r in rows {
        *out.entry(r.state).or_default() += 1;
    }
    out
}

#[cfg(test)]
mod tests;
