//! `fief import`: Flux and Argo CD fleets (the fixtures under `tests/fixtures/import/`) become
//! a tenants repo that `fief validate` accepts once the charts are served (the test chart,
//! packaged and indexed by the pinned helm, served on loopback) and the kustomizations copied
//! in as the report says; shared values land in varz.yaml and environment files and the rest in
//! tenant files; what cannot be mapped is in the report with its file and line; Secret data
//! never reaches a written file; a non-empty `--out` is refused.
//!
//! Needs `$FIEF_RENDER_HELPER` and `$FIEF_HELM_BIN` (tools/test.sh sets both).

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::chart_repos::{HttpRepo, copy_dir, package};
use crate::common::offline::{fief_with_charts, stderr, stdout, text_files_under};

/// The fixture URL of the chart repository, replaced by the loopback server's.
const CHARTS: &str = "https://charts.example.com/podinfo";
/// The git repository the fixtures' kustomizations and generators read.
const APPS: &str = "https://git.example.com/acme/apps.git";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(name)
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

fn read(root: &Path, path: &str) -> String {
    std::fs::read_to_string(root.join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}; written: {:?}", written(root)))
}

/// Every file written under `root`, relative to it.
fn written(root: &Path) -> Vec<String> {
    text_files_under(root).into_iter().map(|(p, _)| p).collect()
}

/// The test chart, packaged and served as a Helm repository on loopback.
struct Charts {
    _home: tempfile::TempDir,
    http: HttpRepo,
}

fn serve_chart() -> Charts {
    let home = tempfile::tempdir().expect("tempdir");
    let served = home.path().join("served");
    package(home.path(), &fixture("charts/podinfo"), "6.7.1", &served);
    let http = HttpRepo::serve(&served);
    http.index(home.path());
    Charts { _home: home, http }
}

/// The fixture folder `name` copied to `to`, its chart repository URL pointed at `url`.
fn fleet_at(name: &str, to: &Path, url: &str) {
    copy_dir(&fixture(name), to);
    for (rel, text) in text_files_under(to) {
        if text.contains(CHARTS) {
            std::fs::write(to.join(rel), text.replace(CHARTS, url)).expect("write the fixture");
        }
    }
}

/// Import `from` into `out`; the command must succeed.
fn import(cache: &Path, from: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["import", "--from", path_str(from), "--out", path_str(out)];
    args.extend_from_slice(extra);
    let o = fief_with_charts(cache, &args);
    assert!(
        o.status.success(),
        "fief import: {}{}",
        stdout(&o),
        stderr(&o)
    );
    o
}

/// Copy the kustomization `apps/web` of the apps repo into `component`, as the report says.
fn copy_web(out: &Path, component: &str) {
    copy_dir(
        &fixture("apps-repo/apps/web"),
        &out.join("components").join(component),
    );
}

/// `fief chart update` then `fief validate` on `out`; both must pass.
fn lock_and_validate(cache: &Path, out: &Path) -> String {
    let update = fief_with_charts(cache, &["chart", "update", path_str(out)]);
    assert!(
        update.status.success(),
        "fief chart update: {}",
        stderr(&update)
    );
    let validate = fief_with_charts(cache, &["validate", path_str(out)]);
    assert!(
        validate.status.success(),
        "fief validate: {}{}",
        stdout(&validate),
        stderr(&validate)
    );
    stdout(&validate)
}

#[test]
fn a_flux_fleet_becomes_a_repo_that_validates_with_shared_values_in_varz_and_environments() {
    let charts = serve_chart();
    let work = tempfile::tempdir().expect("tempdir");
    let (cache, from, out) = (
        work.path().join("cache"),
        work.path().join("flux"),
        work.path().join("repo"),
    );
    fleet_at("flux", &from, &charts.http.url);
    let o = import(&cache, &from, &out, &[]);
    let component = read(&out, "components/podinfo/component.yaml");
    for want in [
        "kind: helm",
        &charts.http.url,
        "name: podinfo",
        "version: \"6.7.1\"",
    ] {
        assert!(component.contains(want), "no {want:?} in:\n{component}");
    }
    assert!(
        !component.contains("crds: Skip"),
        "one release of three skips CRDs:\n{component}"
    );
    // What every release agrees on, what every prod tenant agrees on, what is the tenant's own.
    assert!(read(&out, "components/podinfo/varz.yaml").contains("redis:\n  enabled: false"));
    let prod = read(&out, "environments/prod.yaml");
    assert!(
        prod.contains("podinfo:\n    logLevel: warn\n    replicaCount: 3"),
        "{prod}"
    );
    let acme = read(&out, "tenants/acme.yaml");
    for want in [
        "environments: [dev, prod]",
        "color: \"#ff0000\"",
        "dev:\n      components:\n        podinfo:\n          values:\n            logLevel: debug",
        "message: Acme (dev)",
        // The ConfigMap named in valuesFrom, merged.
        "cpu: \"100m\"",
        "greeting: \"Hello, Acme\"",
    ] {
        assert!(
            acme.contains(want),
            "no {want:?} in tenants/acme.yaml:\n{acme}"
        );
    }
    let web = read(&out, "components/web/component.yaml");
    for want in [
        "kind: kustomize",
        "path: overlays/prod",
        "newTag: images.web.newTag",
        "greeting: vars.greeting",
    ] {
        assert!(web.contains(want), "no {want:?} in:\n{web}");
    }
    assert!(read(&out, "components/web/varz.yaml").contains("newTag: \"1.4.2\""));
    assert!(stdout(&o).contains("Wrote"), "{}", stdout(&o));
    copy_web(&out, "web");
    let summary = lock_and_validate(&cache, &out);
    assert!(summary.contains("3 tenants, 3 valid"), "{summary}");
}

#[test]
fn the_report_names_file_line_and_what_to_do_for_each_field_not_mapped() {
    let work = tempfile::tempdir().expect("tempdir");
    let (cache, out) = (work.path().join("cache"), work.path().join("repo"));
    let from = fixture("flux");
    let o = import(&cache, &from, &out, &[]);
    let printed = stdout(&o);
    let report = read(&out, "IMPORT-REPORT.md");
    let globex = format!("{}/tenants/globex.yaml", from.display());
    for want in [
        format!("{globex}:28: HelmRelease globex-prod/podinfo: spec.postRenderers: not mapped"),
        format!("{globex}:1: HelmRelease globex-prod/podinfo: version: runs the chart at 6.7.0"),
        format!(
            "{globex}:49: Kustomization flux-system/globex-web: spec.prune: `prune: false` not mapped"
        ),
        "globex-prod/redis is not imported".to_string(),
        "HelmRelease initech-prod/podinfo: spec.chart.spec.valuesFiles: not mapped".to_string(),
        "Alert flux-system/fleet: a Flux Alert: not mapped".to_string(),
        "OCIRepository flux-system/platform-manifests".to_string(),
        "copy `apps/web` into components/web/ so that `apps/web/overlays/prod` is components/web/overlays/prod"
            .to_string(),
    ] {
        assert!(
            printed.contains(&want),
            "stdout has no {want:?}:\n{printed}"
        );
        assert!(
            report.contains(&want),
            "IMPORT-REPORT.md has no {want:?}:\n{report}"
        );
    }
    // Plain Kubernetes objects are skipped without a word.
    assert!(!printed.contains("Namespace"), "{printed}");
    let json = fief_with_charts(
        &cache,
        &[
            "import",
            "--from",
            path_str(&from),
            "--out",
            path_str(&work.path().join("json")),
            "--format",
            "json",
        ],
    );
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).expect("the JSON report");
    let findings = value["findings"].as_array().expect("findings");
    assert!(
        findings
            .iter()
            .any(|f| f["field"] == "spec.postRenderers" && f["line"] == 28),
        "{value}"
    );
}

#[test]
fn argo_cd_applications_and_application_sets_become_one_tenant_per_customer_and_validate() {
    let charts = serve_chart();
    let work = tempfile::tempdir().expect("tempdir");
    let (cache, from, out) = (
        work.path().join("cache"),
        work.path().join("argo"),
        work.path().join("repo"),
    );
    fleet_at("argo", &from, &charts.http.url);
    let checkout = format!("{APPS}={}", fixture("apps-repo").display());
    let o = import(&cache, &from, &out, &["--checkout", &checkout]);
    let printed = stdout(&o);
    // The list generator's elements, the git generator's folders, the cluster generator's
    // cluster (on that cluster), and the Application of its own.
    for tenant in ["umbrella", "wayne", "stark", "tyrell", "cyberdyne", "hooli"] {
        assert!(
            out.join(format!("tenants/{tenant}.yaml")).is_file(),
            "no tenant {tenant}: {:?}",
            written(&out)
        );
    }
    assert!(
        read(&out, "tenants/wayne.yaml").contains("color: \"#654321\"\n          message: wayne")
    );
    assert!(read(&out, "tenants/stark.yaml").contains("environments: [dev]"));
    let cyberdyne = read(&out, "tenants/cyberdyne.yaml");
    assert!(
        cyberdyne.contains("cluster: eu-1") && cyberdyne.contains("cyberdyne on eu-1"),
        "{cyberdyne}"
    );
    let hooli = read(&out, "tenants/hooli.yaml");
    assert!(
        hooli.contains("replicaCount: 2"),
        "helm.parameters typed as Helm types them:\n{hooli}"
    );
    // Sync wave 2 after wave 1 in the same namespace: dependsOn.
    assert!(read(&out, "components/web/component.yaml").contains("dependsOn:\n- podinfo"));
    assert!(read(&out, "components/web-dev/varz.yaml").contains("newTag: \"2.0.0\""));
    for want in [
        "spec.source.kustomize.namePrefix: not mapped",
        "spec.ignoreDifferences: not mapped",
        "the matrix generator is not mapped",
        "deploys into `kube-system`, a platform namespace",
        "(from ApplicationSet argocd/dedicated element 1)",
    ] {
        assert!(printed.contains(want), "stdout has no {want:?}:\n{printed}");
    }
    copy_web(&out, "web");
    copy_web(&out, "web-dev");
    let summary = lock_and_validate(&cache, &out);
    assert!(summary.contains("6 tenants, 6 valid"), "{summary}");
}

#[test]
fn a_git_generator_without_its_checkout_generates_nothing_and_says_how_to_give_it() {
    let work = tempfile::tempdir().expect("tempdir");
    let o = import(
        &work.path().join("cache"),
        &fixture("argo"),
        &work.path().join("repo"),
        &[],
    );
    let want = format!("nothing generated; check it out and pass `--checkout {APPS}=DIR`");
    assert!(stdout(&o).contains(&want), "{}", stdout(&o));
    assert!(!work.path().join("repo/tenants/stark.yaml").exists());
}

#[test]
fn secret_data_is_never_written_and_each_secret_value_becomes_a_secret_values_entry() {
    let work = tempfile::tempdir().expect("tempdir");
    let out = work.path().join("repo");
    let o = import(&work.path().join("cache"), &fixture("secrets"), &out, &[]);
    for (path, text) in text_files_under(&out) {
        for secret in [
            "super-secret-redis-password",
            "c3VwZXItc2VjcmV0",
            "plain-text-api-token",
        ] {
            assert!(
                !text.contains(secret),
                "{path} holds secret data {secret:?}"
            );
        }
    }
    assert!(!stdout(&o).contains("plain-text-api-token"));
    let podinfo = read(&out, "components/podinfo/component.yaml");
    assert!(
        podinfo.contains("secretValues:\n  redis.password: tenant.podinfoRedisPassword"),
        "{podinfo}"
    );
    let web = read(&out, "components/web/component.yaml");
    assert!(
        web.contains("vars.api_token: tenant.webVarsApiToken")
            && web.contains("api_token: vars.api_token"),
        "{web}"
    );
    let report = read(&out, "IMPORT-REPORT.md");
    for want in [
        "sops set secrets/tenants/acme.sops.yaml '[\"podinfoRedisPassword\"]'",
        "Secret acme-prod/podinfo-extra-values key values.yaml holds a whole values file: not mapped",
    ] {
        assert!(report.contains(want), "no {want:?} in:\n{report}");
    }
}

#[test]
fn a_non_empty_out_folder_is_refused_and_left_as_it_was() {
    let work = tempfile::tempdir().expect("tempdir");
    let out = work.path().join("repo");
    std::fs::create_dir_all(&out).expect("mkdir");
    std::fs::write(out.join("notes.txt"), "mine").expect("write");
    let o = fief_with_charts(
        &work.path().join("cache"),
        &[
            "import",
            "--from",
            path_str(&fixture("flux")),
            "--out",
            path_str(&out),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is not an empty folder; import overwrites nothing"),
        "{}",
        stderr(&o)
    );
    assert_eq!(written(&out), vec!["notes.txt".to_string()]);
}

#[test]
fn input_without_flux_or_argo_cd_objects_writes_nothing() {
    let work = tempfile::tempdir().expect("tempdir");
    let from = work.path().join("plain.yaml");
    std::fs::write(
        &from,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    )
    .expect("write");
    let out = work.path().join("repo");
    let o = fief_with_charts(
        &work.path().join("cache"),
        &["import", "--from", path_str(&from), "--out", path_str(&out)],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no Flux or Argo CD object"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());
}

#[test]
fn objects_exported_as_a_kubectl_list_are_imported_item_by_item() {
    let work = tempfile::tempdir().expect("tempdir");
    let from = work.path().join("flux.yaml");
    std::fs::write(
        &from,
        "apiVersion: v1\nkind: List\nitems:\n\
         - apiVersion: source.toolkit.fluxcd.io/v1\n  kind: HelmRepository\n  metadata:\n    \
         name: podinfo\n    namespace: flux-system\n  spec:\n    url: https://charts.example.com/podinfo\n\
         - apiVersion: helm.toolkit.fluxcd.io/v2\n  kind: HelmRelease\n  metadata:\n    \
         name: podinfo\n    namespace: acme-prod\n  spec:\n    chart:\n      spec:\n        \
         chart: podinfo\n        version: 6.7.1\n        sourceRef: {kind: HelmRepository, name: podinfo, namespace: flux-system}\n    \
         serviceAccountName: deployer\n",
    )
    .expect("write");
    let out = work.path().join("repo");
    let o = import(&work.path().join("cache"), &from, &out, &[]);
    assert!(
        out.join("tenants/acme.yaml").is_file(),
        "{:?}",
        written(&out)
    );
    let want = format!(
        "{}:22: HelmRelease acme-prod/podinfo: spec.serviceAccountName: not mapped",
        from.display()
    );
    assert!(stdout(&o).contains(&want), "{}", stdout(&o));
}

#[test]
fn flux_overlays_per_cluster_become_environments_of_one_tenant_with_overrides() {
    let charts = serve_chart();
    let work = tempfile::tempdir().expect("tempdir");
    let (cache, from, out) = (
        work.path().join("cache"),
        work.path().join("clusters"),
        work.path().join("repo"),
    );
    fleet_at("clusters", &from, &charts.http.url);
    let o = import(&cache, &from, &out, &[]);
    let tenant = read(&out, "tenants/podinfo.yaml");
    for want in [
        "environments: [production, staging]",
        "production:\n      components:\n        podinfo:\n          values:\n            replicaCount: 3\n            ui:\n              message: podinfo on production",
        "staging:\n      components:\n        podinfo:\n          values:\n            replicaCount: 1",
    ] {
        assert!(tenant.contains(want), "no {want:?} in:\n{tenant}");
    }
    assert!(
        stdout(&o).contains("namespace `podinfo` becomes `podinfo-staging`"),
        "{}",
        stdout(&o)
    );
    let summary = lock_and_validate(&cache, &out);
    assert!(summary.contains("1 tenant, 1 valid"), "{summary}");
}
