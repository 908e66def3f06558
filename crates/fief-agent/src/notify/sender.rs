//! The sender task: the one owner of the notification state. It takes facts and revisions
//! from a bounded queue, turns facts into messages ([`Tracker`]), applies the dedupe window
//! and each channel's rate limit, and hands bodies to each channel's delivery task.
//!
//! In: [`Input`]s (facts from the sync path, health and rollout; each new revision's repo),
//! and a kube client for the channels whose URL is in a Secret (checked once when the
//! channel appears, read again by its delivery task for every message).
//! Out: bodies on the channels' queues; every second, held messages whose window ended,
//! one summary per channel that suppressed messages, and every [`REPUSH`] the alerts still
//! firing to each Alertmanager channel; counts of suppressed and dropped messages.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use serde_json::Value;
use tokio::sync::mpsc;

use fief_core::model::{ProviderType, Repo};
use fief_core::secrets::Keys;

use super::client::{self, Client, Delivery};
use super::format;
use super::limit::{BURST, Bucket, Decision, Dedupe, PER_MINUTE};
use super::message::{Kind, Message};
use super::route::{ChannelId, Endpoint, Routes, Target, UrlCache, resolve};
use super::secret_url;
use super::state::{Fact, Tracker};
use crate::metrics::NotificationLabel;

/// How often alerts still firing are pushed to Alertmanager again.
pub const REPUSH: Duration = Duration::from_secs(300);

/// What the sender task takes.
pub enum Input {
    /// Something the agent learned.
    Fact(Fact),
    /// A new revision's repo: the channels are read from it.
    Repo(Arc<Repo>),
}

/// A channel's delivery queue and rate limit.
struct Channel {
    target: Target,
    tx: mpsc::Sender<Delivery>,
    bucket: Bucket,
}

/// The sender task's state.
pub struct Router {
    tracker: Tracker,
    dedupe: Dedupe,
    routes: Routes,
    cache: UrlCache,
    channels: HashMap<ChannelId, Channel>,
    /// Condition messages sent and not yet recovered, by (tenant, kind).
    firing: BTreeMap<(Option<String>, Kind), Message>,
    client: Client,
    counter: Family<NotificationLabel, Counter>,
    keys: Option<Arc<Keys>>,
    cluster: String,
    /// Reads the URLs kept in Secrets of the agent's namespace.
    kube: Option<kube::Client>,
}

impl Router {
    /// A router for this agent's `cluster`, decrypting URLs with `keys` and reading those
    /// kept in Secrets with `kube`.
    pub fn new(
        counter: Family<NotificationLabel, Counter>,
        keys: Option<Arc<Keys>>,
        cluster: String,
        kube: Option<kube::Client>,
    ) -> Router {
        Router {
            tracker: Tracker::default(),
            dedupe: Dedupe::default(),
            routes: Routes::default(),
            cache: UrlCache::default(),
            channels: HashMap::new(),
            firing: BTreeMap::new(),
            client: Client::new(),
            counter,
            keys,
            cluster,
            kube,
        }
    }

    /// Run until every sender of `rx` is gone.
    pub async fn run(mut self, mut rx: mpsc::Receiver<Input>) {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut repush_at = Instant::now() + REPUSH;
        loop {
            tokio::select! {
                input = rx.recv() => match input {
                    None => return,
                    Some(Input::Fact(f)) => self.fact(f),
                    Some(Input::Repo(repo)) => self.repo(repo).await,
                },
                _ = tick.tick() => {
                    let now = Instant::now();
                    self.tick(now);
                    if now >= repush_at {
                        self.repush();
                        repush_at = now + REPUSH;
                    }
                }
            }
        }
    }

    /// Read the channels of a new revision (off the async threads: URLs are decrypted);
    /// keep the delivery tasks of channels that did not change.
    async fn repo(&mut self, repo: Arc<Repo>) {
        let cache = std::mem::take(&mut self.cache);
        let (keys, cluster) = (self.keys.clone(), self.cluster.clone());
        let resolved = tokio::task::spawn_blocking(move || {
            let mut cache = cache;
            let routes = resolve(&repo, keys.as_deref(), &cluster, &mut cache);
            (routes, cache)
        })
        .await;
        let Ok((routes, cache)) = resolved else {
            tracing::error!("reading the notification channels failed");
            return;
        };
        self.cache = cache;
        let now = Instant::now();
        let mut channels = HashMap::new();
        for target in routes.all() {
            let kept = self
                .channels
                .remove(&target.id)
                .filter(|c| c.target == *target);
            let channel = kept.unwrap_or_else(|| {
                self.check_secret(target);
                Channel {
                    target: target.clone(),
                    tx: client::spawn(
                        target.clone(),
                        self.client.clone(),
                        self.kube.clone(),
                        self.counter.clone(),
                    ),
                    bucket: Bucket::new(BURST, PER_MINUTE, now),
                }
            });
            channels.insert(target.id.clone(), channel);
        }
        tracing::debug!(channels = channels.len(), "notification channels read");
        self.channels = channels;
        self.routes = routes;
    }

    /// For a new channel whose URL is in a Secret: read it once now, off this task, so a
    /// missing Secret or key is in the log before the first message needs it.
    fn check_secret(&self, target: &Target) {
        let (Endpoint::Secret(at), Some(kube)) = (&target.endpoint, &self.kube) else {
            return;
        };
        let (at, kube, id) = (at.clone(), kube.clone(), target.id.clone());
        tokio::spawn(async move {
            if let Err(e) = secret_url::read(&kube, &at).await {
                tracing::warn!(channel = %id, error = %e, "notification channel cannot be sent to until its Secret is fixed");
            }
        });
    }

    fn fact(&mut self, fact: Fact) {
        let now = Instant::now();
        for m in self.tracker.take(fact) {
            if self.dedupe.offer(&m, now) == Decision::Send {
                self.dispatch(m, now);
            }
        }
    }

    /// Send `m` to each of its channels that has a token; count the others as suppressed.
    fn dispatch(&mut self, m: Message, now: Instant) {
        if m.kind.is_condition() {
            self.firing.insert((m.tenant.clone(), m.kind), m.clone());
        } else if let Some(ended) = m.resolves {
            self.firing.remove(&(m.tenant.clone(), ended));
        }
        let ids: Vec<ChannelId> = self.routes.for_message(&m).map(|t| t.id.clone()).collect();
        let sent_at = SystemTime::now();
        for id in ids {
            let Some(c) = self.channels.get_mut(&id) else {
                continue;
            };
            if !c.bucket.take(now) {
                count(&self.counter, &c.target.provider, "suppressed");
                continue;
            }
            if let Some(body) = format::body(&c.target.provider, &m, sent_at) {
                deliver(c, &self.counter, body, true);
            }
        }
    }

    /// Held messages whose window ended; a summary per channel that suppressed messages.
    fn tick(&mut self, now: Instant) {
        for m in self.dedupe.due(now) {
            self.dispatch(m, now);
        }
        let sent_at = SystemTime::now();
        for c in self.channels.values_mut() {
            let Some(n) = c.bucket.summary(now) else {
                continue;
            };
            let text = format!(
                "{n} more messages to this channel were not sent: at most {BURST} at once and {PER_MINUTE} a minute go to one channel; `fief status` shows every tenant"
            );
            let m = Message::new(None, Kind::Suppressed, &text, "");
            if let Some(body) = format::body(&c.target.provider, &m, sent_at) {
                deliver(c, &self.counter, body, true);
            }
        }
    }

    /// Push the alerts still firing to each Alertmanager channel again (one request each),
    /// so Alertmanager keeps them firing until their recovery resolves them.
    fn repush(&mut self) {
        let now = SystemTime::now();
        for c in self.channels.values_mut() {
            if c.target.provider != ProviderType::Alertmanager {
                continue;
            }
            let alerts: Vec<Value> = self
                .firing
                .values()
                .filter(|m| c.target.id.tenant.is_none() || m.tenant == c.target.id.tenant)
                .map(|m| format::alert(m, now))
                .collect();
            if !alerts.is_empty() {
                deliver(c, &self.counter, Value::Array(alerts), false);
            }
        }
    }
}

fn count(
    counter: &Family<NotificationLabel, Counter>,
    provider: &ProviderType,
    result: &'static str,
) {
    counter
        .get_or_create(&NotificationLabel {
            provider: provider.as_str().to_string(),
            result,
        })
        .inc();
}

/// Queue `body` on the channel; a full queue (its receiver is down or slow) drops it.
fn deliver(c: &Channel, counter: &Family<NotificationLabel, Counter>, body: Value, counted: bool) {
    let body = serde_json::to_vec(&body).unwrap_or_default();
    if c.tx.try_send(Delivery { body, counted }).is_err() {
        tracing::warn!(channel = %c.target.id, "notification dropped: the channel's queue is full (its receiver is down or slow)");
        if counted {
            count(counter, &c.target.provider, "dropped");
        }
    }
}
