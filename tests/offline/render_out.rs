//! `fief render --out` as a user runs it twice into one folder: a render that fails leaves the
//! folder as the last good one wrote it.

use std::path::Path;

use crate::common::offline::{fief, stderr, write_file};

fn tenant(name: &str) -> String {
    format!(
        "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  components: [{{name: app}}]\n"
    )
}

fn render_out(repo: &Path, out: &Path) -> std::process::Output {
    fief(&[
        "render",
        repo.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ])
}

#[test]
fn a_render_with_a_failed_tenant_leaves_the_out_folder_as_the_last_good_render_wrote_it() {
    let repo = tempfile::tempdir().expect("temp dir");
    write_file(repo.path(), "fief.yaml", "baseDomain: example.com\n");
    for name in ["acme", "beta"] {
        write_file(repo.path(), &format!("tenants/{name}.yaml"), &tenant(name));
    }
    let template = "components/app/templates/cm.yaml";
    write_file(
        repo.path(),
        template,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  t: {{ tenant.name }}\n",
    );
    let root = tempfile::tempdir().expect("temp dir");
    let out = root.path().join("out");
    let first = render_out(repo.path(), &out);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let acme = out.join("acme/acme-prod/configmap.app.yaml");
    let written = std::fs::read_to_string(&acme).expect("acme's ConfigMap");
    let list = std::fs::read_to_string(out.join(".fief-render")).expect("the list");

    // beta now fails; acme would render differently.
    write_file(
        repo.path(),
        template,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  t: {{ tenant.name }}-2\n  x: {{ values.nothing.here if tenant.name == 'beta' else 1 }}\n",
    );
    let second = render_out(repo.path(), &out);
    assert_eq!(second.status.code(), Some(1), "{}", stderr(&second));
    assert!(
        stderr(&second).contains("tenant `beta`"),
        "{}",
        stderr(&second)
    );
    assert_eq!(std::fs::read_to_string(&acme).expect("kept"), written);
    assert_eq!(
        std::fs::read_to_string(out.join(".fief-render")).expect("kept"),
        list
    );
    assert!(out.join("beta/beta-prod/configmap.app.yaml").is_file());
    assert!(!out.join(".fief-render.staging").exists());

    // Fixed, the next render replaces the tree.
    write_file(
        repo.path(),
        template,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  t: {{ tenant.name }}-2\n",
    );
    let third = render_out(repo.path(), &out);
    assert_eq!(third.status.code(), Some(0), "{}", stderr(&third));
    assert!(
        std::fs::read_to_string(&acme)
            .expect("rewritten")
            .contains("acme-2")
    );
    assert!(!out.join(".fief-render.staging").exists());
}
