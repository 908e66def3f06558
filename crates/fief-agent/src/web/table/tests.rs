use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use super::*;
use fief_core::model::Repo;
use fief_core::snapshot::Snapshot;
use fief_core::status::TenantReport;

fn tenant_file(name: &str, cluster: &str, tier: &str) -> (String, String) {
    (
        format!("tenants/{name}.yaml"),
        format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\n  labels: {{tier: {tier}}}\nspec:\n  cluster: {cluster}\n"
        ),
    )
}

fn repo(files: Vec<(String, String)>) -> Repo {
    Repo::load(Arc::new(Snapshot::from_files(files)))
}

struct Held {
    history: History,
    verdicts: HashMap<String, HealthState>,
    suspended: BTreeMap<String, String>,
    syncing: HashSet<String>,
    waves: HashMap<String, Arc<str>>,
}

impl Held {
    fn new() -> Held {
        Held {
            history: History::default(),
            verdicts: HashMap::new(),
            suspended: BTreeMap::new(),
            syncing: HashSet::new(),
            waves: HashMap::new(),
        }
    }

    fn synced(&mut self, tenant: &str, outcome: Outcome, at: i64) {
        let mut r = TenantReport::new(tenant, outcome);
        if outcome == Outcome::Invalid {
            r.fail(
                fief_core::status::Failure::Render,
                "components/app/templates/app.yaml:3: boom",
            );
        }
        self.history.record(&r, "c1", at);
    }

    fn rows<'a>(&self, repo: &'a Repo) -> Vec<Row<'a>> {
        rows(&Inputs {
            tenants: Some(&repo.tenants),
            cluster: "default",
            history: &self.history,
            verdicts: &self.verdicts,
            suspended: &self.suspended,
            syncing: &self.syncing,
            waves: &self.waves,
            mine: None,
        })
    }
}

fn state(rows: &[Row<'_>], name: &str) -> State {
    rows.iter()
        .find(|r| r.name == name)
        .map(|r| r.state)
        .unwrap_or_else(|| panic!("no row {name}"))
}

#[test]
fn each_tenant_gets_the_state_of_what_the_agent_knows() {
    let repo = repo(vec![
        tenant_file("ready", "default", "a"),
        tenant_file("verified", "default", "a"),
        tenant_file("stalled", "default", "a"),
        tenant_file("invalid", "default", "a"),
        tenant_file("paused", "default", "a"),
        tenant_file("syncing", "default", "a"),
        tenant_file("pending", "default", "a"),
        tenant_file("elsewhere", "eu-2", "a"),
        tenant_file("moved-away", "eu-2", "a"),
        ("tenants/broken.yaml".into(), "spec: [".into()),
    ]);
    let mut held = Held::new();
    held.synced("ready", Outcome::Applied, 1);
    held.history.verified("verified", "c1", 1);
    held.synced("stalled", Outcome::Applied, 1);
    held.verdicts.insert("stalled".into(), HealthState::Stalled);
    held.synced("invalid", Outcome::Invalid, 1);
    held.synced("paused", Outcome::Applied, 1);
    held.suspended.insert("paused".into(), "bob".into());
    held.synced("syncing", Outcome::Applied, 1);
    held.syncing.insert("syncing".into());
    held.synced("gone", Outcome::Orphaned, 1);
    held.synced("moved-away", Outcome::Moved, 1);
    let rows = held.rows(&repo);
    for (name, want) in [
        ("ready", State::Ready),
        ("verified", State::Ready),
        ("stalled", State::Stalled),
        ("invalid", State::Failed),
        ("broken", State::Failed),
        ("paused", State::Suspended),
        ("syncing", State::Reconciling),
        ("pending", State::Reconciling),
        ("elsewhere", State::Skipped),
        ("moved-away", State::Moved),
        ("gone", State::Orphaned),
    ] {
        assert_eq!(state(&rows, name), want, "{name}");
    }
    let invalid = rows.iter().find(|r| r.name == "invalid").expect("row");
    assert_eq!(
        invalid.error.as_deref(),
        Some("components/app/templates/app.yaml:3: boom")
    );
    assert_eq!(rows.last().map(|r| r.name.as_ref()), Some("gone"));
    let c = counts(&rows);
    assert_eq!(c[&State::Ready], 2);
    assert_eq!(c[&State::Failed], 2);
}

#[test]
fn with_shards_a_tenant_another_replica_syncs_is_shown_as_elsewhere() {
    let repo = repo(vec![
        tenant_file("mine", "default", "a"),
        tenant_file("theirs", "default", "a"),
        tenant_file("abroad", "eu-2", "a"),
    ]);
    let held = Held::new();
    let mine = |t: &str| t == "mine";
    let rows = rows(&Inputs {
        tenants: Some(&repo.tenants),
        cluster: "default",
        history: &held.history,
        verdicts: &held.verdicts,
        suspended: &held.suspended,
        syncing: &held.syncing,
        waves: &held.waves,
        mine: Some(&mine),
    });
    assert_eq!(state(&rows, "mine"), State::Reconciling);
    assert_eq!(state(&rows, "theirs"), State::Elsewhere);
    assert_eq!(
        state(&rows, "abroad"),
        State::Skipped,
        "another cluster's stays skipped"
    );
}

#[test]
fn filters_combine_and_pages_hold_a_hundred_rows() {
    let mut files = Vec::new();
    for i in 0..250 {
        let tier = if i % 2 == 0 { "gold" } else { "free" };
        files.push(tenant_file(&format!("t-{i:03}"), "default", tier));
    }
    let repo = repo(files);
    let mut held = Held::new();
    for i in 0..250 {
        let outcome = if i % 50 == 7 {
            Outcome::Invalid
        } else {
            Outcome::Applied
        };
        held.synced(&format!("t-{i:03}"), outcome, i);
        held.waves.insert(
            format!("t-{i:03}"),
            if i < 5 { "canary" } else { "rest" }.into(),
        );
    }
    let rows = held.rows(&repo);
    let all = select(&rows, &Filter::default());
    assert_eq!((all.matched, all.pages, all.rows.len()), (250, 3, PAGE));
    let last = select(
        &rows,
        &Filter {
            page: 9,
            ..Filter::default()
        },
    );
    assert_eq!(
        (last.page, last.rows.len()),
        (3, 50),
        "past the end: the last page"
    );
    let failed = select(
        &rows,
        &Filter {
            state: Some(State::Failed),
            ..Filter::default()
        },
    );
    let names: Vec<&str> = failed.rows.iter().map(|r| r.name.as_ref()).collect();
    assert_eq!(names, ["t-007", "t-057", "t-107", "t-157", "t-207"]);
    let some = select(
        &rows,
        &Filter {
            q: "T-00".into(),
            label: Some(("tier".into(), "gold".into())),
            wave: Some("canary".into()),
            ..Filter::default()
        },
    );
    let names: Vec<&str> = some.rows.iter().map(|r| r.name.as_ref()).collect();
    assert_eq!(names, ["t-000", "t-002", "t-004"]);
    let newest = select(
        &rows,
        &Filter {
            sort: Sort::Synced,
            ..Filter::default()
        },
    );
    assert_eq!(newest.rows[0].name, "t-249");
    let by_state = select(
        &rows,
        &Filter {
            sort: Sort::State,
            ..Filter::default()
        },
    );
    assert_eq!(by_state.rows[0].state, State::Ready);
    let none = select(
        &rows,
        &Filter {
            cluster: Some("eu-2".into()),
            ..Filter::default()
        },
    );
    assert_eq!((none.matched, none.pages, none.page), (0, 1, 1));
}
