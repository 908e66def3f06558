//! The fleet as one request sees it: the revision and what the agent holds about every
//! tenant, gathered from the shared state, and the rows built from them.
//!
//! In: the shared state (each lock taken briefly: the gate's verdicts, the suspended and
//! syncing tenants are copied out; the history is held only while the rows are built). Out: a
//! [`Held`] whose rows borrow the revision's tenant files. No cluster or git call.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use super::table::{Inputs, Row, orphan, row, rows};
use super::{Waves, Web, lock};
use crate::Shared;
use fief_core::status::agent::HealthState;
use fief_source::revision::Revision;

/// What a request reads, copied out of the shared state.
pub(super) struct Held<'w> {
    web: &'w Web,
    /// The last revision read from git (none before the first fetch).
    pub rev: Option<Arc<Revision>>,
    waves: Waves,
    verdicts: HashMap<String, HealthState>,
    suspended: BTreeMap<String, String>,
    syncing: HashSet<String>,
    shards: Option<Arc<crate::shards::Ownership>>,
}

impl<'w> Held<'w> {
    /// What the agent holds now.
    pub(super) fn gather(shared: &Shared, web: &'w Web) -> Held<'w> {
        let rev = web.revision();
        Held {
            web,
            waves: web.waves(rev.as_deref()),
            rev,
            verdicts: shared.gate.verdict_states(),
            suspended: crate::requests::suspended(shared),
            syncing: shared.work.syncing(),
            shards: shared.shards.clone(),
        }
    }

    /// Every tenant's row, sorted by name, orphaned tenants last.
    pub(super) fn rows(&self) -> Vec<Row<'_>> {
        self.build(|inputs| rows(inputs))
    }

    /// One tenant's row (none when the revision has no such tenant and it is not orphaned).
    pub(super) fn one(&self, name: &str) -> Option<Row<'_>> {
        self.build(
            |inputs| match inputs.tenants.and_then(|t| t.get_key_value(name)) {
                Some((key, parsed)) => {
                    let tenant = parsed.as_ref().ok().map(Arc::as_ref);
                    vec![row(inputs, Cow::Borrowed(key.as_str()), tenant)]
                }
                None if inputs.history.orphaned().iter().any(|t| t == name) => {
                    vec![orphan(inputs, name.to_string())]
                }
                None => Vec::new(),
            },
        )
        .pop()
    }

    fn build<'a>(&'a self, f: impl FnOnce(&Inputs<'a, '_>) -> Vec<Row<'a>>) -> Vec<Row<'a>> {
        let history = lock(&self.web.history);
        let mine = |t: &str| self.shards.as_ref().is_none_or(|o| o.owns(t));
        f(&Inputs {
            tenants: self.rev.as_ref().map(|r| &r.repo.tenants),
            cluster: &self.web.cluster,
            history: &history,
            verdicts: &self.verdicts,
            suspended: &self.suspended,
            syncing: &self.syncing,
            waves: &self.waves,
            mine: self
                .shards
                .is_some()
                .then_some(&mine as &(dyn Fn(&str) -> bool + Sync)),
        })
    }
}
