//! The fleet as one request sees it: the revision and every tenant's row, gathered from the
//! agent's shared state in one pass.
//!
//! In: the shared state (each lock taken briefly: the gate's verdicts, the suspended and
//! syncing tenants are copied out, the history is held while the rows are built). Out: a
//! [`Fleet`]. No cluster or git call.

use std::collections::HashSet;
use std::sync::Arc;

use super::table::{Inputs, Row, row, rows};
use super::{Web, lock};
use crate::Shared;
use crate::source_loop::Revision;

/// The revision and the rows built from it.
pub(super) struct Fleet {
    /// The last revision read from git (none before the first fetch).
    pub rev: Option<Arc<Revision>>,
    /// Every tenant's row, sorted by name, orphaned tenants last.
    pub rows: Vec<Row>,
}

/// Every tenant's row.
pub(super) fn fleet(shared: &Shared, web: &Web) -> Fleet {
    gather(shared, web, |inputs| rows(inputs))
}

/// One tenant's row (none when the revision has no such tenant and it is not orphaned).
pub(super) fn one(shared: &Shared, web: &Web, name: &str) -> (Option<Arc<Revision>>, Option<Row>) {
    let fleet = gather(shared, web, |inputs| {
        match inputs.tenants.and_then(|t| t.get(name)) {
            Some(parsed) => {
                let tenant = parsed.as_ref().ok().map(Arc::as_ref);
                vec![row(inputs, name, tenant)]
            }
            None if inputs.history.orphaned().iter().any(|t| t == name) => {
                let mut r = row(inputs, name, None);
                r.state = super::table::State::Orphaned;
                vec![r]
            }
            None => Vec::new(),
        }
    });
    (fleet.rev, fleet.rows.into_iter().next())
}

/// Build rows with `build` from the shared state.
fn gather(shared: &Shared, web: &Web, build: impl FnOnce(&Inputs<'_>) -> Vec<Row>) -> Fleet {
    let rev = web.revision();
    let waves = web.waves(rev.as_deref());
    let verdicts = shared.gate.verdict_states();
    let suspended = crate::requests::suspended(shared);
    let syncing: HashSet<String> = lock(&shared.in_flight).clone();
    let history = lock(&web.history);
    let inputs = Inputs {
        tenants: rev.as_ref().map(|r| &r.repo.tenants),
        cluster: &web.cluster,
        history: &history,
        verdicts: &verdicts,
        suspended: &suspended,
        syncing: &syncing,
        waves: &waves,
    };
    let rows = build(&inputs);
    drop(history);
    Fleet { rev, rows }
}
