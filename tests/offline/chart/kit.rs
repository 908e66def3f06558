//! The chart tests' kit: run helm and `fief install --export`, read their YAML, and compare
//! the two as objects (Helm's own labels and annotations left out).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use super::offline;

pub const REPO_URL: &str = "https://git.example.test/org/tenants.git";
/// Labels and annotations Helm's conventions add that `fief install` does not.
pub const HELM_LABELS: [&str; 4] = [
    "helm.sh/chart",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
];

pub fn chart() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/chart/fief")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `helm ARGS`, with Helm's cache, config and data folders in a throwaway folder.
pub fn helm(args: &[&str]) -> Output {
    let home = tempfile::tempdir().expect("tempdir");
    Command::new(offline::helm_bin())
        .args(args)
        .env("HELM_CACHE_HOME", home.path().join("cache"))
        .env("HELM_CONFIG_HOME", home.path().join("config"))
        .env("HELM_DATA_HOME", home.path().join("data"))
        .env_remove("KUBECONFIG")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", offline::helm_bin().display()))
}

/// `helm template` of the chart with `values` (YAML); the output, or the failure's stderr.
pub fn template(values: &str) -> Result<String, String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("values.yaml");
    std::fs::write(&file, values).expect("write values");
    let chart = chart();
    let out = helm(&[
        "template",
        "fief",
        chart.to_str().expect("utf-8 path"),
        "--values",
        file.to_str().expect("utf-8 path"),
    ]);
    if out.status.success() {
        Ok(text(&out.stdout))
    } else {
        Err(text(&out.stderr))
    }
}

pub fn template_ok(values: &str) -> Vec<Value> {
    let yaml = template(values).unwrap_or_else(|e| panic!("helm template failed: {e}"));
    parse(&yaml)
}

/// `fief install --export` with `args` (stdout, which must succeed).
pub fn export(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(["install", "--export"])
        .args(args)
        .output()
        .expect("run fief");
    assert_eq!(
        out.status.code(),
        Some(0),
        "fief install --export {args:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

pub fn parse(yaml: &str) -> Vec<Value> {
    fief::core::yaml::split_documents(yaml)
        .iter()
        .filter_map(|doc| {
            fief::core::yaml::parse_value(doc)
                .unwrap_or_else(|e| panic!("not YAML: {e}\n{}", doc.text))
        })
        .collect()
}

pub type Key = (String, String, String, String);

pub fn key(o: &Value) -> Key {
    let s = |p: &str| {
        o.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    (
        s("/apiVersion"),
        s("/kind"),
        s("/metadata/namespace"),
        s("/metadata/name"),
    )
}

/// The object without what Helm adds by convention: its labels above and `helm.sh/`
/// annotations (`resource-policy: keep` on the Namespace).
pub fn normalise(mut o: Value) -> Value {
    let Some(metadata) = o.get_mut("metadata").and_then(Value::as_object_mut) else {
        return o;
    };
    for field in ["labels", "annotations"] {
        if let Some(map) = metadata.get_mut(field).and_then(Value::as_object_mut) {
            map.retain(|k, _| !HELM_LABELS.contains(&k.as_str()) && !k.starts_with("helm.sh/"));
            if map.is_empty() {
                metadata.remove(field);
            }
        }
    }
    o
}

pub fn by_key(objects: Vec<Value>) -> BTreeMap<Key, Value> {
    objects
        .into_iter()
        .map(|o| (key(&o), normalise(o)))
        .collect()
}

pub fn find<'a>(objects: &'a BTreeMap<Key, Value>, kind: &str) -> Vec<&'a Value> {
    objects.values().filter(|o| o["kind"] == kind).collect()
}

/// The Secrets the export asks to create first: name -> keys (from its comment lines).
pub fn exported_secrets(yaml: &str) -> BTreeMap<String, BTreeSet<String>> {
    yaml.lines()
        .filter_map(|l| l.strip_prefix("# create it first: "))
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let at = words
                .iter()
                .position(|w| *w == "generic")
                .expect("`create secret generic NAME`");
            let keys = words[at + 2..]
                .iter()
                .filter_map(|w| w.strip_prefix("--from-file="))
                .map(|w| w.trim_end_matches("=FILE").to_string())
                .collect();
            (words[at + 1].to_string(), keys)
        })
        .collect()
}

/// Compares the chart's objects with the export's, field by field where a difference matters
/// most (so a failure names it), then whole. The chart's Secrets are checked against the
/// names and keys the export asks for.
pub fn assert_same_install(export_yaml: &str, chart_objects: Vec<Value>) {
    let exported = by_key(parse(export_yaml));
    let (secrets, rest): (Vec<Value>, Vec<Value>) = chart_objects
        .into_iter()
        .partition(|o| o["kind"] == "Secret");
    let charted = by_key(rest);

    let want: BTreeSet<&Key> = exported.keys().collect();
    let got: BTreeSet<&Key> = charted.keys().collect();
    assert_eq!(
        want,
        got,
        "objects only in `fief install --export`: {:?}; only in the chart: {:?}",
        want.difference(&got).collect::<Vec<_>>(),
        got.difference(&want).collect::<Vec<_>>()
    );

    let container = |objects: &BTreeMap<Key, Value>| {
        find(objects, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0].clone()
    };
    let (a, b) = (container(&exported), container(&charted));
    for field in ["args", "env", "securityContext", "image", "resources"] {
        assert_eq!(a[field], b[field], "the agent container's {field}");
    }
    for kind in ["ClusterRole", "Role"] {
        let rules = |objects: &BTreeMap<Key, Value>| -> Vec<(String, Value)> {
            find(objects, kind)
                .iter()
                .map(|o| (key(o).3, o["rules"].clone()))
                .collect()
        };
        assert_eq!(rules(&exported), rules(&charted), "{kind} rules");
    }
    let policy = |objects: &BTreeMap<Key, Value>| {
        let p = find(objects, "ValidatingAdmissionPolicy")[0];
        (
            p["spec"]["matchConditions"].clone(),
            p["spec"]["variables"].clone(),
            p["spec"]["validations"].clone(),
        )
    };
    assert_eq!(
        policy(&exported),
        policy(&charted),
        "admission policy expressions"
    );
    for (k, object) in &exported {
        assert_eq!(
            object, &charted[k],
            "{k:?} differs between `fief install --export` and the chart"
        );
    }

    let made: BTreeMap<String, BTreeSet<String>> = secrets
        .iter()
        .map(|s| {
            let keys = s["data"]
                .as_object()
                .map(|d| d.keys().cloned().collect())
                .unwrap_or_default();
            (key(s).3, keys)
        })
        .collect();
    assert_eq!(
        exported_secrets(export_yaml),
        made,
        "the Secrets (name and keys) the chart makes and the ones `fief install` makes"
    );
    let namespace = key(find(&exported, "Deployment")[0]).2;
    for s in &secrets {
        assert_eq!(key(s).2, namespace, "Secret {} namespace", key(s).3);
    }
}

pub fn crate_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

pub fn chart_field(field: &str) -> String {
    let path = chart().join("Chart.yaml");
    let yaml = std::fs::read_to_string(&path).expect("read Chart.yaml");
    let chart = parse(&yaml).pop().expect("Chart.yaml is a document");
    chart[field].as_str().unwrap_or_default().to_string()
}

pub fn base64_decode(s: &str) -> String {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s)
        .expect("base64");
    String::from_utf8(bytes).expect("utf-8")
}
