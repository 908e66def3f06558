//! Pages: the inventory ConfigMaps of a namespace, listed in pages of [`PAGE`] and parsed one
//! ConfigMap at a time as the answer arrives.
//!
//! In: a client and a namespace. Out: each ConfigMap as JSON, in the order of their names,
//! over a channel that holds [`AHEAD`] of them. The reader waits while the channel is full,
//! so what is held parsed is the channel's few ConfigMaps, whatever the page's size; a page
//! is parsed on a blocking thread (`serde_json` reads a [`Read`]) straight from the answer's
//! body, so its text is never held whole either. Large pages cost a fleet few LISTs: at
//! thousands of tenants, a walk of the namespace is a small share of a pass's requests.
//!
//! A page whose answer is cut (the connection dropped, or the API server ended a long answer
//! while the taker was slow: its request timeout covers the whole answer) is asked for again
//! from the same token, and the ConfigMaps sent already are skipped by name (a LIST answers
//! in the order of names). The pages of one LIST are one snapshot: every page after the first
//! is served at the first one's resourceVersion.

use std::io::{BufReader, Read};

use futures::future::BoxFuture;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::compat::FuturesAsyncReadCompatExt;
use tokio_util::io::SyncIoBridge;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams};

use crate::ClusterError;
use fief_core::inventory::LABEL_APPLYSET_ID;
use fief_core::objects;

/// Inventory ConfigMaps asked for per LIST (a [`super::Walk`], and the inventory store's
/// `each_inventory`). The API server's request timeout bounds how long one answer may be
/// read; a page cut by it is read again from its token.
pub const PAGE: u32 = 500;

/// [`PAGE`]; in debug builds (the integration tests), `FIEF_TEST_INVENTORY_PAGE=<n>` asks for
/// pages of `n`, so that a test fleet of a few hundred tenants spans several pages of the
/// real API server. A release build has no such hook.
fn page_size() -> u32 {
    #[cfg(debug_assertions)]
    if let Some(n) = std::env::var("FIEF_TEST_INVENTORY_PAGE")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return n;
    }
    PAGE
}

/// ConfigMaps parsed and waiting to be taken.
pub(super) const AHEAD: usize = 16;

/// Cuts of one page in a row, none sending anything new, before the read gives up.
const CUTS: usize = 3;

/// What the channel carries: a ConfigMap, or the error that ended the reading.
pub(super) type Sent = Result<Value, ClusterError>;

/// A page's answer, readable from a blocking thread.
pub(super) type Body = Box<dyn Read + Send>;

/// Start reading the inventory ConfigMaps of `namespace` on a task of its own. Dropping the
/// receiver stops it (at the next ConfigMap it would send).
pub(super) fn spawn(
    client: &kube::Client,
    namespace: &str,
) -> (mpsc::Receiver<Sent>, tokio::task::JoinHandle<()>) {
    let (tx, rx) = mpsc::channel(AHEAD);
    let (client, namespace) = (client.clone(), namespace.to_string());
    let what = format!("list inventory ConfigMaps in {namespace}");
    let open = move |token: Option<String>| -> BoxFuture<'static, Result<Body, ClusterError>> {
        let (client, namespace) = (client.clone(), namespace.clone());
        Box::pin(async move { open_page(&client, &namespace, token.as_deref()).await })
    };
    (rx, tokio::spawn(read_pages(open, what, tx)))
}

/// Ask for one page (from `token`, else the first) and return its body as it arrives.
async fn open_page(
    client: &kube::Client,
    namespace: &str,
    token: Option<&str>,
) -> Result<Body, ClusterError> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let failed =
        |source| ClusterError::request(format!("list inventory ConfigMaps in {namespace}"), source);
    let selector = format!("{LABEL_APPLYSET_ID},{}=fief", objects::LABEL_MANAGED_BY);
    let mut params = ListParams::default().labels(&selector).limit(page_size());
    if let Some(t) = token {
        params = params.continue_token(t);
    }
    let request = kube::core::Request::new(api.resource_url())
        .list(&params)
        .map_err(|e| failed(kube::Error::BuildRequest(e)))?;
    let body = client.request_stream(request).await.map_err(failed)?;
    Ok(Box::new(SyncIoBridge::new(Box::pin(body).compat())))
}

/// Read every page `open` gives, sending each ConfigMap over `tx` (see the module docs); an
/// error ends the reading and is sent last.
pub(super) async fn read_pages<F>(mut open: F, what: String, tx: mpsc::Sender<Sent>)
where
    F: FnMut(Option<String>) -> BoxFuture<'static, Result<Body, ClusterError>>,
{
    let mut token: Option<String> = None;
    let mut sent: Option<String> = None;
    let mut cuts = 0;
    loop {
        let body = match open(token.clone()).await {
            Ok(body) => body,
            Err(e) => {
                let _ = tx.send(Err(e)).await;
                return;
            }
        };
        let (to, after) = (tx.clone(), sent.clone());
        let parsed = tokio::task::spawn_blocking(move || parse_page(body, after, &to)).await;
        let Ok(page) = parsed else {
            return;
        };
        if page.last.is_some() {
            sent = page.last;
            cuts = 0;
        }
        let failed = |detail: String| ClusterError::Client {
            what: what.clone(),
            detail,
        };
        match page.end {
            End::Next(Some(next)) => token = Some(next),
            End::Next(None) | End::Stopped => return,
            End::Cut(_) if cuts < CUTS => cuts += 1,
            End::Cut(e) => {
                let detail = format!("the answer was cut off {} times in a row: {e}", CUTS + 1);
                let _ = tx.send(Err(failed(detail))).await;
                return;
            }
            End::Bad(e) => {
                let _ = tx
                    .send(Err(failed(format!("the answer is not a list: {e}"))))
                    .await;
                return;
            }
        }
    }
}

/// What one page's reading came to.
struct Page {
    /// The name of the last ConfigMap sent from it.
    last: Option<String>,
    /// How it ended.
    end: End,
}

/// How a page's reading ended.
enum End {
    /// Read whole: the token of the next page, if there is one.
    Next(Option<String>),
    /// The taker dropped the channel.
    Stopped,
    /// The answer ended early (the connection dropped or the server ended it).
    Cut(serde_json::Error),
    /// The answer is not a list of objects.
    Bad(serde_json::Error),
}

/// Parse one page from `body`, sending each ConfigMap named after `after` (all, for `None`).
fn parse_page(body: Body, after: Option<String>, tx: &mpsc::Sender<Sent>) -> Page {
    let mut list = List {
        tx,
        after,
        last: None,
        token: None,
        stopped: false,
    };
    let mut de = serde_json::Deserializer::from_reader(BufReader::with_capacity(1 << 16, body));
    let read = de::Deserializer::deserialize_map(&mut de, &mut list).and_then(|()| de.end());
    let end = match read {
        Ok(()) => End::Next(list.token.filter(|t| !t.is_empty())),
        Err(_) if list.stopped => End::Stopped,
        Err(e) if e.is_io() || e.is_eof() => End::Cut(e),
        Err(e) => End::Bad(e),
    };
    Page {
        last: list.last,
        end,
    }
}

/// The list being parsed: where its ConfigMaps go, and what was seen of it.
struct List<'a> {
    tx: &'a mpsc::Sender<Sent>,
    after: Option<String>,
    last: Option<String>,
    token: Option<String>,
    stopped: bool,
}

/// The list's metadata: only its continue token is read.
#[derive(Deserialize)]
struct ListMeta {
    #[serde(rename = "continue", default)]
    token: Option<String>,
}

impl<'de> Visitor<'de> for &mut List<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of ConfigMaps")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "metadata" => self.token = map.next_value::<ListMeta>()?.token,
                "items" => map.next_value_seed(Items(&mut *self))?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// The list's `items`, each sent as it is parsed.
struct Items<'l, 'a>(&'l mut List<'a>);

impl<'de> DeserializeSeed<'de> for Items<'_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Items<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of ConfigMaps")
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let list = self.0;
        while let Some(cm) = seq.next_element::<Value>()? {
            let name = cm["metadata"]["name"].as_str().unwrap_or_default();
            if list.after.as_deref().is_some_and(|a| name <= a) {
                continue;
            }
            let name = name.to_string();
            if list.tx.blocking_send(Ok(cm)).is_err() {
                list.stopped = true;
                return Err(de::Error::custom("the reading was stopped"));
            }
            list.last = Some(name);
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "pages_tests.rs"]
mod tests;
