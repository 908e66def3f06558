//! The inventories listed in pages against a real API server whose request timeout is shorter
//! than a slow taker needs for a page: the API server cuts the page's answer (its timeout
//! covers the whole answer), and the walk asks for that page again from its token and takes
//! every inventory once, in order.

use std::time::Duration;

use futures::stream::{self, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};

use crate::common;

use fief::core::inventory::Inventory;
use fief::kube::inventory_store::{PAGE, Walk};

/// Inventories in the namespace: more than a page.
const INVENTORIES: usize = PAGE as usize + 100;
/// Bytes of padding in each: a page is far more than the sockets between the API server and
/// the walk hold, so the API server is still writing it when its timeout ends the request.
const PADDING: usize = 64 * 1024;

/// LIST requests for ConfigMaps in one namespace the API server has answered, by its metrics.
async fn namespaced_configmap_lists(client: &kube::Client) -> f64 {
    let request = http::Request::get("/metrics").body(Vec::new()).unwrap();
    let text = client.request_text(request).await.expect("metrics");
    text.lines()
        .filter(|l| l.starts_with("apiserver_request_total{"))
        .filter(|l| {
            l.contains("resource=\"configmaps\"")
                && l.contains("verb=\"LIST\"")
                && l.contains("scope=\"namespace\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_walk_slower_than_the_api_servers_request_timeout_takes_every_inventory_once_in_order() {
    let cp = common::own_control_plane_with(&[("FIEF_CP_REQUEST_TIMEOUT", "3s")]);
    let namespace = "fief-system";
    common::kubectl::Kubectl::kubeconfig(cp.admin_kubeconfig()).ok(&[
        "create",
        "namespace",
        namespace,
    ]);
    let client = cp.admin_client().await;
    let tenants: Vec<String> = (0..INVENTORIES).map(|i| format!("t-{i:04}")).collect();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let created: Vec<_> = stream::iter(&tenants)
        .map(|t| {
            let mut cm = Inventory::new(t).to_configmap(namespace);
            cm["data"]["padding"] = "x".repeat(PADDING).into();
            let cm: ConfigMap = serde_json::from_value(cm).expect("a ConfigMap");
            let api = api.clone();
            async move { api.create(&PostParams::default(), &cm).await }
        })
        .buffer_unordered(8)
        .collect()
        .await;
    assert!(created.iter().all(Result::is_ok), "every inventory created");

    let lists_before = namespaced_configmap_lists(&client).await;
    let mut walk = Walk::new(&client, namespace);
    let mut taken = Vec::new();
    while let Some(one) = walk.next().await.expect("every inventory walked") {
        taken.extend(one.keys().cloned());
        // The taker is slow: a page takes it several times the API server's timeout.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let lists = namespaced_configmap_lists(&client).await - lists_before;
    cp.stop();
    assert_eq!(taken, tenants, "every inventory once, in order");
    let pages = INVENTORIES.div_ceil(PAGE as usize) as f64;
    assert!(
        lists > pages,
        "the API server cut a page and the walk asked for it again ({lists} LISTs for {pages} pages)"
    );
}
