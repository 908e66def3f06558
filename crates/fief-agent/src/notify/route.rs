//! Routing: which channels receive a message. Every channel in fief.yaml is the platform's
//! and receives every message; a tenant's channels receive that tenant's messages only, and
//! never the rollout's.
//!
//! In: a revision's repo (fief.yaml, this cluster's tenant files, the SOPS files) and the
//! agent's age keys. Out: [`Routes`] with each channel's [`Endpoint`]: its URL decrypted in
//! memory (decrypted again only when its file changed), or for a platform channel whose URL
//! is in a Secret of the agent's namespace, that Secret (read when each message is sent). A
//! channel whose URL cannot be had, or that names a source it may not use (a tenant's
//! channel naming a Secret of the cluster or another tenant's file), is left out and logged
//! by its name with the reason, never with the URL.

use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};

use fief_core::model::{Channel, ProviderType, Repo, UrlSource, resolve_url};
use fief_core::secrets::Keys;

use super::message::Message;
use super::secret_url::SecretUrl;

/// A channel's identity: whose list it is in and its name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChannelId {
    /// The tenant whose channel it is (`None`: the platform's).
    pub tenant: Option<String>,
    /// Its name in that list.
    pub name: String,
}

impl fmt::Display for ChannelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.tenant {
            Some(t) => write!(f, "tenant {t}/{}", self.name),
            None => write!(f, "platform/{}", self.name),
        }
    }
}

/// A channel ready to send to. Its `Debug` leaves the URL out.
#[derive(Clone, PartialEq, Eq)]
pub struct Target {
    /// Which channel.
    pub id: ChannelId,
    /// Its provider type.
    pub provider: ProviderType,
    /// Where its messages go.
    pub endpoint: Endpoint,
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Target({} {})", self.id, self.provider)
    }
}

/// Where a channel's messages go.
#[derive(Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A URL from the repo: where to POST (for Alertmanager, `<url>/api/v2/alerts`).
    Fixed(http::Uri),
    /// The URL a Secret of the agent's namespace holds when a message is sent.
    Secret(SecretUrl),
}

/// Every channel of a revision.
#[derive(Debug, Default)]
pub struct Routes {
    /// fief.yaml's channels.
    pub platform: Vec<Target>,
    /// Each tenant's own channels.
    pub tenants: HashMap<String, Vec<Target>>,
}

impl Routes {
    /// The channels `m` goes to: the platform's, and its tenant's own unless only the
    /// platform takes its kind.
    pub fn for_message<'a>(&'a self, m: &Message) -> impl Iterator<Item = &'a Target> + 'a {
        let own = match (&m.tenant, m.kind.platform_only()) {
            (Some(t), false) => self.tenants.get(t).map(Vec::as_slice),
            _ => None,
        };
        self.platform.iter().chain(own.unwrap_or_default())
    }

    /// Every channel.
    pub fn all(&self) -> impl Iterator<Item = &Target> {
        self.platform.iter().chain(self.tenants.values().flatten())
    }
}

/// URLs decrypted before: by (file, key), with a digest of the file's text.
#[derive(Default)]
pub struct UrlCache {
    entries: HashMap<(String, String), (u64, Result<String, String>)>,
}

fn digest(text: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// The channels of `repo` for this agent's `cluster`, their URLs decrypted with `keys`.
pub fn resolve(repo: &Repo, keys: Option<&Keys>, cluster: &str, cache: &mut UrlCache) -> Routes {
    let mut fresh = UrlCache::default();
    let mut routes = Routes::default();
    let mut reader = Reader {
        repo,
        keys,
        namespace: "",
        cache,
        fresh: &mut fresh,
    };
    if let Ok(config) = &repo.config {
        reader.namespace = &config.agent_namespace;
        for c in &config.notifications.providers {
            routes.platform.extend(reader.target(None, c));
        }
    }
    for (name, tenant) in repo.tenants.iter() {
        let Ok(tenant) = tenant else { continue };
        if tenant.spec.notifications.is_empty() || tenant.spec.cluster != cluster {
            continue;
        }
        let own: Vec<Target> = tenant
            .spec
            .notifications
            .iter()
            .filter_map(|c| reader.target(Some(name), c))
            .collect();
        if !own.is_empty() {
            routes.tenants.insert(name.clone(), own);
        }
    }
    *cache = fresh;
    routes
}

/// What reading a revision's channels needs.
struct Reader<'a> {
    repo: &'a Repo,
    keys: Option<&'a Keys>,
    /// The agent's namespace (fief.yaml `agentNamespace`), where channel Secrets are.
    namespace: &'a str,
    cache: &'a UrlCache,
    fresh: &'a mut UrlCache,
}

impl Reader<'_> {
    /// The channel of `tenant` (`None`: the platform's), if it can be sent to.
    fn target(&mut self, tenant: Option<&str>, channel: &Channel) -> Option<Target> {
        let id = ChannelId {
            tenant: tenant.map(str::to_string),
            name: channel.name.clone(),
        };
        // An unknown type or a plain-text URL fails validation (the tenant's sync says so).
        let (ProviderType::Webhook
        | ProviderType::Slack
        | ProviderType::Teams
        | ProviderType::Alertmanager) = channel.provider
        else {
            return None;
        };
        if channel.url == UrlSource::Plain {
            return None;
        }
        if let Err(e) = channel.url.allowed_for(tenant) {
            tracing::warn!(channel = %id, error = %e, "notification channel left out");
            return None;
        }
        let endpoint = match &channel.url {
            UrlSource::Kube(r) => Endpoint::Secret(SecretUrl {
                namespace: self.namespace.to_string(),
                r: r.clone(),
            }),
            _ => Endpoint::Fixed(self.decrypted(&id, channel)?),
        };
        Some(Target {
            id,
            provider: channel.provider.clone(),
            endpoint,
        })
    }

    /// Where to POST for a channel whose URL is in a SOPS file, decrypted (or as decrypted
    /// before, when its file did not change).
    fn decrypted(&mut self, id: &ChannelId, channel: &Channel) -> Option<http::Uri> {
        let UrlSource::Secret(r) = &channel.url else {
            return None;
        };
        let Some(keys) = self.keys else {
            tracing::warn!(channel = %id, "notification channel left out: the agent has no age key (--age-key-file) to decrypt its URL");
            return None;
        };
        let text = match self.repo.snapshot.get(&r.secret) {
            Some(Ok(t)) => digest(t),
            _ => 0,
        };
        let key = (r.secret.clone(), r.key.clone());
        let url = match self.cache.entries.get(&key) {
            Some((d, url)) if *d == text => url.clone(),
            _ => {
                let url =
                    resolve_url(&self.repo.secrets, &channel.url, keys).map_err(|e| e.to_string());
                if let Err(e) = &url {
                    tracing::warn!(channel = %id, error = %e, "notification channel left out: its URL cannot be read");
                }
                url
            }
        };
        self.fresh.entries.insert(key, (text, url.clone()));
        match uri_for(&channel.provider, &url.ok()?) {
            Ok(u) => Some(u),
            Err(why) => {
                tracing::warn!(channel = %id, error = why, "notification channel left out");
                None
            }
        }
    }
}

/// Where to POST for a channel's URL: the URL itself, or an Alertmanager's alerts API
/// under it. The error never quotes the URL.
pub fn uri_for(provider: &ProviderType, url: &str) -> Result<http::Uri, &'static str> {
    let url = url.trim();
    let full = match provider {
        ProviderType::Alertmanager => format!("{}/api/v2/alerts", url.trim_end_matches('/')),
        _ => url.to_string(),
    };
    let uri: http::Uri = full.parse().map_err(|_| "its URL is not a valid URL")?;
    match (uri.scheme_str(), uri.host()) {
        (Some("http" | "https"), Some(_)) => Ok(uri),
        _ => Err("its URL is not an http:// or https:// URL"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::message::Kind;

    fn t(tenant: Option<&str>, name: &str) -> Target {
        Target {
            id: ChannelId {
                tenant: tenant.map(str::to_string),
                name: name.to_string(),
            },
            provider: ProviderType::Webhook,
            endpoint: Endpoint::Fixed("http://127.0.0.1:1/x".parse().unwrap()),
        }
    }

    #[test]
    fn a_tenant_message_reaches_the_platform_and_its_own_channels_only() {
        let mut routes = Routes::default();
        routes.platform.push(t(None, "ops"));
        routes
            .tenants
            .insert("a".into(), vec![t(Some("a"), "team")]);
        routes
            .tenants
            .insert("b".into(), vec![t(Some("b"), "team")]);
        let names = |m: &Message| -> Vec<String> {
            routes.for_message(m).map(|t| t.id.to_string()).collect()
        };
        let m = Message::new(Some("a"), Kind::SyncFailed, "x", "c");
        assert_eq!(names(&m), ["platform/ops", "tenant a/team"]);
        let r = Message::new(None, Kind::RolloutHalted, "x", "c");
        assert_eq!(names(&r), ["platform/ops"]);
        assert!(!format!("{:?}", routes.platform[0]).contains("127.0.0.1"));
    }

    #[test]
    fn an_alertmanager_url_gets_the_v2_alerts_path_and_only_http_urls_pass() {
        let am = uri_for(&ProviderType::Alertmanager, "http://am:9093/").unwrap();
        assert_eq!(am.to_string(), "http://am:9093/api/v2/alerts");
        let hook = uri_for(&ProviderType::Slack, "https://hooks.example/T/B/x").unwrap();
        assert_eq!(hook.path(), "/T/B/x");
        let e = uri_for(&ProviderType::Webhook, "ftp://secret-token@host/").unwrap_err();
        assert!(!e.contains("secret-token"));
        assert!(uri_for(&ProviderType::Webhook, "not a url").is_err());
    }

    #[test]
    fn a_platform_channel_reads_its_secret_in_the_agent_namespace_and_a_tenants_cannot() {
        let files = [
            (
                "fief.yaml".to_string(),
                "agentNamespace: fief-ops\nnotifications:\n  providers:\n    - name: ops\n      type: slack\n      url: {secretKeyRef: {name: slack-ops, key: url}}\n".to_string(),
            ),
            (
                "tenants/acme.yaml".to_string(),
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: acme\nspec:\n  notifications:\n    - name: team\n      type: webhook\n      url: {secretKeyRef: {name: slack-ops, key: url}}\n".to_string(),
            ),
        ];
        let repo = Repo::load(std::sync::Arc::new(
            fief_core::snapshot::Snapshot::from_files(files),
        ));
        let routes = resolve(&repo, None, "default", &mut UrlCache::default());
        assert_eq!(routes.platform.len(), 1);
        let Endpoint::Secret(at) = &routes.platform[0].endpoint else {
            panic!("the platform channel reads its Secret");
        };
        assert_eq!(at.to_string(), "Secret `fief-ops/slack-ops` (key `url`)");
        assert!(
            routes.tenants.is_empty(),
            "a tenant channel never reads a Secret"
        );
    }
}
