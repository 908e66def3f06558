//! Render and validate errors name the file and line, the tenant and what is wrong.

use super::*;

#[test]
fn malformed_yaml_names_file_and_line() {
    let repo = Repo::new();
    repo.write(
        "tenants/alpha.yaml",
        &tenant("alpha", "  quota: {cpu: [unclosed\n"),
    );
    let out = repo.render();
    assert_alpha_fails_at(&out, "tenants/alpha.yaml:7", "invalid YAML");
}

#[test]
fn unknown_field_names_file_and_line() {
    let repo = Repo::new();
    repo.write("tenants/alpha.yaml", &tenant("alpha", "  colour: blue\n"));
    let out = repo.render();
    assert_alpha_fails_at(&out, "tenants/alpha.yaml:6", "colour");
}

#[test]
fn bad_tenant_name_names_file_and_line() {
    let repo = Repo::new();
    repo.write(
        "tenants/alpha.yaml",
        &tenant("alpha", "").replace("name: alpha", "name: Alpha_1"),
    );
    let out = repo.render();
    assert_alpha_fails_at(&out, "tenants/alpha.yaml:4", "DNS-1123");
}

#[test]
fn file_name_must_equal_metadata_name() {
    let repo = Repo::new();
    repo.write(
        "tenants/alpha.yaml",
        &tenant("alpha", "").replace("name: alpha", "name: gamma"),
    );
    let out = repo.render();
    assert_alpha_fails_at(&out, "tenants/alpha.yaml:4", "does not match metadata.name");
}

#[test]
fn unknown_component_names_the_tenant_file_line() {
    let repo = Repo::new();
    repo.write(
        "tenants/alpha.yaml",
        &format!("{}    - name: nosuch\n", tenant("alpha", "")),
    );
    let out = repo.render();
    assert_alpha_fails_at(&out, "tenants/alpha.yaml:8", "unknown component `nosuch`");
}

#[test]
fn undefined_template_variable_names_template_line() {
    let repo = Repo::new();
    repo.write(
        "components/app/templates/extra.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  x: {{ values.nope.deeper }}\n",
    );
    repo.beta_without_components();
    let out = repo.render();
    assert_alpha_fails_at(&out, "components/app/templates/extra.yaml:6", "undefined");
}

#[test]
fn template_syntax_error_names_template_line() {
    let repo = Repo::new();
    repo.write(
        "components/app/templates/extra.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n{% if %}\n",
    );
    repo.beta_without_components();
    let out = repo.render();
    assert_alpha_fails_at(
        &out,
        "components/app/templates/extra.yaml:5",
        "syntax error",
    );
}

#[test]
fn duplicate_object_names_both_places() {
    let repo = Repo::new();
    repo.write("components/app/templates/again.yaml", CONFIGMAP);
    repo.beta_without_components();
    let out = repo.render();
    assert_alpha_fails_at(
        &out,
        "components/app/templates/configmap.yaml:1",
        "duplicate object ConfigMap/alpha-prod/app-config",
    );
}

#[test]
fn cluster_scoped_component_object_is_refused() {
    let repo = Repo::new();
    repo.write(
        "components/app/templates/clusterrole.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: grab-everything\nrules: []\n",
    );
    repo.beta_without_components();
    let out = repo.render();
    assert_alpha_fails_at(
        &out,
        "components/app/templates/clusterrole.yaml:1",
        "cluster-scoped",
    );
}

#[test]
fn component_object_in_another_tenants_namespace_is_refused() {
    let repo = Repo::new();
    repo.write(
        "components/app/templates/sneaky.yaml",
        "{% if tenant.name == 'alpha' %}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sneaky\n  namespace: beta-prod\n{% endif %}\n",
    );
    let out = repo.render();
    assert_alpha_fails_at(
        &out,
        "components/app/templates/sneaky.yaml:2",
        "not one of this tenant's namespaces",
    );
}

#[test]
fn missing_dependency_is_refused() {
    let repo = Repo::new();
    repo.write("components/db/templates/x.yaml", "");
    repo.write("components/app/component.yaml", "dependsOn: [db]\n");
    repo.write(
        "tenants/beta.yaml",
        &tenant("beta", "").replace("    - name: app\n", "    - name: db\n    - name: app\n"),
    );
    let out = repo.render();
    assert_alpha_fails_at(&out, "tenants/alpha.yaml:7", "depends on `db`");
}

#[test]
fn namespace_claimed_by_two_tenants_fails_both() {
    let repo = Repo::new();
    // "alpha" env "x-prod" and "alpha-x" env "prod" both want namespace alpha-x-prod.
    repo.write(
        "tenants/alpha.yaml",
        &tenant("alpha", "  environments: [x-prod]\n"),
    );
    repo.write("tenants/alpha-x.yaml", &tenant("alpha-x", ""));
    let out = repo.render();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err.contains("namespace `alpha-x-prod` is also a namespace of tenant `alpha-x`"),
        "{err}"
    );
    assert!(
        err.contains("namespace `alpha-x-prod` is also a namespace of tenant `alpha`"),
        "{err}"
    );
    assert!(stdout(&out).contains("namespace: beta-prod"));
}

#[test]
fn purged_tenant_renders_nothing() {
    let repo = Repo::new();
    repo.write("tenants/alpha.yaml", &tenant("alpha", "  state: purged\n"));
    let out = repo.render();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stdout(&out).contains("alpha"));
}

#[test]
fn values_layer_component_environment_tenant() {
    let repo = Repo::new();
    repo.write(
        "environments/prod.yaml",
        "values:\n  greeting: env-wide\ncomponents:\n  app:\n    greeting: env-app\n",
    );
    repo.write(
        "tenants/alpha.yaml",
        "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: alpha\nspec:\n  components:\n    - name: app\n      values: {greeting: from-tenant}\n",
    );
    let text = stdout(&repo.render());
    assert!(text.contains("greeting: from-tenant"), "{text}");
    assert!(text.contains("greeting: env-app"), "{text}");
    assert!(!text.contains("greeting: hello"), "{text}");
}
