//! `fief validate` on a fleet of 100,000 tenants, as a user runs it: tiny tenant files (a name
//! each, the default environment) and a baseline of one Namespace, so the test measures the
//! fleet's size, not the render of each tenant. The files are written on a few threads.

use std::path::Path;

use crate::common::offline::{fief, stderr, stdout, write_file};

/// Tenants in the fleet.
const TENANTS: usize = 100_000;

fn name(i: usize) -> String {
    format!("t-{i:06}")
}

/// A repo of `TENANTS` tenants; the last claims the first one's host suffix.
fn write_fleet(root: &Path) {
    write_file(root, "fief.yaml", "baseDomain: fleet.example\n");
    write_file(
        root,
        "baseline/namespace.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {{ namespace }}\n",
    );
    std::fs::create_dir_all(root.join("tenants")).expect("tenants folder");
    let threads = 4;
    std::thread::scope(|s| {
        for t in 0..threads {
            s.spawn(move || {
                for i in (t..TENANTS).step_by(threads) {
                    let name = name(i);
                    let mut text = format!(
                        "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\n"
                    );
                    if i == TENANTS - 1 {
                        text.push_str(&format!(
                            "spec:\n  hostSuffixes: [{}.fleet.example]\n",
                            self::name(0)
                        ));
                    }
                    std::fs::write(root.join(format!("tenants/{name}.yaml")), text)
                        .expect("write tenant file");
                }
            });
        }
    });
}

#[test]
fn a_repo_of_100000_tenants_validates_with_the_checks_across_the_whole_fleet() {
    let dir = tempfile::tempdir().expect("temp dir");
    write_fleet(dir.path());
    let out = fief(&["validate", dir.path().to_str().expect("utf-8 path")]);
    let (text, err) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        text.ends_with(&format!(
            "{TENANTS} tenants, {} valid, 1 invalid\n",
            TENANTS - 1
        )),
        "{}",
        &text[text.len().saturating_sub(300)..]
    );
    assert!(
        text.starts_with("t-000000: ok (1 namespaces, 1 objects)\n"),
        "{}",
        &text[..200]
    );
    let last = name(TENANTS - 1);
    assert!(
        err.contains(&format!("tenants/{last}.yaml:6: tenant `{last}`")) && err.contains(&name(0)),
        "{err}"
    );
}
