//! Walk: the inventories of the agent namespace one at a time, in the order of their tenants'
//! names, and the count of the inventories a pass holds.
//!
//! In: the agent namespace. Out: each inventory parsed as it is taken ([`Walk::next_upto`]),
//! inside an [`Inventories`] that counts it while it lives. The ConfigMaps are listed in pages
//! of [`PAGE`] on a task of their own, a page ahead of the one being taken; a page waits as
//! received text and is parsed an inventory at a time, so what a pass holds parsed is what it
//! took and has not dropped. A LIST with pages comes back in the order of the ConfigMaps'
//! names (`fief-tenant-<tenant>`), so in the order of the tenants: a pass that walks its
//! tenants sorted by name takes each one's inventory as it reaches it, and every inventory of
//! a tenant it skips (orphaned, out of scope) on the way.
//!
//! The count ([`held`], [`peak_held`]) is of every [`Inventories`] alive in the process. In
//! debug builds (the integration tests), `FIEF_TEST_INVENTORIES_HELD=<file>` writes the peak
//! to that file each time it rises: the tests read how many inventories a command held at
//! once from there. A release build has no such hook.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;
use tokio::sync::mpsc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams};

use crate::ClusterError;
use fief_core::inventory::{Inventory, InventoryError, LABEL_APPLYSET_ID};
use fief_core::objects;

/// Inventory ConfigMaps per page of a LIST (a [`Walk`], and the inventory store's
/// `each_inventory`): a page is parsed while the next one is read, and dropped after, so at
/// thousands of tenants the read holds two or three pages' text, not the whole namespace's. An inventory of 26 objects is about 24 KB of
/// JSON, and a page is held as received, as one body and as parsed JSON at once: 25 a page is
/// about 2 MiB of it. (The agent reads a chunk's inventories by name.)
pub const PAGE: u32 = 25;

/// One page of the inventory ConfigMaps of `namespace` (from `token`, else the first), as
/// JSON: `items` and `metadata.continue`.
pub(super) async fn list_page(
    client: &kube::Client,
    namespace: &str,
    token: Option<&str>,
) -> Result<Value, ClusterError> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let failed =
        |source| ClusterError::request(format!("list inventory ConfigMaps in {namespace}"), source);
    let selector = format!("{LABEL_APPLYSET_ID},{}=fief", objects::LABEL_MANAGED_BY);
    let mut params = ListParams::default().labels(&selector).limit(PAGE);
    if let Some(t) = token {
        params = params.continue_token(t);
    }
    let request = kube::core::Request::new(api.resource_url())
        .list(&params)
        .map_err(|e| failed(kube::Error::BuildRequest(e)))?;
    // Read straight into JSON values (one decode; no typed detour).
    client.request::<Value>(request).await.map_err(failed)
}

/// Inventories alive in an [`Inventories`] now.
static HELD: AtomicUsize = AtomicUsize::new(0);
/// The most [`HELD`] has been.
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// Inventories held now, by every pass of this process.
pub fn held() -> usize {
    HELD.load(Ordering::SeqCst)
}

/// The most inventories held at once so far in this process.
pub fn peak_held() -> usize {
    PEAK.load(Ordering::SeqCst)
}

fn hold(n: usize) {
    if n == 0 {
        return;
    }
    let now = HELD.fetch_add(n, Ordering::SeqCst) + n;
    if PEAK.fetch_max(now, Ordering::SeqCst) < now {
        test_hook::peak_rose();
    }
}

fn release(n: usize) {
    HELD.fetch_sub(n, Ordering::SeqCst);
}

/// The test-only report of the peak (see the module docs).
#[cfg(debug_assertions)]
mod test_hook {
    use std::sync::{Mutex, OnceLock};

    /// Where the peak is written, when asked for.
    fn target() -> Option<&'static std::path::PathBuf> {
        static TARGET: OnceLock<Option<std::path::PathBuf>> = OnceLock::new();
        TARGET
            .get_or_init(|| std::env::var_os("FIEF_TEST_INVENTORIES_HELD").map(Into::into))
            .as_ref()
    }

    /// Write the peak as it stands (under a lock, so a lower one never lands last).
    pub(super) fn peak_rose() {
        static WRITING: Mutex<()> = Mutex::new(());
        let Some(path) = target() else { return };
        let _one = WRITING.lock();
        let _ = std::fs::write(path, super::peak_held().to_string());
    }
}

#[cfg(not(debug_assertions))]
mod test_hook {
    pub(super) fn peak_rose() {}
}

/// Inventories by tenant, counted in [`held`] while they live. Read as a map; changed only
/// through its own methods, which keep the count.
#[derive(Debug, Default)]
pub struct Inventories {
    map: BTreeMap<String, Result<Inventory, InventoryError>>,
}

impl Inventories {
    /// No inventory.
    pub fn new() -> Inventories {
        Inventories::default()
    }

    /// Hold one more (replacing the tenant's, if held).
    pub fn insert(&mut self, tenant: String, inventory: Result<Inventory, InventoryError>) {
        if self.map.insert(tenant, inventory).is_none() {
            hold(1);
        }
    }

    /// Take the tenant's inventory out, into an [`Inventories`] of its own (empty when it is
    /// not held).
    pub fn take(&mut self, tenant: &str) -> Inventories {
        let mut one = BTreeMap::new();
        if let Some(inv) = self.map.remove(tenant) {
            one.insert(tenant.to_string(), inv);
        }
        Inventories { map: one }
    }

    /// The inventories as a plain map, no longer counted: for a caller that keeps them
    /// in a bound of its own.
    pub fn into_map(mut self) -> BTreeMap<String, Result<Inventory, InventoryError>> {
        let map = std::mem::take(&mut self.map);
        release(map.len());
        map
    }

    /// Hold `other`'s inventories too.
    pub fn append(&mut self, mut other: Inventories) {
        for (tenant, inv) in std::mem::take(&mut other.map) {
            if self.map.insert(tenant, inv).is_some() {
                release(1);
            }
        }
    }
}

impl Deref for Inventories {
    type Target = BTreeMap<String, Result<Inventory, InventoryError>>;

    fn deref(&self) -> &Self::Target {
        &self.map
    }
}

impl Drop for Inventories {
    fn drop(&mut self) {
        release(self.map.len());
    }
}

/// Pages read ahead of the one being taken.
const PAGES_AHEAD: usize = 1;

/// The inventories of the agent namespace, taken one at a time in the order of their tenants'
/// names (see the module docs). Dropping it stops the reading.
pub struct Walk {
    pages: mpsc::Receiver<Result<Vec<Value>, ClusterError>>,
    reader: tokio::task::JoinHandle<()>,
    /// The page being taken, as received.
    items: VecDeque<Value>,
    /// Every page was received.
    done: bool,
}

impl Walk {
    /// Start listing the inventory ConfigMaps of `namespace` (on a task of their own).
    pub fn new(client: &kube::Client, namespace: &str) -> Walk {
        let (tx, pages) = mpsc::channel(PAGES_AHEAD);
        let (client, namespace) = (client.clone(), namespace.to_string());
        let reader = tokio::spawn(async move {
            let mut token: Option<String> = None;
            loop {
                let page = list_page(&client, &namespace, token.as_deref()).await;
                let mut page = match page {
                    Ok(p) => p,
                    Err(e) => {
                        let _ = tx.send(Err(e)).await;
                        return;
                    }
                };
                token = page["metadata"]["continue"]
                    .as_str()
                    .filter(|t| !t.is_empty())
                    .map(str::to_string);
                let items = match page["items"].take() {
                    Value::Array(items) => items,
                    _ => Vec::new(),
                };
                // The one taking them stopped: so does the reading.
                if tx.send(Ok(items)).await.is_err() || token.is_none() {
                    return;
                }
            }
        });
        Walk {
            pages,
            reader,
            items: VecDeque::new(),
            done: false,
        }
    }

    /// The tenant of the next inventory, receiving the next page when this one is taken;
    /// `None` past the last one.
    pub async fn peek(&mut self) -> Result<Option<&str>, ClusterError> {
        while self.items.is_empty() && !self.done {
            match self.pages.recv().await {
                Some(page) => self.items.extend(page?),
                None => self.done = true,
            }
        }
        Ok(self.items.front().map(tenant_of))
    }

    /// The next inventory when its tenant's name is at most `last` (any, for `None`),
    /// parsed and counted; `None` when there is no such one (yet).
    ///
    /// A ConfigMap whose name is not the inventory name of the tenant its label names is an
    /// error naming it, before it is taken or passed: it is no tenant's inventory (a read by
    /// name would not find it as its label's), and the walk's order is the names' order, so a
    /// pass that walks its tenants in order could neither take it for its label's tenant nor
    /// go past it.
    pub async fn next_upto(
        &mut self,
        last: Option<&str>,
    ) -> Result<Option<Inventories>, ClusterError> {
        let Some(tenant) = self.peek().await?.map(str::to_string) else {
            return Ok(None);
        };
        let name = self
            .items
            .front()
            .and_then(|cm| cm["metadata"]["name"].as_str())
            .unwrap_or_default();
        if name != objects::inventory_name(&tenant) {
            return Err(ClusterError::Client {
                what: format!("read inventory ConfigMap {name}"),
                detail: format!(
                    "it is labelled for tenant `{tenant}`, but an inventory's name is \
                     {}<its tenant>; fix or delete the one whose name and {} label disagree",
                    objects::inventory_name(""),
                    objects::LABEL_TENANT
                ),
            });
        }
        if last.is_some_and(|l| tenant.as_str() > l) {
            return Ok(None);
        }
        let Some(cm) = self.items.pop_front() else {
            return Ok(None);
        };
        let mut one = Inventories::new();
        one.insert(tenant, Inventory::from_configmap(&cm));
        Ok(Some(one))
    }

    /// The next inventory, parsed and counted; `None` past the last one.
    pub async fn next(&mut self) -> Result<Option<Inventories>, ClusterError> {
        self.next_upto(None).await
    }
}

impl Drop for Walk {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// The tenant an inventory ConfigMap is labelled for (empty when none).
fn tenant_of(cm: &Value) -> &str {
    cm["metadata"]["labels"][objects::LABEL_TENANT]
        .as_str()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{Scenario, mock_api_server};

    const NAMESPACE: &str = "fief-system";

    /// Taken by each test here: the count is the process's, so they do not overlap.
    static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

    fn path(name: &str) -> String {
        format!("/api/v1/namespaces/{NAMESPACE}/configmaps/{name}")
    }

    /// A scenario holding the inventories of `tenants`.
    fn holding(tenants: &[String]) -> Scenario {
        tenants.iter().fold(Scenario::new(), |s, t| {
            let cm = Inventory::new(t).to_configmap(NAMESPACE);
            s.with_object(&path(&objects::inventory_name(t)), cm)
        })
    }

    #[test]
    fn inventories_count_what_they_hold_until_dropped() {
        let _one = SERIAL.blocking_lock();
        let before = held();
        let mut a = Inventories::new();
        a.insert("a".into(), Ok(Inventory::new("a")));
        a.insert("b".into(), Ok(Inventory::new("b")));
        a.insert("b".into(), Ok(Inventory::new("b")));
        let mut c = Inventories::new();
        c.insert("c".into(), Ok(Inventory::new("c")));
        c.insert("b".into(), Ok(Inventory::new("b")));
        a.append(c);
        assert_eq!(a.len(), 3);
        let b = a.take("b");
        assert_eq!((a.len(), b.len()), (2, 1));
        assert!(a.take("none").is_empty());
        drop(a);
        drop(b);
        assert_eq!(held(), before);
    }

    #[tokio::test]
    async fn a_walk_takes_every_inventory_in_name_order_across_pages_up_to_a_name() {
        let _one = SERIAL.lock().await;
        let tenants: Vec<String> = (0..60).map(|i| format!("t-{i:03}")).collect();
        let (client, server) = mock_api_server(holding(&tenants));
        let mut walk = Walk::new(&client, NAMESPACE);
        let mut taken = Vec::new();
        while let Some(one) = walk.next_upto(Some("t-029")).await.expect("listed") {
            assert_eq!(one.len(), 1);
            taken.extend(one.keys().cloned());
        }
        assert_eq!(taken, tenants[..30]);
        assert_eq!(walk.peek().await.expect("listed"), Some("t-030"));
        while let Some(one) = walk.next().await.expect("listed") {
            taken.extend(one.keys().cloned());
        }
        assert_eq!(taken, tenants);
        let pages = server
            .requests()
            .iter()
            .filter(|r| r.param("limit").is_some())
            .count();
        assert_eq!(pages, 3, "pages of {PAGE}");
    }

    #[tokio::test]
    async fn a_read_of_every_inventory_leaves_out_one_whose_name_and_label_disagree() {
        let tenants = ["a", "c"].map(String::from);
        let mut stray = Inventory::new("z").to_configmap(NAMESPACE);
        stray["metadata"]["name"] = objects::inventory_name("b").into();
        let scenario = holding(&tenants).with_object(&path(&objects::inventory_name("b")), stray);
        let (client, _server) = mock_api_server(scenario);
        let mut seen = Vec::new();
        super::super::each_inventory(&client, NAMESPACE, |t, _| seen.push(t))
            .await
            .expect("read");
        assert_eq!(seen, ["a", "c"], "b's name, z's label: neither's");
    }

    #[tokio::test]
    async fn an_inventory_whose_name_and_tenant_label_disagree_is_an_error_naming_it() {
        let _one = SERIAL.lock().await;
        // ConfigMap fief-tenant-b is labelled for tenant z: it is neither b's nor z's, and
        // the walk stops at it, neither taking it nor passing it (c's comes after it).
        let tenants = ["a", "c"].map(String::from);
        let mut stray = Inventory::new("z").to_configmap(NAMESPACE);
        stray["metadata"]["name"] = objects::inventory_name("b").into();
        let scenario = holding(&tenants).with_object(&path(&objects::inventory_name("b")), stray);
        let (client, _server) = mock_api_server(scenario);
        let mut walk = Walk::new(&client, NAMESPACE);
        let mut seen = Vec::new();
        let err = loop {
            match walk.next_upto(Some("c")).await {
                Ok(Some(one)) => seen.extend(one.keys().cloned()),
                Ok(None) => panic!("no error after {seen:?}"),
                Err(e) => break e,
            }
        };
        assert_eq!(seen, ["a"]);
        let text = err.to_string();
        assert!(
            text.contains("fief-tenant-b") && text.contains("`z`"),
            "{text}"
        );
    }
}
