//! `fief apply` renders only what may have changed, against the real test control plane: a
//! tenant whose inventory recorded its current input hash, with a settled status and every
//! recorded object as fief left it, is not rendered; anything else is (a hand edit, a deleted
//! object, a changed input, a template that computes the name of what it includes).

use crate::common;

use common::cluster_cli::{TestRepo, apply_json, kubectl, kubectl_json, tenant_report};
use common::util::text;
use serde_json::Value;

const GREETING: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: greeting\ndata:\n  text: {{ values.greeting | quote }}\n";
const EXTRA: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  k: v\n";
/// Includes a file whose name is computed from a value: no input hash can cover it.
const COMPUTED: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: computed\ndata:\n  text: \"{% include 'components/lib/' ~ values.part %}\"\n";

fn mutating(summary: &Value) -> u64 {
    ["post", "put", "patch", "delete"]
        .iter()
        .map(|k| summary["requests"][k].as_u64().unwrap_or(0))
        .sum()
}

fn data(ns: &str, name: &str, key: &str) -> String {
    kubectl_json(&["get", "configmap", "-n", ns, name])["data"][key]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn counts(summary: &Value, tenant: &str) -> (u64, u64, u64) {
    let c = &tenant_report(summary, tenant)["counts"];
    let n = |k: &str| c[k].as_u64().unwrap_or(0);
    (n("created"), n("configured"), n("unchanged"))
}

#[test]
fn a_no_op_apply_renders_no_tenant_whose_inputs_and_objects_are_as_last_applied() {
    let repo = TestRepo::new("");
    repo.write("components/web/varz.yaml", "greeting: hello\n");
    repo.write("components/web/templates/greeting.yaml", GREETING);
    repo.write("components/web/templates/extra.yaml", EXTRA);
    repo.write("components/dyn/varz.yaml", "part: snippets/text.txt\n");
    repo.write("components/dyn/templates/computed.yaml", COMPUTED);
    repo.write("components/lib/snippets/text.txt", "one");
    let web = "  components:\n    - name: web\n";
    let (a, b, c) = (
        common::unique("reuse-a"),
        common::unique("reuse-b"),
        common::unique("reuse-c"),
    );
    repo.tenant(&a, web);
    repo.tenant(&b, web);
    repo.tenant(&c, "  components:\n    - name: dyn\n");
    let (first, _) = apply_json(repo.path(), &[], 0);
    assert_eq!(first["rendered"], 3, "{first}");

    // Nothing changed: only the tenant whose template computes an include name is rendered,
    // and nothing is written.
    let (steady, _) = apply_json(repo.path(), &[], 0);
    assert_eq!(steady["rendered"], 1, "{steady}");
    assert_eq!(mutating(&steady), 0, "{steady}");
    let (_, _, unchanged) = counts(&steady, &a);
    assert!(unchanged > 0, "{steady}");
    assert_eq!(tenant_report(&steady, &a)["outcome"], "applied");

    // A hand edit of a field fief set: that tenant is rendered and the edit repaired.
    let ns_a = format!("{a}-prod");
    let edit = kubectl(&[
        "patch",
        "configmap",
        "greeting",
        "-n",
        &ns_a,
        "--type",
        "merge",
        "-p",
        r#"{"data":{"text":"edited"}}"#,
    ]);
    assert!(edit.status.success(), "{}", text(&edit.stderr));
    let (repaired, _) = apply_json(repo.path(), &[], 0);
    assert_eq!(repaired["rendered"], 2, "{repaired}");
    assert_eq!(counts(&repaired, &a).1, 1, "{repaired}");
    assert_eq!(data(&ns_a, "greeting", "text"), "hello");

    // A deleted object: that tenant is rendered and the object created again.
    let ns_b = format!("{b}-prod");
    let gone = kubectl(&["delete", "configmap", "extra", "-n", &ns_b]);
    assert!(gone.status.success(), "{}", text(&gone.stderr));
    let (recreated, _) = apply_json(repo.path(), &[], 0);
    assert_eq!(recreated["rendered"], 2, "{recreated}");
    let (created, configured, _) = counts(&recreated, &b);
    assert_eq!(created + configured, 1, "{recreated}");
    assert_eq!(data(&ns_b, "extra", "k"), "v");

    // A tenant's own input changed: exactly that tenant (and the computing one) rendered.
    repo.tenant(
        &b,
        "  components:\n    - name: web\n      values: {greeting: hi}\n",
    );
    let (changed, _) = apply_json(repo.path(), &[], 0);
    assert_eq!(changed["rendered"], 2, "{changed}");
    assert_eq!(counts(&changed, &b).1, 1, "{changed}");
    assert_eq!(data(&ns_b, "greeting", "text"), "hi");

    // The file reached by a computed name changed: applied, although no hash covers it.
    repo.write("components/lib/snippets/text.txt", "two");
    let (included, _) = apply_json(repo.path(), &[], 0);
    assert_eq!(counts(&included, &c).1, 1, "{included}");
    assert_eq!(data(&format!("{c}-prod"), "computed", "text"), "two");

    // A shared component's template changed: every tenant using it is rendered.
    repo.write(
        "components/web/templates/extra.yaml",
        &EXTRA.replace("k: v", "k: w"),
    );
    let (shared, _) = apply_json(repo.path(), &[], 0);
    assert_eq!(shared["rendered"], 3, "{shared}");
    assert_eq!(data(&ns_a, "extra", "k"), "w");
    let (after, _) = apply_json(repo.path(), &[], 0);
    assert_eq!(
        (after["rendered"].as_u64(), mutating(&after)),
        (Some(1), 0),
        "{after}"
    );
}

#[test]
fn every_object_of_a_kind_deleted_by_hand_is_created_again_not_an_error() {
    let repo = TestRepo::new("");
    repo.write(
        "components/svc/templates/service.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: app\nspec:\n  selector: {app: app}\n  ports: [{port: 80}]\n",
    );
    repo.write("components/svc/templates/config.yaml", EXTRA);
    let t = common::unique("nokind");
    let ns = format!("{t}-prod");
    repo.tenant(&t, "  components:\n    - name: svc\n");
    apply_json(repo.path(), &[], 0);
    // The API server lists no object of the kind as `"items": null`.
    let gone = kubectl(&["delete", "service", "app", "-n", &ns]);
    assert!(gone.status.success(), "{}", text(&gone.stderr));
    let (repaired, _) = apply_json(repo.path(), &[], 0);
    let (created, configured, _) = counts(&repaired, &t);
    assert_eq!(created + configured, 1, "{repaired}");
    assert!(
        kubectl(&["get", "service", "app", "-n", &ns])
            .status
            .success()
    );
}
