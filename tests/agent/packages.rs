//! `kind: helm` and `kind: kustomize` components through the agent, on the real control plane:
//! a chart tenant applied and a one-value change that writes one object; a chart version bump
//! rolled out wave by wave, halted at the wave whose tenant the new chart version cannot
//! render (the later wave keeps the old version), completed once `fief bump --ref` pins that
//! tenant to the old chart; a kustomize tenant applied, and what its overlay no longer builds
//! pruned.
//!
//! Needs `$FIEF_RENDER_HELPER` (tools/test.sh sets it); the agent finds the helper through it.

use crate::common;

use std::process::Command;
use std::time::Duration;

use common::agent::*;

/// A small chart at `version`: one ConfigMap naming the release, its version and `greeting`;
/// from 2.0.0 on it also needs `tier`, which only some tenants set.
fn chart(version: &str) -> Vec<(String, String)> {
    let needs_tier = if version.starts_with('1') {
        ""
    } else {
        "  tier: {{ required \"tier is required from chart 2.0.0 on\" .Values.tier | quote }}\n"
    };
    let dir = "components/web/chart";
    vec![
        (
            format!("{dir}/Chart.yaml"),
            format!("apiVersion: v2\nname: web\nversion: {version}\n"),
        ),
        (
            format!("{dir}/values.yaml"),
            "greeting: hello\ntier: \"\"\n".to_string(),
        ),
        (
            format!("{dir}/templates/cm.yaml"),
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{{{ .Release.Name }}}}-config\n  \
                 labels:\n    helm.sh/chart: {{{{ .Chart.Name }}}}-{{{{ .Chart.Version }}}}\ndata:\n  \
                 chartVersion: {{{{ .Chart.Version | quote }}}}\n  greeting: {{{{ .Values.greeting | quote }}}}\n{needs_tier}"
            ),
        ),
    ]
}

fn component() -> (String, String) {
    (
        "components/web/component.yaml".to_string(),
        "kind: helm\nchart: chart\n".to_string(),
    )
}

/// A tenant file whose `web` entry has the given extra lines (`ref: web-1`, `values: ...`),
/// written in block style so `fief bump` edits it.
fn tenant(name: &str, ring: &str, lines: &[&str]) -> (String, String) {
    let extra: String = lines.iter().map(|l| format!("      {l}\n")).collect();
    (
        format!("tenants/{name}.yaml"),
        format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\n  labels: {{ring: {ring}}}\nspec:\n  components:\n    - name: web\n{extra}"
        ),
    )
}

fn cm(tenant: &str, key: &str) -> Option<String> {
    configmap_value(&format!("{tenant}-prod"), "web-config", key)
}

fn head(server: &GitServer) -> String {
    git(&server.repo(), &["rev-parse", "HEAD"])
        .trim()
        .to_string()
}

#[test]
fn a_chart_tenant_is_applied_by_the_agent_and_a_one_value_change_writes_one_object() {
    let agent_ns = common::unique("fief-chart");
    let t = common::unique("chart");
    let mut files = vec![
        (
            "fief.yaml".to_string(),
            format!("agentNamespace: {agent_ns}\n"),
        ),
        component(),
        tenant(&t, "any", &[]),
    ];
    files.extend(chart("1.0.0"));
    let server = GitServer::new(&files);
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    wait_until("the chart tenant applied", Duration::from_secs(30), || {
        cm(&t, "greeting").as_deref() == Some("hello")
    });
    let ns = format!("{t}-prod");
    let cm_json = kubectl_json(&["get", "configmap", "-n", &ns, "web-config"]).unwrap_or_default();
    assert_eq!(cm_json["metadata"]["labels"]["fief.dev/component"], "web");
    assert_eq!(cm_json["metadata"]["labels"]["helm.sh/chart"], "web-1.0.0");
    let inventory = resource_version(&agent_ns, "configmap", &format!("fief-tenant-{t}"));
    let before = resource_version(&ns, "configmap", "web-config");

    server.commit(
        &[tenant(&t, "any", &["values: {greeting: hi}"])],
        "greeting hi",
    );
    assert_eq!(agent.signed_push(), 202);
    wait_until(
        "the value reaches the cluster",
        Duration::from_secs(30),
        || cm(&t, "greeting").as_deref() == Some("hi"),
    );
    assert_ne!(before, resource_version(&ns, "configmap", "web-config"));
    let st = status(&agent_ns, &t);
    assert_eq!(condition(&st, "Ready"), "True", "{st}");
    assert_eq!(st["counts"]["configured"], 1, "{st}");
    assert_ne!(
        inventory,
        resource_version(&agent_ns, "configmap", &format!("fief-tenant-{t}"))
    );
}

#[test]
fn a_chart_version_bump_rolls_out_wave_by_wave_halts_at_a_tenant_it_fails_and_fief_bump_pins_that_tenant_back()
 {
    let agent_ns = common::unique("fief-cbump");
    let p = common::unique("cb");
    let (canary, early, rest) = (format!("{p}-c"), format!("{p}-e"), format!("{p}-r"));
    let mut files = waves(&agent_ns, "");
    files.retain(|(path, _)| path == "fief.yaml");
    files.push(component());
    files.extend(chart("1.0.0"));
    // Only the canary and rest tenants set `tier`, which chart 2.0.0 needs.
    files.push(tenant(&canary, "canary", &["values: {tier: gold}"]));
    files.push(tenant(&early, "early", &[]));
    files.push(tenant(&rest, "other", &["values: {tier: gold}"]));
    let server = GitServer::new(&files);
    git(&server.repo(), &["tag", "web-1"]);
    let agent = Agent::start(&server.url(), &["--interval", "1s"]);
    for t in [&canary, &early, &rest] {
        let t = t.as_str();
        wait_until("chart 1.0.0 applied", Duration::from_secs(30), || {
            cm(t, "chartVersion").as_deref() == Some("1.0.0")
        });
    }
    // Chart 2.0.0 reaches every tenant through the component: rolled out wave by wave.
    server.commit(&chart("2.0.0"), "chart 2.0.0");
    let bumped = head(&server);
    assert_eq!(agent.signed_push(), 202);
    wait_until("the rollout halts", Duration::from_secs(60), || {
        let r = rollout_record(&agent_ns);
        r["commit"] == bumped.as_str() && r["phase"] == "Halted"
    });
    let r = rollout_record(&agent_ns);
    let reason = r["reason"].as_str().unwrap_or("");
    assert!(
        reason.contains("wave 2 \"early\"") && reason.contains("tier is required"),
        "{r}"
    );
    assert_eq!(cm(&canary, "chartVersion").as_deref(), Some("2.0.0"));
    assert_eq!(cm(&early, "chartVersion").as_deref(), Some("1.0.0"));
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        cm(&rest, "chartVersion").as_deref(),
        Some("1.0.0"),
        "the wave after the halt keeps the old chart:\n{}",
        agent.log()
    );
    let st = status(&agent_ns, &early);
    assert_eq!(condition(&st, "Stalled"), "True", "{st}");

    // `fief bump` pins the failing tenant to the old chart; the rollout then completes.
    let bump = Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(["bump", "--tenant", &early, "--ref", "web-1", "--commit"])
        .args(["--color", "never"])
        .arg(server.repo())
        .arg("web")
        .output()
        .expect("run fief bump");
    let said = String::from_utf8_lossy(&bump.stderr);
    assert!(bump.status.success(), "{said}");
    let pinned = head(&server);
    assert_eq!(agent.signed_push(), 202);
    wait_until("the rollout completes", Duration::from_secs(60), || {
        let r = rollout_record(&agent_ns);
        r["commit"] == pinned.as_str() && r["phase"] == "Complete"
    });
    assert_eq!(cm(&rest, "chartVersion").as_deref(), Some("2.0.0"));
    assert_eq!(cm(&early, "chartVersion").as_deref(), Some("1.0.0"));
    let st = status(&agent_ns, &early);
    assert_eq!(condition(&st, "Ready"), "True", "{st}");
}

/// A kustomize component: a base (ConfigMap and Service) and an overlay that patches the
/// ConfigMap; the next commit's overlay drops the Service.
fn kustomize_files(with_service: bool) -> Vec<(String, String)> {
    let dir = "components/site";
    let resources = if with_service {
        "resources: [cm.yaml, svc.yaml]\n"
    } else {
        "resources: [cm.yaml]\n"
    };
    vec![
        (
            format!("{dir}/component.yaml"),
            "kind: kustomize\npath: overlays/prod\n".to_string(),
        ),
        (format!("{dir}/base/kustomization.yaml"), resources.to_string()),
        (
            format!("{dir}/base/cm.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: site\ndata:\n  mode: base\n"
                .to_string(),
        ),
        (
            format!("{dir}/base/svc.yaml"),
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: site\nspec:\n  ports: [{port: 80}]\n  selector: {app: site}\n"
                .to_string(),
        ),
        (
            format!("{dir}/overlays/prod/kustomization.yaml"),
            "resources: [../../base]\nnamePrefix: prod-\npatches:\n  - patch: |\n      - op: replace\n        path: /data/mode\n        value: overlay\n    target: {kind: ConfigMap, name: site}\n"
                .to_string(),
        ),
    ]
}

#[test]
fn a_kustomize_tenant_is_applied_by_the_agent_and_what_its_overlay_no_longer_builds_is_pruned() {
    let agent_ns = common::unique("fief-kust");
    let t = common::unique("kust");
    let mut files = vec![
        (
            "fief.yaml".to_string(),
            format!("agentNamespace: {agent_ns}\n"),
        ),
        (
            format!("tenants/{t}.yaml"),
            format!(
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {t}\nspec:\n  components:\n    - name: site\n"
            ),
        ),
    ];
    files.extend(kustomize_files(true));
    let server = GitServer::new(&files);
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    let ns = format!("{t}-prod");
    wait_until("the overlay applied", Duration::from_secs(30), || {
        configmap_value(&ns, "prod-site", "mode").as_deref() == Some("overlay")
            && kubectl_json(&["get", "service", "-n", &ns, "prod-site"]).is_some()
    });
    server.commit(&kustomize_files(false), "the overlay drops the Service");
    assert_eq!(agent.signed_push(), 202);
    wait_until("the Service is pruned", Duration::from_secs(30), || {
        kubectl_json(&["get", "service", "-n", &ns, "prod-site"]).is_none()
    });
    assert_eq!(
        configmap_value(&ns, "prod-site", "mode").as_deref(),
        Some("overlay")
    );
    let st = status(&agent_ns, &t);
    assert_eq!(condition(&st, "Ready"), "True", "{st}");
}
