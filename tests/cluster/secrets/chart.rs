//! A SOPS secret reaches a chart only through the component's `secretValues`: the chart's
//! Secret holds it in the cluster, and nothing fief prints does; `render` without a key shows
//! the Secret's data redacted; a mapping to a secret the tenant does not have fails that
//! tenant alone, naming the entry and not the value.

use super::*;

use common::cluster_cli::{TestRepo, fief_with};

const PLAIN: &str = "chart-db-Pw-93Xk";

/// A `db` chart whose Secret carries `.Values.auth.password`, mapped from the tenant's
/// `dbPassword`; tenants `ok` (with the secret) and `bad` (mapped to a key it lacks).
fn chart_repo(ok: &str, bad: &str) -> (TestRepo, AgeKey) {
    let repo = TestRepo::new("");
    let key = sops::age_keygen(repo.path(), "fief.agekey");
    let chart = "components/db/chart";
    repo.write(
        &format!("{chart}/Chart.yaml"),
        "apiVersion: v2\nname: db\nversion: 1.0.0\n",
    );
    repo.write(
        &format!("{chart}/values.yaml"),
        "auth:\n  user: app\n  password: \"\"\n",
    );
    repo.write(
        &format!("{chart}/templates/secret.yaml"),
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-auth\ndata:\n  \
         user: {{ .Values.auth.user | b64enc }}\n  password: {{ .Values.auth.password | b64enc }}\n",
    );
    repo.write(
        "components/db/component.yaml",
        "kind: helm\nchart: chart\nsecretValues:\n  auth.password: tenant.dbPassword\n",
    );
    for (t, plain) in [
        (ok, format!("dbPassword: {PLAIN}\n")),
        (bad, "other: x-123456\n".into()),
    ] {
        repo.tenant(t, "  components:\n    - name: db\n");
        let file = format!("secrets/tenants/{t}.sops.yaml");
        sops::encrypt(repo.path(), &file, &plain, &[&key.recipient]);
    }
    (repo, key)
}

#[test]
fn a_chart_gets_a_secret_only_through_secret_values_and_fief_never_prints_it() {
    let (ok, bad) = (common::unique("csec"), common::unique("csec-bad"));
    let (repo, key) = chart_repo(&ok, &bad);
    let admin = common::control_plane().admin_kubeconfig();
    let key_file = key.file.to_string_lossy().into_owned();
    let out = fief_with(
        "apply",
        repo.path(),
        admin,
        &["--age-key-file", &key_file],
        &[],
    );
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "the bad tenant fails:\n{said}");
    assert!(!said.contains(PLAIN), "{said}");
    assert!(
        said.contains("secretValues.auth.password")
            && said.contains("`secrets.tenant.dbPassword` is not in"),
        "{said}"
    );
    let got = common::cluster_cli::kubectl(&[
        "get",
        "secret",
        "-n",
        &format!("{ok}-prod"),
        "db-auth",
        "-o",
        "json",
    ]);
    assert!(got.status.success(), "{said}");
    let secret: serde_json::Value = serde_json::from_slice(&got.stdout).unwrap_or_default();
    assert_eq!(secret["data"]["password"], b64(PLAIN), "{secret}");
    assert_eq!(secret["data"]["user"], b64("app"));
    let none =
        common::cluster_cli::kubectl(&["get", "secret", "-n", &format!("{bad}-prod"), "db-auth"]);
    assert!(
        !none.status.success(),
        "nothing of the failing tenant is applied"
    );

    // Without a key, render shows the placeholder, never the value.
    let render = Command::new(fief_bin())
        .arg("render")
        .arg(repo.path())
        .args(["--tenant", &ok])
        .env_remove("SOPS_AGE_KEY_FILE")
        .env_remove("SOPS_AGE_KEY")
        .output()
        .expect("run fief render");
    let shown = text(&render.stdout);
    assert!(render.status.success(), "{}", text(&render.stderr));
    assert!(shown.contains("password: <redacted>"), "{shown}");
    assert!(!shown.contains(&b64(PLAIN)) && !shown.contains(PLAIN));
}
