use std::sync::Arc;

use super::*;
use crate::snapshot::Snapshot;

fn repo() -> Repo {
    let files = [
        ("fief.yaml", "defaultEnvironments: [dev, prod]\n"),
        (
            "components/web/templates/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n",
        ),
        (
            "components/web/varz.yaml",
            "replicas: 1\nimage:\n  repo: web\n  tag: \"1.0\"\nlogLevel: info\n",
        ),
        ("environments/dev.yaml", "values:\n  logLevel: debug\n"),
        (
            "environments/prod.yaml",
            "components:\n  web:\n    image:\n      tag: \"1.1\"\n",
        ),
        (
            "tenants/acme.yaml",
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: acme\nspec:\n  components:\n    - name: web\n      values:\n        replicas: 2\n  overrides:\n    prod:\n      components:\n        web:\n          values:\n            replicas: 3\n",
        ),
    ];
    Repo::load(Arc::new(Snapshot::from_files(
        files.iter().map(|(p, t)| (*p, t.to_string())),
    )))
}

fn origin<'a>(
    trace: &'a [ValuesTrace],
    env: &str,
    key: &str,
) -> (&'a Value, &'a str, Option<usize>) {
    let t = trace
        .iter()
        .find(|t| t.component == "web" && t.env == env)
        .unwrap();
    let v = t.values.iter().find(|v| v.key == key).unwrap();
    (&v.value, v.file.as_str(), v.line)
}

#[test]
fn each_value_names_the_file_and_line_of_the_last_layer_that_sets_it() {
    let trace = trace(&repo(), "acme").unwrap();
    let envs: Vec<&str> = trace.iter().map(|t| t.env.as_str()).collect();
    assert_eq!(envs, vec!["dev", "prod"]);
    // The component's default, untouched.
    assert_eq!(
        origin(&trace, "dev", "image.repo"),
        (&Value::from("web"), "components/web/varz.yaml", Some(3))
    );
    // The environment's values.
    assert_eq!(
        origin(&trace, "dev", "logLevel"),
        (&Value::from("debug"), "environments/dev.yaml", Some(2))
    );
    // The environment's component values.
    assert_eq!(
        origin(&trace, "prod", "image.tag"),
        (&Value::from("1.1"), "environments/prod.yaml", Some(4))
    );
    // The tenant's values, and its override for prod over them.
    assert_eq!(
        origin(&trace, "dev", "replicas"),
        (&Value::from(2), "tenants/acme.yaml", Some(9))
    );
    assert_eq!(
        origin(&trace, "prod", "replicas"),
        (&Value::from(3), "tenants/acme.yaml", Some(15))
    );
}

#[test]
fn an_unknown_tenant_has_no_trace_and_a_broken_file_gives_its_diagnostics() {
    let repo = repo();
    assert_eq!(trace(&repo, "nobody"), Ok(Vec::new()));
    let broken = Repo::load(Arc::new(Snapshot::from_files([
        ("fief.yaml", String::new()),
        ("tenants/bad.yaml", "kind: [\n".to_string()),
    ])));
    assert!(trace(&broken, "bad").is_err());
}
