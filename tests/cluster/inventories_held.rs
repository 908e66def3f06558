//! A pass over the tenants holds a bounded number of inventories, whatever the fleet's size:
//! `fief apply` (batched and `--wait`), `fief diff` and `fief status` against the real test
//! control plane, with a fleet of more than twice the bound. The library counts the
//! inventories alive at once; a debug build writes the highest count to the file
//! `FIEF_TEST_INVENTORIES_HELD` names, and the test reads it from there. The inventories are
//! listed in pages of [`PAGE`] tenants (`FIEF_TEST_INVENTORY_PAGE`, debug builds only), so each
//! pass reads several pages of the real API server, every page streamed.

use std::process::{Command, Output, Stdio};

use crate::common;

use common::cluster_cli::{APP, TestRepo, assert_exit};
use common::util::text;
use fief::kube::batched::inventories_held_max;

/// Tenants in the fleet: several batches' worth.
const TENANTS: usize = 160;
/// Inventories per LIST page.
const PAGE: usize = 50;
/// The fleet spans several pages.
const _: () = assert!(TENANTS > 2 * PAGE);
/// Tenants synced at once (`--concurrency`).
const CONCURRENCY: usize = 4;

/// Run `fief <args> --kubeconfig <admin>`; its output and the most inventories it held at
/// once (none read: 0).
fn run_counted(args: &[&str]) -> (Output, usize) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("held");
    let out = Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(args)
        .arg("--kubeconfig")
        .arg(common::control_plane().admin_kubeconfig())
        .env("FIEF_TEST_INVENTORIES_HELD", &file)
        .env("FIEF_TEST_INVENTORY_PAGE", PAGE.to_string())
        .stdin(Stdio::null())
        .output()
        .expect("run fief");
    let peak = std::fs::read_to_string(&file)
        .map(|s| s.trim().parse().expect("a count"))
        .unwrap_or(0);
    (out, peak)
}

#[test]
fn apply_diff_and_status_never_hold_more_inventories_than_the_bound() {
    let bound = inventories_held_max(CONCURRENCY);
    assert!(TENANTS > 2 * bound, "the fleet must outgrow the bound");
    let repo = TestRepo::new("");
    let prefix = common::unique("held");
    let names: Vec<String> = (0..TENANTS).map(|i| format!("{prefix}-{i:03}")).collect();
    for (i, name) in names.iter().enumerate() {
        // Some tenants record objects (their inventories have entries to compare).
        repo.tenant(
            name,
            if i % 10 == 0 {
                APP
            } else {
                "  components: []\n"
            },
        );
    }
    let path = repo.path().to_str().unwrap();
    let concurrency = CONCURRENCY.to_string();
    let apply = ["apply", path, "--concurrency", concurrency.as_str()];
    let (cold, _) = run_counted(&apply);
    assert_exit(&cold, 0);

    // A tenant file removed: its inventory is orphaned, found on the way through the others.
    repo.remove(&format!("tenants/{}.yaml", names[TENANTS / 2]));
    let (again, held) = run_counted(&apply);
    assert_exit(&again, 0);
    assert!(
        text(&again.stdout).contains("orphaned"),
        "{}",
        text(&again.stdout)
    );
    assert!(
        (1..=bound).contains(&held),
        "a no-op apply held {held} inventories at once (bound {bound}, {TENANTS} tenants)"
    );

    let waited = [apply[0], apply[1], apply[2], apply[3], "--wait"];
    let (wait, held) = run_counted(&waited);
    assert_exit(&wait, 0);
    assert!(
        (1..=bound).contains(&held),
        "apply --wait held {held} inventories at once (bound {bound})"
    );

    // diff and status take one inventory at a time.
    let (diff, held) = run_counted(&["diff", path]);
    assert_exit(&diff, 1);
    assert!(
        text(&diff.stdout).contains("orphaned"),
        "{}",
        text(&diff.stdout)
    );
    assert_eq!(held, 1, "diff held {held} inventories at once");

    let (status, held) = run_counted(&["status", "--namespace", &repo.agent_ns]);
    let listed = text(&status.stdout)
        .lines()
        .filter(|l| l.starts_with(&prefix))
        .count();
    assert_eq!(listed, TENANTS, "{}", text(&status.stdout));
    assert_eq!(held, 1, "status held {held} inventories at once");
}
