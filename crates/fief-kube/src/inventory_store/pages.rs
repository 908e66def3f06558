//! Pages: the inventory ConfigMaps of a namespace, listed in pages of [`PAGE`] and parsed one
//! ConfigMap at a time as the answer arrives.
//!
//! In: a client and a namespace. Out: each ConfigMap as JSON, in the order of their names,
//! over a channel that holds [`AHEAD`] of them. The reader waits while the channel is full,
//! so what is held parsed is the channel's few ConfigMaps, whatever the page's size; the
//! answer's body is cut into one text per ConfigMap as it arrives ([`super::split`]), each
//! parsed once complete, so a page's text is never held whole either. Large pages cost a
//! fleet few LISTs: at thousands of tenants, a walk of the namespace is a small share of a
//! pass's requests.
//!
//! A page whose answer is cut (the connection dropped, or the API server ended a long answer
//! while the taker was slow: its request timeout covers the whole answer) is asked for again
//! from the same token, and the ConfigMaps sent already are skipped by name (a LIST answers
//! in the order of names). The pages of one LIST are one snapshot: every page after the first
//! is served at the first one's resourceVersion. When the API server no longer holds that
//! snapshot (its continue token expired: `410 Gone`, after its compaction interval, a few
//! minutes), the list starts again from the first page, the ConfigMaps sent already skipped.

use std::pin::Pin;

use futures::future::BoxFuture;
use futures::io::{AsyncBufRead, AsyncBufReadExt};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::mpsc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams};

use super::split::{Piece, Splitter};
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

/// A page's answer, as it arrives.
pub(super) type Body = Pin<Box<dyn AsyncBufRead + Send>>;

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
    Ok(Box::pin(body))
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
            // The token expired (the API server no longer holds the snapshot it names): the
            // list starts again from its first page, a newer snapshot, and the ConfigMaps
            // sent already are skipped by name.
            Err(e) if e.status_code() == Some(410) && token.is_some() && cuts < CUTS => {
                token = None;
                cuts += 1;
                continue;
            }
            Err(e) => {
                let _ = tx.send(Err(e)).await;
                return;
            }
        };
        let page = read_page(body, sent.as_deref(), &tx).await;
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
                let detail = format!(
                    "the answer was cut off {} times in a row ({e}); check the API server's \
                     load and its --request-timeout, then run again",
                    CUTS + 1
                );
                let _ = tx.send(Err(failed(detail))).await;
                return;
            }
            End::Bad(e) => {
                let _ = tx.send(Err(failed(e))).await;
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
    Cut(String),
    /// The answer is not a list of objects.
    Bad(String),
}

/// The list's metadata: only its continue token is read.
#[derive(Deserialize)]
struct ListMeta {
    #[serde(rename = "continue", default)]
    token: Option<String>,
}

/// Read one page from `body`, sending each ConfigMap named after `after` (all, for `None`).
async fn read_page(mut body: Body, after: Option<&str>, tx: &mpsc::Sender<Sent>) -> Page {
    let mut split = Splitter::default();
    let (mut last, mut token) = (None, None);
    let end = loop {
        let chunk = match body.fill_buf().await {
            Ok([]) if split.ended() => break End::Next(token.filter(|t: &String| !t.is_empty())),
            Ok([]) => break End::Cut("the answer ended before the list did".into()),
            Ok(chunk) => chunk,
            Err(e) => break End::Cut(e.to_string()),
        };
        split.push(chunk);
        let n = chunk.len();
        body.as_mut().consume(n);
        match take_pieces(&mut split, after, tx, &mut last, &mut token).await {
            Ok(()) => {}
            Err(end) => break end,
        }
    };
    Page { last, end }
}

/// Send every ConfigMap complete in `split` (those named after `after`), noting the last one
/// sent and the list's continue token; `Err`: how the page ends early.
async fn take_pieces(
    split: &mut Splitter,
    after: Option<&str>,
    tx: &mpsc::Sender<Sent>,
    last: &mut Option<String>,
    token: &mut Option<String>,
) -> Result<(), End> {
    let bad = |e: &dyn std::fmt::Display| End::Bad(format!("the answer is not a list: {e}"));
    while let Some(piece) = split.next_piece().map_err(|e| bad(&e))? {
        match piece {
            Piece::Meta(r) => {
                let meta: ListMeta =
                    serde_json::from_slice(&split.text()[r]).map_err(|e| bad(&e))?;
                *token = meta.token;
            }
            Piece::Item(r) => {
                let cm: Value = serde_json::from_slice(&split.text()[r]).map_err(|e| bad(&e))?;
                let name = cm["metadata"]["name"].as_str().unwrap_or_default();
                if after.is_some_and(|a| name <= a) {
                    continue;
                }
                let name = name.to_string();
                if tx.send(Ok(cm)).await.is_err() {
                    return Err(End::Stopped);
                }
                *last = Some(name);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "pages_tests.rs"]
mod tests;
