//! What render and validate refuse or bound: paths out of the repo, YAML bombs, runaway
//! templates, hosts and images outside their lists, unknown environments; and the flags
//! behind completions, the man page and --version.

use super::*;

#[test]
fn include_with_parent_dir_or_absolute_path_is_refused() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("stolen.txt"), "TOP-SECRET-CONTENT").unwrap();
    for include in [
        "../../../../../../../../etc/hostname".to_string(),
        outside.path().join("stolen.txt").display().to_string(),
    ] {
        let repo = Repo::new();
        repo.write(
            "components/app/templates/evil.yaml",
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: evil\ndata:\n  x: \"{{% include '{include}' %}}\"\n"),
        );
        let out = repo.render();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("leaves the repo"), "{err}");
        assert!(
            err.contains("components/app/templates/evil.yaml:6"),
            "{err}"
        );
        assert!(!stdout(&out).contains("TOP-SECRET-CONTENT"));
    }
}

#[test]
fn symlink_out_of_the_repo_is_refused_and_not_read() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("stolen.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: TOP-SECRET-CONTENT\n",
    )
    .unwrap();
    let repo = Repo::new();
    std::os::unix::fs::symlink(
        outside.path().join("stolen.yaml"),
        repo.dir.path().join("components/app/templates/link.yaml"),
    )
    .unwrap();
    let out = repo.render();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("components/app/templates/link.yaml"), "{err}");
    assert!(err.contains("leaves the repo"), "{err}");
    assert!(!stdout(&out).contains("TOP-SECRET-CONTENT"));
    assert!(!err.contains("TOP-SECRET-CONTENT"));
}

#[test]
fn yaml_alias_bomb_is_refused_within_seconds() {
    let repo = Repo::new();
    let mut bomb =
        String::from("greeting: hi\na0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..10 {
        let p = i - 1;
        bomb.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    repo.write("components/app/varz.yaml", &bomb);
    repo.beta_without_components();
    let start = Instant::now();
    let out = repo.render();
    // Bounded by the node limit, not a clock; generous so a loaded machine cannot fail it.
    assert!(start.elapsed() < Duration::from_secs(60));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("components/app/varz.yaml:"), "{err}");
    assert!(err.contains("tenant `alpha`"), "{err}");
}

#[test]
fn runaway_template_loop_is_stopped_within_seconds() {
    let repo = Repo::new();
    repo.write(
        "components/app/templates/loop.yaml",
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}\n",
    );
    repo.beta_without_components();
    // Stopped by fuel, not by a clock: the bound is generous so a loaded machine cannot fail
    // it; an unbounded loop (10^10 iterations) would take hours.
    let start = Instant::now();
    let out = repo.render();
    assert!(
        start.elapsed() < Duration::from_secs(120),
        "{:?}",
        start.elapsed()
    );
    assert_alpha_fails_at(&out, "components/app/templates/loop.yaml:1", "runaway loop");
}

#[test]
fn unknown_field_in_fief_yaml_fails_every_tenant() {
    let repo = Repo::new();
    repo.write(
        "fief.yaml",
        "baseDomain: x.example\nnamespacePatern: \"{tenant}\"\n",
    );
    let out = repo.render();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(err.contains("fief.yaml:2"), "{err}");
    assert!(err.contains("namespacePatern"), "{err}");
}

#[test]
fn repo_baseline_replaces_the_builtin_one() {
    let repo = Repo::new();
    repo.write(
        "baseline/ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {{ namespace }}\n  labels: {custom: \"yes\"}\n",
    );
    let out = repo.render();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("custom: 'yes'") || text.contains("custom: \"yes\""),
        "{text}"
    );
    assert!(!text.contains("kind: NetworkPolicy"));
}

#[test]
fn ingress_host_outside_the_tenant_suffix_fails_with_file_and_line() {
    let repo = Repo::new();
    repo.write("fief.yaml", "baseDomain: saas.example\n");
    repo.write(
        "components/app/templates/ingress.yaml",
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: web\nspec:\n  rules:\n    - host: {{ 'beta.saas.example' if tenant.name == 'alpha' else tenant.name ~ '.saas.example' }}\n",
    );
    let out = repo.render();
    assert_alpha_fails_at(
        &out,
        "components/app/templates/ingress.yaml:1",
        "host `beta.saas.example` is not allowed",
    );
    // A tenant may not be given another tenant's suffix (it belongs to beta)...
    repo.write(
        "tenants/alpha.yaml",
        &tenant("alpha", "  hostSuffixes: [beta.saas.example]\n"),
    );
    assert_alpha_fails_at(
        &repo.render(),
        "tenants/alpha.yaml:6",
        "host suffix `beta.saas.example` overlaps `beta.saas.example`, a host suffix of tenant `beta`",
    );
    // ...but may be given its own domain.
    repo.write(
        "components/app/templates/ingress.yaml",
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: web\nspec:\n  rules:\n    - host: {{ 'shop.alpha.example' if tenant.name == 'alpha' else tenant.name ~ '.saas.example' }}\n",
    );
    repo.write(
        "tenants/alpha.yaml",
        &tenant("alpha", "  hostSuffixes: [alpha.example]\n"),
    );
    assert_eq!(repo.render().status.code(), Some(0));
}

#[test]
fn image_from_a_registry_not_allowed_fails_with_file_and_line() {
    let repo = Repo::new();
    repo.write(
        "fief.yaml",
        "policy:\n  allowedRegistries: [registry.example.com]\n",
    );
    repo.write(
        "components/app/templates/deploy.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n        - name: web\n          image: {{ 'evil.io/miner:1' if tenant.name == 'alpha' else 'registry.example.com/web:1' }}\n",
    );
    let out = repo.render();
    assert_alpha_fails_at(
        &out,
        "components/app/templates/deploy.yaml:1",
        "image `evil.io/miner:1` is not from an allowed registry",
    );
}

#[test]
fn an_undeclared_environment_is_an_error_with_a_did_you_mean_hint() {
    let repo = Repo::new();
    repo.write("environments/prod.yaml", "values: {}\n");
    repo.write("environments/dev.yaml", "values: {}\n");
    repo.write(
        "tenants/alpha.yaml",
        &tenant("alpha", "  environments: [prd]\n"),
    );
    let out = repo.render();
    assert_alpha_fails_at(&out, "tenants/alpha.yaml:6", "undeclared environment `prd`");
    assert!(
        stderr(&out).contains("did you mean `prod`"),
        "{}",
        stderr(&out)
    );
    // Declared in fief.yaml, the same name is accepted.
    repo.write("fief.yaml", "environments: [prd]\n");
    let out = repo.render();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("namespace: alpha-prd"));
}

#[test]
fn synthetic_repo_renders_cleanly_with_about_twenty_objects_per_tenant() {
    use fief::core::model::Repo;
    use fief::core::snapshot::Snapshot;
    use std::sync::Arc;
    let repo = Repo::load(Arc::new(Snapshot::from_files(common::synth::repo_files(
        20,
    ))));
    let renders = fief::core::pipeline::render_all(&repo, &[]);
    assert_eq!(renders.len(), 20);
    for r in &renders {
        assert!(r.is_ok(), "{:?}", r.errors);
    }
    let objects: usize = renders.iter().map(|r| r.objects.len()).sum();
    let per_tenant = objects / renders.len();
    assert!((20..=30).contains(&per_tenant), "{per_tenant}");
}

/// What `fief` answers a fish shell completing `words` (the last one being typed), run in
/// `dir`.
fn completions(dir: &std::path::Path, words: &[&str]) -> Vec<String> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fief"))
        .env("COMPLETE", "fish")
        .arg("--")
        .args(words)
        .current_dir(dir)
        .output()
        .expect("run fief");
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| l.split('\t').next().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn the_shell_completes_commands_flags_and_the_repos_tenant_and_environment_names() {
    for shell in ["bash", "zsh", "fish"] {
        let out = fief(&["completion", shell]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(
            stdout(&out).contains("COMPLETE="),
            "{shell}: {}",
            stdout(&out)
        );
    }
    let dir = tempfile::tempdir().unwrap();
    crate::common::offline::init_repo(dir.path(), "stark");
    crate::common::offline::write_file(
        dir.path(),
        "tenants/eu/wayne.yaml",
        "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: wayne\nspec:\n  environments: [dev]\n",
    );
    let here = dir.path();
    assert!(completions(here, &["fief", "va"]).contains(&"validate".to_string()));
    assert_eq!(
        completions(here, &["fief", "apply", ".", "--tenant", ""]),
        ["stark", "wayne"]
    );
    assert_eq!(
        completions(here, &["fief", "suspend", "-t", "w"]),
        ["wayne"]
    );
    assert_eq!(
        completions(here, &["fief", "diff", ".", "--env", ""]),
        ["dev", "prod"]
    );
}

#[test]
fn completions_man_page_and_version_come_from_the_same_flags_as_help() {
    let man = fief(&["man"]);
    assert_eq!(man.status.code(), Some(0));
    let page = stdout(&man);
    assert!(
        page.contains(".TH fief 1") && page.contains("fief\\-diff"),
        "{page}"
    );
    let version = stdout(&fief(&["--version"]));
    assert!(
        version.starts_with("fief 0.") && version.contains("(commit "),
        "{version}"
    );
    // `fief version`: the same version and commit, and the repo format it reads.
    let text = stdout(&fief(&["version"]));
    assert!(
        text.starts_with("fief 0.") && text.contains("\nrepo format fief.dev/v1alpha1\n"),
        "{text}"
    );
    let build: serde_json::Value =
        serde_json::from_slice(&fief(&["version", "-o", "json"]).stdout).unwrap();
    assert_eq!(build["repoFormat"], "fief.dev/v1alpha1");
    assert!(
        version.contains(&format!("(commit {})", build["commit"].as_str().unwrap())),
        "{version} {build}"
    );
    // `-o` is the short form of `--output`.
    let json = fief(&["validate", "-o", "json", example().to_str().unwrap()]);
    assert!(serde_json::from_slice::<serde_json::Value>(&json.stdout).is_ok());
}
