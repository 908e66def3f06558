//! Walk: the inventories of the agent namespace one at a time, in the order of their tenants'
//! names, and the count of the inventories a pass holds.
//!
//! In: the agent namespace. Out: each inventory parsed as it is taken ([`Walk::next_upto`]),
//! inside an [`Inventories`] that counts it while it lives. The ConfigMaps are listed in pages
//! on a task of their own ([`super::pages`]), each parsed as it arrives and a few ahead of
//! the one being taken, and each becomes an inventory when it is taken, so what a pass holds
//! parsed is what it took and has not dropped. A LIST with pages comes back in the order of
//! the ConfigMaps' names (`fief-tenant-<tenant>`), so in the order of the tenants: a pass
//! that walks its tenants sorted by name takes each one's inventory as it reaches it, and
//! every inventory of a tenant it skips (orphaned, out of scope) on the way.
//!
//! The count ([`held`], [`peak_held`]) is of every [`Inventories`] alive in the process. In
//! debug builds (the integration tests), `FIEF_TEST_INVENTORIES_HELD=<file>` writes the peak
//! to that file each time it rises: the tests read how many inventories a command held at
//! once from there. A release build has no such hook.

use std::collections::BTreeMap;
use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;
use tokio::sync::mpsc;

use super::pages::{self, Sent};
use crate::ClusterError;
use fief_core::inventory::{Inventory, InventoryError};
use fief_core::objects;

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

/// The inventories of the agent namespace, taken one at a time in the order of their tenants'
/// names (see the module docs). Dropping it stops the reading.
pub struct Walk {
    configmaps: mpsc::Receiver<Sent>,
    reader: tokio::task::JoinHandle<()>,
    /// The ConfigMap to be taken next, as received.
    front: Option<Value>,
    /// Every ConfigMap was received.
    done: bool,
}

impl Walk {
    /// Start listing the inventory ConfigMaps of `namespace` (on a task of their own).
    pub fn new(client: &kube::Client, namespace: &str) -> Walk {
        let (configmaps, reader) = pages::spawn(client, namespace);
        Walk {
            configmaps,
            reader,
            front: None,
            done: false,
        }
    }

    /// The tenant of the next inventory, receiving it when the last one was taken; `None`
    /// past the last one.
    pub async fn peek(&mut self) -> Result<Option<&str>, ClusterError> {
        if self.front.is_none() && !self.done {
            match self.configmaps.recv().await {
                Some(cm) => self.front = Some(cm?),
                None => self.done = true,
            }
        }
        Ok(self.front.as_ref().map(tenant_of))
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
            .front
            .as_ref()
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
        let Some(cm) = self.front.take() else {
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
    use crate::inventory_store::PAGE;

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
        let count = 2 * PAGE as usize + 10;
        let tenants: Vec<String> = (0..count).map(|i| format!("t-{i:04}")).collect();
        let (client, server) = mock_api_server(holding(&tenants));
        let mut walk = Walk::new(&client, NAMESPACE);
        let mut taken = Vec::new();
        let half = &tenants[count / 2 - 1];
        while let Some(one) = walk.next_upto(Some(half)).await.expect("listed") {
            assert_eq!(one.len(), 1);
            taken.extend(one.keys().cloned());
        }
        assert_eq!(taken, tenants[..count / 2]);
        assert_eq!(
            walk.peek().await.expect("listed"),
            Some(tenants[count / 2].as_str())
        );
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
