//! Differential tests of [`super::parse_single_typed`]: for every file, the fast route gives
//! exactly what serde-saphyr gives (value or error, with its line), and it does answer for the
//! tenant files of the example and synthetic repos.

use serde::de::DeserializeOwned;

use super::{fast, parse_single, parse_single_typed, split_documents};
use crate::model::{ComponentMeta, Config, Environment, Tenant};

/// Both reads agree; returns whether the fast route answered.
fn same<T: DeserializeOwned + PartialEq + std::fmt::Debug>(text: &str) -> bool {
    let fast = parse_single_typed::<T>(text);
    let full = parse_single::<T>(text);
    assert_eq!(fast, full, "typed fast route differs on:\n{text}");
    match split_documents(text).as_slice() {
        [doc] => {
            fast::parse_canonical(doc.text).is_some_and(|v| serde_json::from_value::<T>(v).is_ok())
        }
        _ => false,
    }
}

fn tenant(name: &str, envs: &str, admin: usize, replicas: usize) -> String {
    format!(
        "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  environments: {envs}\n  quota: {{cpu: \"2\", memory: 4Gi, pods: \"20\"}}\n  access:\n    admins: [admin-{admin}]\n    viewers: [viewer-{admin}]\n  components:\n    - name: postgres\n    - name: web\n      values: {{replicas: {replicas}}}\n    - name: worker\n"
    )
}

#[test]
fn synthetic_and_example_tenant_files_take_the_fast_route_with_identical_values() {
    for i in 0..30 {
        let envs = if i % 10 == 0 { "[dev, prod]" } else { "[prod]" };
        let text = tenant(&format!("tenant-{i:05}"), envs, i, 1 + i % 3);
        assert!(same::<Tenant>(&text), "fast route declined:\n{text}");
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tenants-repo");
    let mut answered = 0;
    for entry in std::fs::read_dir(dir.join("tenants"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        answered += usize::from(same::<Tenant>(&text));
    }
    assert!(answered > 0, "no example tenant file took the fast route");
    for (file, read) in [
        ("fief.yaml", same::<Config> as fn(&str) -> bool),
        ("environments/prod.yaml", same::<Environment>),
        ("components/web/component.yaml", same::<ComponentMeta>),
        ("components/web/varz.yaml", same::<serde_json::Value>),
    ] {
        if let Ok(text) = std::fs::read_to_string(dir.join(file)) {
            read(&text);
        }
    }
}

/// Scalars whose reading depends on the YAML version, the target type or the reader.
const TRICKY: &[&str] = &[
    "yes",
    "Yes",
    "no",
    "on",
    "Off",
    "y",
    "n",
    "Y",
    "true",
    "True",
    "FALSE",
    "null",
    "Null",
    "NULL",
    "~",
    "",
    "''",
    "\"\"",
    "0644",
    "0o17",
    "0x1F",
    "0b101",
    "1_000",
    "1e3",
    "1E",
    "1E3",
    "-1",
    "+1",
    "-0",
    ".5",
    "1.",
    "1.10",
    "1.0",
    "0.5",
    "3",
    "0",
    "007",
    "08",
    "12345678901234567890",
    ".inf",
    "-.inf",
    ".nan",
    "2024-01-02",
    "2001-12-14t21:59:43.10-05:00",
    "1:20",
    "1.4.2",
    "1.4.2-rc.1",
    "1.4.2+b",
    "1.4.",
    "1..2",
    "4Gi",
    "500m",
    "1.5G",
    "2Ei",
    "web",
    "a b",
    "'quoted'",
    "\"dq\\tx\"",
    "x # c",
    "[a, b]",
    "{a: 1}",
    "[]",
    "{}",
    "=",
    "<<",
    "@x",
    "`x",
    "%x",
    "!x",
    "&a x",
    "*a",
    "|",
    ">",
    "-",
    "?",
    "a: b",
];

#[test]
fn tricky_scalars_read_as_serde_saphyr_reads_them_everywhere_in_a_tenant_file() {
    let base = tenant("acme", "[prod]", 1, 2);
    for x in TRICKY {
        let variants = [
            base.replace("name: web\n", &format!("name: web\n      version: {x}\n")),
            base.replace("{replicas: 2}", &format!("{{replicas: {x}}}")),
            base.replace(
                "values: {replicas: 2}",
                &format!("values:\n        replicas: {x}"),
            ),
            base.replace("memory: 4Gi", &format!("memory: {x}")),
            base.replace("cpu: \"2\"", &format!("cpu: {x}")),
            base.replace("[admin-1]", &format!("[{x}]")),
            base.replace(
                "  name: acme\n",
                &format!("  name: acme\n  labels: {{k: {x}}}\n"),
            ),
            base.replace(
                "  name: acme\n",
                &format!("  name: acme\n  labels:\n    {x}: v\n"),
            ),
            base.replace("environments: [prod]", &format!("environments: {x}")),
            base.replace("spec:\n", &format!("spec:\n  state: {x}\n")),
            base.replace("spec:\n", &format!("spec:\n  {x}: 1\n")),
            base.replace("values: {replicas: 2}", &format!("values: {{{x}: 1}}")),
        ];
        for text in &variants {
            same::<Tenant>(text);
            same::<serde_json::Value>(text);
        }
        same::<Environment>(&format!(
            "values:\n  a: {x}\ncomponents:\n  web: {{b: {x}}}\n"
        ));
        same::<Config>(&format!("baseDomain: {x}\n"));
    }
}
