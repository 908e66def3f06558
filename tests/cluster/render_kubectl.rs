//! `fief render`'s YAML stream read back by kubectl (sigs.k8s.io/yaml, YAML 1.1) on the real
//! test control plane: strings that YAML 1.1 would read as another type stay strings.

use crate::common;

use std::process::Command;

use serde_json::Value;

/// Strings a careless emitter would let kubectl read as booleans, numbers, nulls, dates or
/// other strings.
const TRICKY: &[&str] = &[
    "yes",
    "No",
    "on",
    "OFF",
    "y",
    "N",
    "true",
    "null",
    "~",
    "",
    "0644",
    "08",
    "1_000",
    "0x1F",
    "1e3",
    "1.5",
    ".inf",
    ".NaN",
    "-1",
    "+1",
    "2001-12-14",
    "12:30:45",
    "<<",
    "=",
    " lead",
    "trail ",
    "a: b",
    "a #b",
    "- x",
    "? x",
    "[x]",
    "{x}",
    "&a",
    "*a",
    "!t",
    "|",
    ">",
    "%x",
    "@x",
    "`x",
    "'q'",
    "\"q\"",
    "back\\slash",
    "tab\there",
    "multi\nline\n",
    "no newline\nend",
    "two\n\n",
    "\nlead",
    "x\n  deeper\n",
    "é 日本",
    "<redacted>",
    "nginx:1.25",
    "http://a/b",
];

#[test]
fn kubectl_reads_every_rendered_string_back_as_the_same_string() {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    let mut data = String::new();
    for (i, s) in TRICKY.iter().enumerate() {
        // JSON strings are YAML double-quoted scalars.
        data.push_str(&format!("  k{i}: {}\n", serde_json::to_string(s).unwrap()));
    }
    write(
        "components/app/templates/configmap.yaml",
        &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tricky\ndata:\n{data}"),
    );
    write(
        "tenants/alpha.yaml",
        "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: alpha\nspec:\n  components:\n    - name: app\n",
    );
    let out = Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(["render", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = stdout.clone();
    let again = Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(["render", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        first.as_bytes(),
        again.stdout.as_slice(),
        "render is byte-identical"
    );

    let done = common::kubectl::Kubectl::admin().stdin(&stdout).output(&[
        "create",
        "--dry-run=client",
        "-o",
        "json",
        "-f",
        "-",
    ]);
    assert!(
        done.status.success(),
        "kubectl: {}\n{stdout}",
        String::from_utf8_lossy(&done.stderr)
    );
    // One JSON object per document, concatenated (or a List).
    let items: Vec<Value> = serde_json::Deserializer::from_slice(&done.stdout)
        .into_iter::<Value>()
        .map(Result::unwrap)
        .flat_map(|v| match v["items"].as_array() {
            Some(items) => items.clone(),
            None => vec![v],
        })
        .collect();
    let cm = items
        .iter()
        .find(|o| o["kind"] == "ConfigMap" && o["metadata"]["name"] == "tricky")
        .unwrap_or_else(|| panic!("no ConfigMap in {items:?}"));
    for (i, s) in TRICKY.iter().enumerate() {
        assert_eq!(
            cm["data"][format!("k{i}")],
            Value::from(*s),
            "k{i}\n{stdout}"
        );
    }
}
