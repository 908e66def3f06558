//! The imported repo as files: fief.yaml, `environments/<env>.yaml`, each component's
//! `component.yaml` and `varz.yaml`, one `tenants/<tenant>.yaml` per tenant, and from
//! `fief init` the `.sops.yaml` to fill in, the CI workflow, `.gitignore` and the JSON Schemas.
//!
//! In: a [`Repo`]. Out: (path, text) pairs; the caller writes them. The CI workflow is pinned
//! to the running fief binary (hashed once per process), as `fief init` pins it.

use serde_json::{Map, Value, json};

use super::layers::{ComponentOut, Repo, TenantOut};
use super::model::Source;
use crate::cli::init::{SCHEMA_DIR, SKELETON, workflow};
use crate::core::model::RepoFile;

/// The files of the imported repo, by path.
pub fn files(repo: &Repo, objects: usize) -> Vec<(String, String)> {
    let mut out = vec![("fief.yaml".to_string(), fief_yaml(objects))];
    for (env, components) in &repo.environments {
        out.push((
            format!("environments/{env}.yaml"),
            environment(env, components),
        ));
    }
    for c in &repo.components {
        let name = &c.component.name;
        out.push((
            format!("components/{name}/component.yaml"),
            component_yaml(c),
        ));
        out.push((format!("components/{name}/varz.yaml"), varz_yaml(c)));
    }
    for (name, tenant) in &repo.tenants {
        out.push((format!("tenants/{name}.yaml"), tenant_yaml(name, tenant)));
    }
    for (path, text) in SKELETON {
        if matches!(path, ".sops.yaml" | ".gitignore") {
            out.push((path.to_string(), text.to_string()));
        }
    }
    out.push((
        workflow::PATH.to_string(),
        workflow::text(workflow::Pins::of_this_fief()),
    ));
    out.extend(
        RepoFile::ALL
            .iter()
            .map(|f| (format!("{SCHEMA_DIR}/{}", f.schema_file()), f.schema_text())),
    );
    out
}

/// `value` as block YAML indented by `indent` spaces (a mapping or list on lines of its own).
fn yaml(value: &Value, indent: usize) -> String {
    let text = crate::core::yaml::value_to_string(value).unwrap_or_else(|_| format!("{value}\n"));
    let pad = " ".repeat(indent);
    text.lines().map(|l| format!("{pad}{l}\n")).collect()
}

/// `key:` followed by `value` as a nested block, or `key: {}` when it is empty.
fn field(key: &str, value: &Value, indent: usize) -> String {
    let pad = " ".repeat(indent);
    if super::values::is_empty(value) && !value.is_null() {
        return format!("{pad}{key}: {{}}\n");
    }
    if value.is_object() || value.is_array() {
        format!("{pad}{key}:\n{}", yaml(value, indent + 2))
    } else {
        format!("{pad}{key}: {}", yaml(value, 0))
    }
}

fn fief_yaml(objects: usize) -> String {
    format!(
        "# yaml-language-server: $schema={SCHEMA_DIR}/fief.schema.json\n\
         # Written by `fief import` from {objects} Flux and Argo CD objects; IMPORT-REPORT.md says\n\
         # what was not mapped. Every field is optional; the reference lists them with defaults.\n\
         # Each tenant gets one namespace per environment, named by this pattern.\n\
         namespacePattern: \"{{tenant}}-{{env}}\"\n\
         # The namespace the fief agent runs in (fief install --namespace).\n\
         agentNamespace: fief-system\n"
    )
}

fn environment(env: &str, components: &std::collections::BTreeMap<String, Value>) -> String {
    let mut text = format!(
        "# yaml-language-server: $schema=../{SCHEMA_DIR}/environment.schema.json\n\
         # Values for every tenant's {env} namespace: what all of them agreed on in the source.\n"
    );
    if components.is_empty() {
        text.push_str("values: {}\n");
    } else {
        text.push_str("components:\n");
        for (name, values) in components {
            text.push_str(&field(name, values, 2));
        }
    }
    text
}

/// component.yaml's fields as a mapping.
fn component_value(c: &ComponentOut) -> Value {
    let mut m = Map::new();
    let comp = &c.component;
    match &comp.source {
        Source::Chart {
            repository, name, ..
        } => {
            m.insert("kind".into(), json!("helm"));
            m.insert(
                "chart".into(),
                json!({"repository": repository, "name": name, "version": comp.version.clone().unwrap_or_default()}),
            );
        }
        Source::GitChart { .. } => {
            m.insert("kind".into(), json!("helm"));
            m.insert("chart".into(), json!("chart"));
        }
        Source::Kustomize { .. } => {
            m.insert("kind".into(), json!("kustomize"));
            m.insert("path".into(), json!(comp.kustomize_path().unwrap_or(".")));
            let block = kustomize_block(c);
            if !super::values::is_empty(&block) {
                m.insert("kustomize".into(), block);
            }
        }
    }
    if comp.skip_crds() {
        m.insert("crds".into(), json!("Skip"));
    }
    if !c.secret_values.is_empty() {
        m.insert("secretValues".into(), json!(c.secret_values));
    }
    if !c.depends_on.is_empty() {
        m.insert("dependsOn".into(), json!(c.depends_on));
    }
    Value::Object(m)
}

/// `kustomize:` of a kustomize component: each setting names its value.
fn kustomize_block(c: &ComponentOut) -> Value {
    let comp = &c.component;
    let images: Vec<Value> = comp
        .images()
        .iter()
        .map(|i| {
            let key = super::kustomize::image_key(&i.name);
            let mut e = json!({"name": i.name});
            for (field, set) in [
                ("newName", &i.new_name),
                ("newTag", &i.new_tag),
                ("digest", &i.digest),
            ] {
                if set.is_some() {
                    e[field] = json!(format!("images.{key}.{field}"));
                }
            }
            e
        })
        .collect();
    let replicas: Vec<Value> = comp
        .names(|r| &r.replicas)
        .iter()
        .map(|n| json!({"name": n, "count": format!("replicas.{n}")}))
        .collect();
    let substitute: Map<String, Value> = comp
        .names(|r| &r.vars)
        .into_iter()
        .map(|v| (v.clone(), json!(format!("vars.{v}"))))
        .collect();
    let mut block = Map::new();
    for (k, v) in [
        ("images", json!(images)),
        ("replicas", json!(replicas)),
        ("substitute", Value::Object(substitute)),
    ] {
        if !super::values::is_empty(&v) && v != json!([]) {
            block.insert(k.into(), v);
        }
    }
    Value::Object(block)
}

fn component_yaml(c: &ComponentOut) -> String {
    let from: Vec<String> = c
        .component
        .origins()
        .iter()
        .map(|o| format!("#   {} ({}:{})\n", o.object, o.file, o.line))
        .collect();
    let copy = match &c.component.source {
        Source::GitChart { url, path } => format!(
            "# Copy the chart's folder `{path}` of {url} to components/{}/chart/.\n",
            c.component.name
        ),
        Source::Kustomize { url, path } => format!(
            "# Copy `{}` of {url} (and any base it reads from outside it) into components/{}/;\n# the kustomization `{path}` is `path` below.\n",
            super::kustomize::split_path(path).0,
            c.component.name
        ),
        Source::Chart { .. } => String::new(),
    };
    format!(
        "# yaml-language-server: $schema=../../{SCHEMA_DIR}/component.schema.json\n\
         # Imported by `fief import` from:\n{}{copy}{}",
        from.concat(),
        yaml(&component_value(c), 0)
    )
}

fn varz_yaml(c: &ComponentOut) -> String {
    let what = match c.component.source {
        Source::Kustomize { .. } => {
            "# The values the kustomize settings in component.yaml read; null leaves the kustomization's own.\n"
        }
        _ => {
            "# The values every release agreed on in the source; tenants and environments set the rest.\n"
        }
    };
    if super::values::is_empty(&c.varz) {
        return format!("{what}{{}}\n");
    }
    format!("{what}{}", yaml(&c.varz, 0))
}

fn tenant_yaml(name: &str, t: &TenantOut) -> String {
    let envs: Vec<&str> = t.environments.iter().map(String::as_str).collect();
    let mut text = format!(
        "# yaml-language-server: $schema=../{SCHEMA_DIR}/tenant.schema.json\n\
         apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  environments: [{}]\n",
        envs.join(", ")
    );
    if let Some(cluster) = &t.cluster {
        text.push_str(&format!("  cluster: {}", yaml(&json!(cluster), 0)));
    }
    text.push_str("  components:\n");
    for (component, values) in &t.components {
        text.push_str(&format!("    - name: {component}\n"));
        if !super::values::is_empty(values) {
            text.push_str(&field("values", values, 6));
        }
    }
    if !t.overrides.is_empty() {
        text.push_str("  overrides:\n");
        for (env, components) in &t.overrides {
            text.push_str(&format!("    {env}:\n      components:\n"));
            for (component, values) in components {
                text.push_str(&format!("        {component}:\n"));
                text.push_str(&field("values", values, 10));
            }
        }
    }
    text
}
