//! The tenants-repo format reference (`docs/src/reference/repo-format.md`), written from the
//! JSON Schemas of [`RepoFile`], so the page lists exactly the fields the loader reads.
//!
//! In: the generated schemas. Out: Markdown: one table per file of every field's path, type,
//! default, whether it is required, and its description (the field's `///` doc).

use serde_json::{Map, Value};

use super::RepoFile;

/// One row of a file's table.
struct Row {
    path: String,
    ty: String,
    default: String,
    required: bool,
    description: String,
}

/// The whole reference page.
pub fn repo_format_markdown() -> String {
    let mut out = String::from(INTRO);
    for file in RepoFile::ALL {
        let schema = file.schema();
        let defs = schema
            .get("$defs")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mut rows = Vec::new();
        walk(&schema, "", &defs, &mut rows, 0);
        out.push_str(&format!(
            "\n## `{}`\n\n{}\n\nSchema: `{}` (`fief schemas` writes it).\n\n\
             | Field | Type | Default | Required | Description |\n|---|---|---|---|---|\n",
            file.repo_path(),
            one_line(
                schema
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or("")
            ),
            file.schema_file(),
        ));
        for r in rows {
            out.push_str(&format!(
                "| `{}` | {} | {} | {} | {} |\n",
                r.path,
                r.ty,
                r.default,
                if r.required { "yes" } else { "no" },
                r.description
            ));
        }
    }
    out.push_str(VALUES_SCHEMA);
    out.push_str(COMPONENT_KINDS);
    out
}

/// The schema a `$ref` points at; an optional field's `anyOf: [X, null]` is read as X.
fn resolve<'a>(schema: &'a Value, defs: &'a Map<String, Value>) -> &'a Value {
    if let Some(variants) = schema.get("anyOf").and_then(Value::as_array) {
        let mut real = variants
            .iter()
            .filter(|v| v.get("type") != Some(&Value::from("null")));
        if let (Some(only), None) = (real.next(), real.next()) {
            return resolve(only, defs);
        }
    }
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => r
            .strip_prefix("#/$defs/")
            .and_then(|name| defs.get(name))
            .unwrap_or(schema),
        None => schema,
    }
}

fn walk(schema: &Value, prefix: &str, defs: &Map<String, Value>, rows: &mut Vec<Row>, depth: u8) {
    let schema = resolve(schema, defs);
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (name, prop) in props {
        let path = format!("{prefix}{name}");
        let target = resolve(prop, defs);
        rows.push(Row {
            path: path.clone(),
            ty: type_of(target, defs),
            default: match prop.get("default") {
                Some(d) if d.is_object() => "see its fields".to_string(),
                Some(d) if !d.is_null() => format!("`{d}`"),
                _ => "—".to_string(),
            },
            required: required.contains(&name.as_str()),
            description: one_line(
                prop.get("description")
                    .or_else(|| target.get("description"))
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            ),
        });
        if depth < 6 {
            walk(target, &format!("{path}."), defs, rows, depth + 1);
            if let Some(items) = target.get("items") {
                walk(items, &format!("{path}[]."), defs, rows, depth + 1);
            }
            if let Some(entries) = target.get("additionalProperties").filter(|a| a.is_object()) {
                walk(entries, &format!("{path}.<name>."), defs, rows, depth + 1);
            }
        }
    }
}

fn type_of(schema: &Value, defs: &Map<String, Value>) -> String {
    if let Some(variants) = schema.get("anyOf").and_then(Value::as_array) {
        let types: Vec<String> = variants
            .iter()
            .map(|v| type_of(resolve(v, defs), defs))
            .collect();
        return types.join(" \\| ");
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names: Vec<String> = values
            .iter()
            .map(|v| format!("`{}`", v.as_str().unwrap_or("")))
            .collect();
        return names.join(", ");
    }
    if let Some(one_of) = schema.get("oneOf").and_then(Value::as_array) {
        let names: Vec<String> = one_of
            .iter()
            .filter_map(|v| v.get("const").and_then(Value::as_str))
            .map(|v| format!("`{v}`"))
            .collect();
        return names.join(", ");
    }
    if let Some(c) = schema.get("const") {
        return format!("`{}`", c.as_str().unwrap_or(""));
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect::<Vec<_>>()
            .join(" \\| "),
        _ => "any".to_string(),
    };
    match (ty.as_str(), schema.get("items")) {
        ("array", Some(items)) => format!("list of {}", type_of(resolve(items, defs), defs)),
        ("object", None) => match schema.get("additionalProperties").filter(|a| a.is_object()) {
            Some(entries) => format!("map of {}", type_of(resolve(entries, defs), defs)),
            None => ty,
        },
        _ => ty,
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

const INTRO: &str = "# The tenants repo format\n\n\
<!-- Generated from the Rust types by `cargo test --test offline reference::` with FIEF_BLESS=1; do not edit. -->\n\n\
A tenants repo is a git repository (or a folder) with `fief.yaml` at its root, one file per \
tenant under `tenants/` (directly or in folders of any depth, `tenants/eu/acme.yaml`: the \
tenant's name is its file name, unique across `tenants/`), one folder per component under `components/` (`component.yaml`, \
`varz.yaml`, `templates/`, optionally `values.schema.json`) and one file per environment \
under `environments/`. Every file is YAML. Unknown fields are errors in every file, reported \
with file and line. The files carry no version of their own; tenant files say \
`apiVersion: fief.dev/v1alpha1`, the format this fief reads (`fief version` prints it).\n\n\
Paths below use `.` for a nested field and `[]` for the items of a list.\n";

const VALUES_SCHEMA: &str = "\n## `components/<component>/values.schema.json`\n\n\
Optional. A JSON Schema (draft 2020-12) for the component's merged values: `varz.yaml`, then \
the environment's `values` and `components.<component>`, then the tenant's `values`. Each \
tenant's merged values are checked against it before render; an error names the tenant and \
the value's path (`values.replicas`), and for an unknown key the keys allowed there with a \
did-you-mean. With `additionalProperties: false` a misspelt key is an error instead of a \
silent default.\n\n\
## `components/<component>/varz.yaml`\n\n\
The component's default values: any YAML mapping. Templates read them as `values`.\n";

const COMPONENT_KINDS: &str = "\n## Component kinds\n\n\
`kind:` in `component.yaml` says what a component renders from. Every kind goes through the \
same pipeline (render, validate, plan, apply, prune), gets the labels fief adds, lands in the \
tenant environment's namespace and takes per-environment overrides; its errors name the \
tenant, the component and the file.\n\n\
| `kind` | Renders | Needs | Values |\n|---|---|---|---|\n\
| `templates` (default) | the minijinja templates in `templates/` | nothing | `varz.yaml` defines the keys a layer may set |\n\
| `helm` | the chart in the folder `chart:` names (inside the component), as `helm template` \
renders it: release name = the component's name, namespace = the tenant environment's, revision 1, \
install, `lookup` empty; `.Capabilities` as `helm template` gives them (Kubernetes 1.34), or \
fief.yaml `kubernetesVersion` and `apiVersions` as `--kube-version` and `--api-versions` | \
`fief-render-helper` | the chart's \
`values.yaml` and the component's `varz.yaml` define the keys; `varz.yaml`, the environment's \
`values` and `components.<c>`, the tenant's `values` and its per-environment override are \
merged (in that order) and given to Helm as `-f` values over the chart's own; a chart's \
`values.schema.json` is checked by Helm |\n\
| `kustomize` | the kustomization in the folder `path:` names (inside the component), as \
`kustomize build` builds it, with `namespace:` set to the tenant environment's namespace | \
`fief-render-helper` | `varz.yaml` defines the keys as for templates; component.yaml \
`kustomize:` names the values that set the build's images, replicas and `${var}` substitution |\n\n\
A `helm` component's chart is its folder with `Chart.yaml`, `values.yaml`, `templates/` and \
its subcharts in `charts/`, as folders or packed `.tgz` files (unpacked in memory; every file \
inside must be text). `chart:` and `path:` are folders inside the component (no `..`, not absolute); \
every file under the chart's folder (helm) or the component's folder (kustomize) is sent to the \
helper, and nothing else: a kustomization's bases must be inside its component, and remote \
bases and resources (URLs, git addresses) are refused. A `helm` component has no `templates/` \
folder of its own.\n\n\
A chart from a Helm HTTP repository or an OCI registry is written `chart: {repository, name, \
version}` (`repository: https://…` serving `index.yaml`, or `oci://host/path`; `version` exact, \
no ranges). `fief chart update` fetches each such chart and writes `fief.lock` at the repo root: \
per chart its `repository`, `name`, `version` and `digest` (`sha256:` of the `.tgz`). Every load \
checks it: a chart with no entry, an entry at another version, or an archive with another digest \
fails the tenants using the component, saying to run `fief chart update`. Archives are fetched \
once per digest into a content-addressed cache (`$FIEF_CHART_CACHE`, else \
`$XDG_CACHE_HOME/fief/charts`, else `~/.cache/fief/charts`: `sha256/<hex>.tgz`), checked on every \
read; with the archives cached nothing touches the network.\n\n\
Helm hooks are rendered as `helm template --skip-tests` prints them and placed in ordered \
phases: `pre-install`/`pre-upgrade` before the other objects, which wait until they are healthy, \
`post-install`/`post-upgrade` after them, ordered by `helm.sh/hook-weight`; `test`, delete and \
rollback hooks are not rendered (`fief.dev/phase: pre|main|post` places an object of any kind). \
On a pre or post object, `helm.sh/hook-delete-policy: hook-succeeded` deletes it once its phase \
is healthy and `hook-failed` once it failed; the inventory records it done, and it runs again \
only when its rendered content changes. \
A chart's `crds/` folders (its own and its enabled subcharts') follow Helm's rules, as \
component.yaml `crds:` says: `Create` (the default) creates each CustomResourceDefinition there \
that the cluster lacks, before the first stage, and waits until it is Established; fief never \
updates or deletes one, and records it in no tenant's inventory (every tenant using the chart \
shares it, so no prune removes it); `Skip` leaves them to the platform (the baseline). A \
`crds/` file holding anything but CRDs is refused; objects of a CRD's kind need its entry in \
fief.yaml `componentKinds`. Other cluster-scoped objects from a chart (a CRD in `templates/` \
included) are refused by validation, as for every component.\n\n\
A `kustomize` component's `kustomize:` block maps values to kustomize settings, each value \
named by its dotted path and defined in `varz.yaml`: `images: [{name, newName, newTag, \
digest}]` and `replicas: [{name, count}]` are added to the kustomization that wraps the \
component's (after everything it does itself, as `kustomize edit set image` and `set replicas` \
would); `substitute: {var: value}` runs Flux's post-build substitution over every built object \
(Flux's envsubst, not strict): `${var}`, `${var:=default}` and the other bash forms are \
replaced, an unset value by the empty string, `$${var}` gives `${var}`, and an object labelled \
or annotated `kustomize.toolkit.fluxcd.io/substitute: disabled` is left alone. An unset image \
or replica value leaves the kustomization's own.\n\n\
`fief-render-helper` (built by `tools/build-render-helper.sh`) is found as \
`$FIEF_RENDER_HELPER`, else next to the `fief` binary, else on `PATH`; it is started once per \
fief process, on the first `helm` or `kustomize` component, and reads no file and opens no \
connection: fief sends it the files. Only `fief-chart-pull`, built and shipped beside it and \
run for a chart whose digest is not cached, reaches a repository; fief looks for it beside the \
helper, else next to `fief`, else on `PATH`.\n";
