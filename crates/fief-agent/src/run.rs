//! Starting and running the agent: the clients (the syncs' client, fenced by the Lease term
//! when leader election is on, and the Lease's own), the shared state, the HTTP server, the
//! source task, leadership, and the leader's loop.
//!
//! In: the agent's options and the process signals. Out: the agent runs until SIGTERM/SIGINT
//! or a lost Lease; the leader's loop takes new revisions, runs due syncs and resyncs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::metrics::Metrics;
use super::parts::cluster::Cluster;
use super::parts::index::LiveIndex;
use super::parts::report::Report;
use super::parts::source::Source;
use super::parts::work::Work;
use super::rollout::RolloutState;
use super::{
    AgentError, AgentOptions, LoopState, Shared, agent_namespace, drift, events, health, http,
    jitter, leader, notify, reconciler, requests, rollout, shards, source_loop, web,
};
use fief_kube::counter::RequestCounter;
use fief_kube::fence::Fence;
use fief_kube::{ClusterError, Resources};
use fief_source::revision::Revision;

/// Cancel `token` on SIGTERM or SIGINT.
fn on_signals(token: CancellationToken) -> Result<(), AgentError> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())
        .map_err(|e| AgentError::Leadership(format!("cannot handle SIGTERM: {e}")))?;
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM: stopping between tenants"),
            _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT: stopping between tenants"),
        }
        token.cancel();
    });
    Ok(())
}

/// Run the agent until SIGTERM/SIGINT (or until it loses the Lease).
pub async fn run(options: AgentOptions) -> Result<(), AgentError> {
    let clients = clients(&options).await?;
    let shared = shared_state(&options, &clients);
    on_signals(shared.cluster.shutdown().clone())?;
    serve(&shared, &options).await?;
    let Some(resources) = discover(&shared, &clients.client).await else {
        return Ok(());
    };
    shared
        .gate
        .spawn_writer(clients.client.clone(), shared.cluster.shutdown().clone());
    let rev_rx = start_source(&shared, &options);
    let Some(part) = take_part(&shared, &options, clients).await? else {
        return Ok(());
    };
    shared.report.set_leading(true);
    main_loop(&shared, &resources, &options, rev_rx, &part.stop(&shared)).await;
    shared.report.set_leading(false);
    let lost = !shared.cluster.shutdown().is_cancelled();
    part.leave().await;
    if lost {
        return Err(AgentError::Leadership(
            "lost the lease; stopped between tenants; exiting so a replica takes over".into(),
        ));
    }
    tracing::info!("shutting down: no sync in flight");
    Ok(())
}

/// The agent's clients: the syncs' (fenced by the Lease terms when there are any, limited by
/// `--api-qps`) and the Leases' own (never queued behind the syncs' rate limit).
pub(crate) struct Clients {
    pub(crate) client: kube::Client,
    pub(crate) lease_client: kube::Client,
    pub(crate) counter: RequestCounter,
    pub(crate) fence: Option<Fence>,
}

async fn clients(options: &AgentOptions) -> Result<Clients, AgentError> {
    let cluster = |e: ClusterError| AgentError::Cluster(Box::new(e));
    let built = |e| cluster(ClusterError::request("build the client", e));
    let mut config =
        fief_kube::load_config(options.kubeconfig.as_deref(), options.context.as_deref())
            .await
            .map_err(cluster)?;
    let counter = RequestCounter::default();
    let fence = (options.leader_election || options.shards > 1).then(Fence::new);
    // Each replica names itself to the API server, so its writes can be told apart in the
    // audit log.
    if let Ok(agent) = ::http::HeaderValue::from_str(&format!(
        "fief-agent/{} ({})",
        env!("CARGO_PKG_VERSION"),
        leader::identity()
    )) {
        config.headers.push((::http::header::USER_AGENT, agent));
    }
    let client = fief_kube::build_client(
        config.clone(),
        &counter,
        Some(options.api_qps),
        fence.clone(),
    )
    .map_err(built)?;
    let lease_client = fief_kube::build_client(config, &counter, None, None).map_err(built)?;
    Ok(Clients {
        client,
        lease_client,
        counter,
        fence,
    })
}

/// The state shared by the loop, the tasks and the HTTP handlers, and the index task that
/// alone writes the live hashes and watch states (the unit tests' kit builds it here too).
pub(crate) fn shared_state(options: &AgentOptions, clients: &Clients) -> Arc<Shared> {
    let metrics = Metrics::new(options.sync_durations);
    let notifier = notify::Notifier::start(
        metrics.notifications.clone(),
        options.age_keys.clone(),
        options.cluster.clone(),
        clients.client.clone(),
    );
    let client = clients.client.clone();
    let web = options
        .web
        .as_ref()
        .map(|w| web::Web::new(w, &options.cluster, clients.lease_client.clone()));
    let (index, keeper) = LiveIndex::new();
    let (ids, watched) = (index.ids(), index.watched());
    let shared = Arc::new(Shared {
        cluster: Cluster::new(client.clone(), clients.counter.clone(), metrics),
        source: Source::new(
            options.branch.clone(),
            options.webhook_secret.clone(),
            options.age_keys.clone(),
        ),
        work: Work::default(),
        index,
        gate: Arc::new(health::Gate::new(
            options.max_in_flight,
            options.health_timeout,
            ids,
            watched,
        )),
        rollout: RolloutState::default(),
        report: Report::new(events::Events::start(client), notifier.clone(), web),
        shards: (options.shards > 1).then(|| Arc::new(shards::Ownership::new(options.shards))),
    });
    shared
        .gate
        .on_verdict(move |tenant, verdict| notifier.verdict(tenant, verdict));
    tokio::spawn(drift::index_task::run(shared.clone(), keeper));
    shared
}

/// Serve the probes, metrics, status, webhook (and web view) from the start: an API server
/// that is not reachable yet makes the agent not ready, never restarted by its liveness probe.
async fn serve(shared: &Arc<Shared>, options: &AgentOptions) -> Result<(), AgentError> {
    let listener = tokio::net::TcpListener::bind(options.listen)
        .await
        .map_err(|source| AgentError::Listen {
            addr: options.listen,
            source,
        })?;
    tracing::info!(addr = %options.listen, web = options.web.is_some(), "serving /healthz /readyz /metrics /status /hooks/git (and /ui/ with --web)");
    let router = http::router(shared.clone());
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router).await {
            tracing::error!(error = %e, "HTTP server stopped");
        }
    });
    Ok(())
}

/// The cluster's API resources. An API server that does not answer yet (a Pod started before
/// its network, a busy control plane) is waited for with backoff, not a restart of the Pod;
/// `None` on shutdown.
async fn discover(shared: &Shared, client: &kube::Client) -> Option<Resources> {
    let max = Duration::from_secs(30);
    let mut delays = super::doubling(Duration::from_secs(1), max);
    loop {
        match Resources::discover(client.clone()).await {
            Ok(r) => {
                shared.report.set_cluster_problem(None);
                return Some(r);
            }
            Err(e) => {
                let delay = delays.next().unwrap_or(max);
                shared.report.set_cluster_problem(Some(format!(
                    "cannot read the cluster's API resources: {e}"
                )));
                tracing::error!(error = %e, retry_in_s = delay.as_secs(), "cannot read the cluster's API resources; retrying");
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = shared.cluster.shutdown().cancelled() => return None,
                }
            }
        }
    }
}

/// Start the source task; the revisions it reads. Every replica keeps a current clone, so a
/// standby takes over with a revision in hand.
fn start_source(
    shared: &Arc<Shared>,
    options: &AgentOptions,
) -> tokio::sync::watch::Receiver<Option<Arc<Revision>>> {
    let (rev_tx, rev_rx) = tokio::sync::watch::channel(None);
    requests::set_revisions(shared, rev_rx.clone());
    shared.report.notifier().follow(rev_rx.clone());
    if let Some(web) = shared.report.web() {
        web.set_revisions(rev_rx.clone());
    }
    tokio::spawn(source_loop::run(shared.clone(), options.clone(), rev_tx));
    rev_rx
}

/// This replica's part in the work.
enum Part {
    /// It leads (leader election).
    Leader(Box<leader::Term>),
    /// It holds shards (`--shards`).
    Shards(shards::Sharding),
    /// It works alone (`--no-leader-election`).
    Alone,
}

/// Wait until this replica may work: it leads, or it joined the shard set (`None`: shut down
/// first).
async fn take_part(
    shared: &Arc<Shared>,
    options: &AgentOptions,
    clients: Clients,
) -> Result<Option<Part>, AgentError> {
    let Some(fence) = clients.fence else {
        return Ok(Some(Part::Alone));
    };
    let lease_client = clients.lease_client;
    Ok(match shared.shards.clone() {
        Some(own) => {
            let namespace = &options.lease_namespace;
            shards::start(shared, own, namespace, lease_client, fence)
                .await
                .map(Part::Shards)
        }
        None => leader::lead(shared, options, lease_client, fence)
            .await?
            .map(|t| Part::Leader(Box::new(t))),
    })
}

impl Part {
    /// Cancelled when this replica must stop working (shutdown, lost Lease or term).
    fn stop(&self, shared: &Shared) -> CancellationToken {
        match self {
            Part::Leader(t) => t.lost.clone(),
            Part::Shards(s) => s.lost.clone(),
            Part::Alone => shared.cluster.shutdown().child_token(),
        }
    }

    /// Stop leading, or hand the shards back, once no sync runs any more.
    async fn leave(self) {
        match self {
            Part::Leader(t) => t.step_down().await,
            Part::Shards(s) => s.finish().await,
            Part::Alone => {}
        }
    }
}

/// The leader's loop: take new revisions, run due syncs, resync periodically; returns when
/// `stop` is cancelled (shutdown or lost Lease), never in the middle of a tenant.
async fn main_loop(
    shared: &Arc<Shared>,
    resources: &Resources,
    options: &AgentOptions,
    mut rev_rx: tokio::sync::watch::Receiver<Option<Arc<Revision>>>,
    stop: &CancellationToken,
) {
    let mut state = LoopState::default();
    // With shards: shards taken or handed back, and fetches finished, wake the loop.
    let mut sharding = shared
        .shards
        .as_ref()
        .map(|o| (o.subscribe(), shared.source.fetches().subscribe()));
    let mut next_resync =
        Instant::now() + options.resync_interval + jitter(options.resync_interval);
    loop {
        if let Some(rev) = rev_rx.borrow_and_update().clone() {
            if state.rev.is_none() {
                rollout::restore(shared, options, &mut state, &rev).await;
            }
            warn_namespace_mismatch(state.rev.as_deref(), &rev, options);
            source_loop::take_revision(shared, &mut state, rev);
        }
        if Instant::now() >= next_resync && state.rev.is_some() {
            tracing::info!("periodic full resync");
            shared.index.relist();
            state.inventories = None;
            if let Some(rev) = &state.rev {
                let now = Instant::now();
                shared.work.queue(|q| {
                    for t in rev.hashes.keys().filter(|t| shared.owns(t)) {
                        q.push_for(t, now, "resync");
                    }
                });
            }
            next_resync =
                Instant::now() + options.resync_interval + jitter(options.resync_interval);
        }
        shards::follow(shared, &mut state);
        if state.rev.is_some() {
            let mut due = shared.work.queue(|q| q.take_due(Instant::now()));
            due.retain(|t| shared.owns(t));
            if !due.is_empty() || state.check_orphans {
                reconciler::batch(shared, resources, options, &mut state, due, stop).await;
                shared.index.sweep_ids();
            }
        }
        let rolling = rollout::advance(shared, &mut state);
        if let Some(rev) = &state.rev {
            rollout::publish(shared, &state, &agent_namespace(rev, options));
        }
        if stop.is_cancelled() {
            return;
        }
        let due = shared.work.queue(|q| q.next_due());
        let mut wake_at = due.map_or(next_resync, |d| d.min(next_resync));
        if rolling {
            // Health verdicts come from the watches: look again soon.
            wake_at = wake_at.min(Instant::now() + Duration::from_millis(500));
        }
        tokio::select! {
            _ = tokio::time::sleep_until(wake_at.max(Instant::now()).into()) => {}
            _ = shared.work.woken() => {}
            _ = changed(&mut sharding) => {}
            changed = rev_rx.changed() => if changed.is_err() { return; },
            _ = stop.cancelled() => return,
        }
    }
}

/// Resolves when the shards held or the fetches finished change (never without shards).
async fn changed(
    sharding: &mut Option<(
        tokio::sync::watch::Receiver<u64>,
        tokio::sync::watch::Receiver<u64>,
    )>,
) {
    let Some((held, fetched)) = sharding else {
        return std::future::pending().await;
    };
    tokio::select! {
        r = held.changed() => if r.is_err() { std::future::pending::<()>().await },
        r = fetched.changed() => if r.is_err() { std::future::pending::<()>().await },
    }
}

/// Say so, once per commit that changes it, when fief.yaml puts the inventories in another
/// namespace than the one this agent runs in (its Lease's): its RBAC and the admission policy
/// allow writes only in its own, so every tenant would fail.
fn warn_namespace_mismatch(old: Option<&Revision>, new: &Revision, options: &AgentOptions) {
    if !options.leader_election {
        return;
    }
    let wanted = agent_namespace(new, options);
    let before = old.map(|r| agent_namespace(r, options));
    if wanted != options.lease_namespace && before.as_deref() != Some(wanted.as_str()) {
        tracing::error!(
            fief_yaml = wanted,
            agent = options.lease_namespace,
            "fief.yaml's agentNamespace is not the namespace this agent runs in: set `agentNamespace: {}` in fief.yaml (or install the agent in {wanted})",
            options.lease_namespace
        );
    }
}
