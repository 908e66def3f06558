//! The shard manager's renewals against the mock API server: a round sends the membership
//! Lease and every held shard's Lease together, so it takes one answer's time however many
//! shards the replica holds, and the fence stays open while the round waits.

use std::sync::Arc;

use http::Method;

use super::*;
use crate::kit::{AGENT_NS, Kit, fleet, tenant};
use fief_kube::fixtures::Scenario;

const COUNT: u32 = 4;

fn lease_path(name: &str) -> String {
    format!("/apis/coordination.k8s.io/v1/namespaces/{AGENT_NS}/leases/{name}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_round_sends_every_held_lease_at_once_and_the_fence_stays_open_meanwhile() {
    let kit = Kit::start(&fleet("", &[tenant("acme", "", "", "")]), Scenario::new()).await;
    let own = Arc::new(Ownership::new(COUNT));
    let fence = Fence::new();
    let sharding = start(
        &kit.shared,
        own.clone(),
        AGENT_NS,
        kit.server.client(),
        fence.clone(),
    )
    .await;
    let Some(sharding) = sharding else {
        panic!("the replica became a member")
    };
    kit.wait("the lone replica to take every shard", |_| {
        own.held().len() == COUNT as usize
    })
    .await;

    let mut names = vec![member_lease(&crate::leader::identity())];
    names.extend((0..COUNT).map(|s| shard_lease(s, COUNT)));
    let held: Vec<_> = names
        .iter()
        .map(|n| kit.server.hold(Method::PUT, &lease_path(n)))
        .collect();
    // One at a time, a round would hold one write waiting and never send the next.
    kit.wait("every Lease's renewal to wait at once", |_| {
        held.iter().all(|h| h.waiting() == 1)
    })
    .await;
    assert!(
        fence.admits(std::time::Instant::now()),
        "the fence is open while the round waits"
    );
    let puts = || {
        let paths: Vec<String> = names.iter().map(|n| lease_path(n)).collect();
        let writes = kit.server.writes();
        writes
            .iter()
            .filter(|w| w.method == Method::PUT && paths.contains(&w.path))
            .count()
    };
    let before = puts();
    for h in &held {
        h.release();
    }
    kit.wait("the held round and the next one answered", |_| {
        puts() >= before + 2 * names.len()
    })
    .await;
    assert!(
        fence.admits(std::time::Instant::now()),
        "still open after the round"
    );
    assert_eq!(own.held().len(), COUNT as usize, "every shard still held");
    sharding.finish().await;
}
