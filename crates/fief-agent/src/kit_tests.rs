//! The agent's test kit: an agent over the mock API server and a local git repository, stepped
//! one turn of its loop at a time, for the unit tests of its decisions.
//!
//! In: the files of each commit, and the [`Scenario`] the cluster starts as. Out: a [`Kit`]
//! whose [`Shared`] is built as `run` builds it, over a client of the mock API server
//! ([`fief_kube::fixtures`]), with the agent's own source task following the local repository
//! and its own watches, health-gate writer, Events and notifications; [`Kit::turn`] is one
//! turn of the leader's loop (`run::main_loop`): take the new revision (restoring a rollout at
//! the first), sync the due tenants, advance the rollout and publish it. [`Kit::restart`]
//! keeps the cluster, the repository and the clone, and starts a new agent on them, as a
//! restarted Pod would.
//!
//! Here: the agent and its turns; the repository and its files in `kit_repo_tests.rs`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

pub(crate) use super::kit_repo::{Repo, WAVES, fleet, shared_greeting, tenant, tenant_of, web};
use super::metrics::SyncDurations;
use super::{
    AgentOptions, LoopState, Shared, agent_namespace, reconciler, requests, rollout, source_loop,
};
use fief_core::inventory::Inventory;
use fief_core::objects;
use fief_kube::Resources;
use fief_kube::fixtures::{MockApiServer, Scenario, resources};
use fief_source::revision::Revision;

/// The agent namespace of the kit's repositories.
pub(crate) const AGENT_NS: &str = "fief-system";

/// How long the kit waits for what a test expects (a commit read, a condition) before it
/// fails the test.
const PATIENCE: Duration = Duration::from_secs(10);

/// How long the kit waits for the source task to read a commit (a fleet of thousands of
/// tenants takes a while in a debug build).
const READ_PATIENCE: Duration = Duration::from_secs(600);

/// An agent under test, its cluster and its repository.
pub(crate) struct Kit {
    pub(crate) shared: Arc<Shared>,
    pub(crate) server: Arc<MockApiServer>,
    pub(crate) resources: Resources,
    pub(crate) options: AgentOptions,
    pub(crate) state: LoopState,
    pub(crate) repo: Arc<Repo>,
    revisions: watch::Receiver<Option<Arc<Revision>>>,
    stop: CancellationToken,
}

impl Drop for Kit {
    fn drop(&mut self) {
        self.shared.cluster.shutdown().cancel();
    }
}

/// The options of a kit's agent: it follows `repo` and caches its clone beside it.
fn options(repo: &Repo) -> AgentOptions {
    AgentOptions {
        repo: repo.url(),
        branch: "main".to_string(),
        cluster: "default".to_string(),
        interval: Duration::from_secs(3600),
        resync_interval: Duration::from_secs(3600),
        git_timeout: Duration::from_secs(30),
        cache_dir: repo.cache(),
        listen: ([127, 0, 0, 1], 0).into(),
        webhook_secret: None,
        auth: Default::default(),
        concurrency: 4,
        leader_election: false,
        lease_namespace: AGENT_NS.to_string(),
        kubeconfig: None,
        context: None,
        api_qps: 1000,
        age_keys: None,
        max_in_flight: 10,
        health_timeout: Duration::from_secs(60),
        web: None,
        shards: 0,
        sync_durations: SyncDurations::PerTenant,
    }
}

/// The agent's shared state over `client`, as `run` builds it.
fn shared_state(options: &AgentOptions, client: kube::Client) -> Arc<Shared> {
    let clients = super::run::Clients {
        lease_client: client.clone(),
        client,
        counter: Default::default(),
        fence: None,
    };
    super::run::shared_state(options, &clients)
}

impl Kit {
    /// An agent following a new repository of `files`, over a cluster that starts as
    /// `scenario`; it has read the first commit (nothing is synced yet: see [`Kit::turn`]).
    pub(crate) async fn start(files: &[(String, String)], scenario: Scenario) -> Kit {
        Kit::with(files, scenario, |_| {}).await
    }

    /// [`Kit::start`] with the agent's options changed by `configure` (the kit's are
    /// `--max-in-flight 10`, `--health-timeout 60s`, `--concurrency 4`).
    pub(crate) async fn with(
        files: &[(String, String)],
        scenario: Scenario,
        configure: impl FnOnce(&mut AgentOptions),
    ) -> Kit {
        let (_, server) = fief_kube::fixtures::mock_api_server(scenario);
        let repo = Arc::new(Repo::new(files));
        let mut options = options(&repo);
        configure(&mut options);
        Kit::on(Arc::new(server), repo, options).await
    }

    /// A new agent on `server` and `repo`: its shared state, health-gate writer and source
    /// task, leading; returns once it has read the repository's head.
    async fn on(server: Arc<MockApiServer>, repo: Arc<Repo>, options: AgentOptions) -> Kit {
        let client = server.client();
        let shared = shared_state(&options, client.clone());
        shared
            .gate
            .spawn_writer(client.clone(), shared.cluster.shutdown().clone());
        let (tx, revisions) = watch::channel(None);
        requests::set_revisions(&shared, revisions.clone());
        shared.report.notifier().follow(revisions.clone());
        tokio::spawn(source_loop::run(shared.clone(), options.clone(), tx));
        shared.report.set_leading(true);
        let stop = shared.cluster.shutdown().child_token();
        let mut kit = Kit {
            shared,
            server,
            resources: resources(client),
            options,
            state: LoopState::default(),
            repo,
            revisions,
            stop,
        };
        let head = kit.repo.head();
        kit.read(&head).await;
        kit
    }

    /// Stop this agent and start another on the same cluster, repository and clone (a
    /// restarted Pod): nothing of this one's memory is kept.
    pub(crate) async fn restart(self) -> Kit {
        self.shared.cluster.shutdown().cancel();
        let (server, repo) = (self.server.clone(), self.repo.clone());
        let options = self.options.clone();
        drop(self);
        Kit::on(server, repo, options).await
    }

    /// Commit `files` (and remove `removed`) to the repository; returns once the agent's source
    /// task has read the new commit (the loop takes it at its next turn).
    pub(crate) async fn push(&mut self, files: &[(String, String)], removed: &[&str]) -> String {
        let commit = self.repo.commit(files, removed);
        self.shared.source.request_fetch();
        self.read(&commit).await;
        commit
    }

    /// The last revision the source task published.
    pub(crate) fn head(&self) -> Option<Arc<Revision>> {
        self.revisions.borrow().clone()
    }

    /// Wait until the source task has published `commit`.
    async fn read(&mut self, commit: &str) {
        let mut revisions = self.revisions.clone();
        let read = tokio::time::timeout(READ_PATIENCE, async {
            loop {
                if revisions
                    .borrow()
                    .as_ref()
                    .is_some_and(|r| r.commit == commit)
                {
                    return;
                }
                if revisions.changed().await.is_err() {
                    return;
                }
            }
        });
        assert!(read.await.is_ok(), "the agent did not read commit {commit}");
    }

    /// One turn of the leader's loop: take the new revision (restoring a rollout at the
    /// first), sync the tenants due now, advance the rollout and publish its record. Returns
    /// the tenants taken from the queue (the batch may still leave some alone: suspended).
    pub(crate) async fn turn(&mut self) -> Vec<String> {
        let shared = &self.shared;
        let rev = self.revisions.borrow_and_update().clone();
        if let Some(rev) = rev {
            if self.state.rev.is_none() {
                rollout::restore(shared, &self.options, &mut self.state, &rev).await;
            }
            source_loop::take_revision(shared, &mut self.state, rev);
        }
        let mut due = Vec::new();
        if self.state.rev.is_some() {
            due = shared.work.queue(|q| q.take_due(Instant::now()));
            due.retain(|t| shared.owns(t));
            if !due.is_empty() || self.state.check_orphans {
                let (r, o, s) = (&self.resources, &self.options, &mut self.state);
                reconciler::batch(shared, r, o, s, due.clone(), &self.stop).await;
                shared.index.sweep_ids();
            }
        }
        rollout::advance(shared, &mut self.state);
        if let Some(rev) = &self.state.rev {
            let namespace = agent_namespace(rev, &self.options);
            rollout::publish(shared, &self.state, &namespace);
        }
        due
    }

    /// Turn until `done` holds; fails the test after a few seconds, naming `what`.
    pub(crate) async fn until(&mut self, what: &str, mut done: impl FnMut(&Kit) -> bool) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            self.turn().await;
            if done(self) {
                return;
            }
            assert!(Instant::now() < deadline, "waited in vain: {what}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Wait (without turning) until `done` holds, as the agent's other tasks (watches, the
    /// health gate, requests) change its state; fails the test after a few seconds.
    pub(crate) async fn wait(&self, what: &str, mut done: impl FnMut(&Kit) -> bool) {
        let deadline = Instant::now() + PATIENCE;
        while !done(self) {
            assert!(Instant::now() < deadline, "waited in vain: {what}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// A periodic full resync, as the loop runs it: every watch lists afresh, the
    /// inventories are read again, and every tenant is queued.
    pub(crate) fn resync(&mut self) {
        self.shared.index.relist();
        self.state.inventories = None;
        if let Some(rev) = &self.state.rev {
            let now = Instant::now();
            self.shared.work.queue(|q| {
                for t in rev.hashes.keys() {
                    q.push_for(t, now, "resync");
                }
            });
        }
    }

    /// Whether `tenant` is queued (due now or later).
    pub(crate) fn queued(&self, tenant: &str) -> bool {
        self.shared.work.queue(|q| q.due_at(tenant).is_some())
    }

    /// Whether `tenant` is queued and due by now.
    pub(crate) fn due(&self, tenant: &str) -> bool {
        self.shared
            .work
            .queue(|q| q.due_at(tenant).is_some_and(|at| at <= Instant::now()))
    }

    /// The inventory the cluster holds for `tenant`.
    pub(crate) fn inventory(&self, tenant: &str) -> Option<Inventory> {
        let cm = self.server.object(&inventory_path(tenant))?;
        Inventory::from_configmap(&cm).ok()
    }

    /// Set (`Some`) or remove (`None`) the annotation `key` of the object at `path`, as a
    /// person's `fief` command or `kubectl annotate` would.
    pub(crate) fn annotate(&self, path: &str, key: &str, value: Option<&str>) {
        self.server.edit(path, |o| match value {
            Some(v) => o["metadata"]["annotations"][key] = v.into(),
            None => {
                if let Some(a) = o["metadata"]["annotations"].as_object_mut() {
                    a.remove(key);
                }
            }
        });
    }

    /// The annotation `key` of the object at `path`.
    pub(crate) fn annotation(&self, path: &str, key: &str) -> Option<String> {
        let object = self.server.object(path)?;
        object["metadata"]["annotations"][key]
            .as_str()
            .map(str::to_string)
    }

    /// The greeting of `tenant`'s ConfigMap `app` in its environment `prod`, as the cluster
    /// holds it (empty: none).
    pub(crate) fn greeting(&self, tenant: &str) -> String {
        let app = self
            .server
            .object(&configmap_path(&format!("{tenant}-prod"), "app"));
        app.and_then(|o| o["data"]["greeting"].as_str().map(str::to_string))
            .unwrap_or_default()
    }

    /// Play the Deployment controller: `tenant`'s Deployment `web` (in its environment
    /// `prod`) is rolled out and available at its generation.
    pub(crate) fn available(&self, tenant: &str) {
        self.server.edit(&deployment_path(tenant), |d| {
            let generation = d["metadata"]["generation"].clone();
            d["status"] = serde_json::json!({
                "observedGeneration": generation,
                "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1,
            });
        });
    }

    /// The rollout as the loop state holds it.
    pub(crate) fn rollout(&self) -> Option<fief_core::rollout::Record> {
        rollout::record(&self.state)
    }

    /// The last sync attempt of `tenant`, as `/status` reports it.
    pub(crate) fn attempt(&self, tenant: &str) -> Option<fief_core::status::agent::Attempt> {
        self.shared.report.attempt(tenant)
    }
}

/// The API path of `tenant`'s inventory ConfigMap.
pub(crate) fn inventory_path(tenant: &str) -> String {
    format!(
        "/api/v1/namespaces/{AGENT_NS}/configmaps/{}",
        objects::inventory_name(tenant)
    )
}

/// The API path of `tenant`'s Deployment `web` (component [`web`]) in its environment `prod`.
pub(crate) fn deployment_path(tenant: &str) -> String {
    format!("/apis/apps/v1/namespaces/{tenant}-prod/deployments/web")
}

/// The API path of ConfigMap `name` in `namespace`.
pub(crate) fn configmap_path(namespace: &str, name: &str) -> String {
    format!("/api/v1/namespaces/{namespace}/configmaps/{name}")
}
