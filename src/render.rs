//! Render: tenant × environment × component templates → Kubernetes objects.
//!
//! In: a [`Repo`] (parsed model over an in-memory snapshot). Out: per tenant a
//! [`TenantRender`] holding labelled objects (each with the template file and line it came
//! from) and every diagnostic found. Pure: templates load only from the snapshot; execution is
//! bounded by minijinja fuel and recursion limits.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use minijinja::{Environment, ErrorKind, UndefinedBehavior, Value as JValue};
use serde::Serialize;
use serde_json::{Value, json};

use crate::error::{Diagnostic, Problem};
use crate::filters;
use crate::model::{
    BASELINE, BUILTIN_BASELINE, Component, Config, Repo, Tenant, TenantState, line_of_key,
};
use crate::objects::{self, ObjectId, Scope, scope_of};
use crate::snapshot::{Snapshot, safe_relative};
use crate::validate;
use crate::values;
use crate::yaml::{self, Document};

/// Instructions one template render may execute before it is stopped.
pub const TEMPLATE_FUEL: u64 = 5_000_000;
/// Largest rendered output of one template.
pub const MAX_RENDERED_BYTES: usize = 8 * 1024 * 1024;

/// Where an object was rendered from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Source {
    /// Repo-relative template path (or `<builtin>/templates/...`).
    pub file: String,
    /// 1-based template line of the object's document.
    pub line: usize,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// One rendered, labelled object.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedObject {
    /// Component name, or `baseline`.
    pub component: String,
    /// Environment it was rendered for.
    pub env: String,
    /// Identity (namespace defaulted).
    pub id: ObjectId,
    /// Where it came from.
    pub source: Source,
    /// The object.
    pub object: Value,
}

/// Everything rendered for one tenant.
#[derive(Debug, Clone, Default)]
pub struct TenantRender {
    /// Tenant name (tenant file stem).
    pub tenant: String,
    /// Lifecycle state, when the tenant file parsed.
    pub state: Option<TenantState>,
    /// The cluster whose agent owns the tenant, when the tenant file parsed.
    pub cluster: Option<String>,
    /// The tenant's namespaces, by environment.
    pub namespaces: BTreeMap<String, String>,
    /// Objects in apply order within the tenant (baseline, then components by dependency).
    pub objects: Vec<RenderedObject>,
    /// Every problem found; a tenant with any is neither applied nor pruned.
    pub errors: Vec<Diagnostic>,
}

impl TenantRender {
    /// Whether the tenant rendered and validated cleanly.
    pub fn is_ok(&self) -> bool {
        self.errors.is_empty()
    }
}

/// A minijinja environment over one snapshot; shared by every tenant of a render.
pub struct Renderer {
    env: Environment<'static>,
}

impl Renderer {
    /// Set up minijinja: loader over the snapshot, strict undefined, fuel, fief's filters.
    pub fn new(snapshot: Arc<Snapshot>) -> Renderer {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_fuel(Some(TEMPLATE_FUEL));
        env.set_recursion_limit(100);
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
        if let Ok(syntax) = minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .keep_trailing_newline(true)
            .build()
        {
            env.set_syntax(syntax);
        }
        env.set_path_join_callback(|name, parent| {
            if name.contains('/') {
                name.into()
            } else {
                match parent.rsplit_once('/') {
                    Some((dir, _)) => format!("{dir}/{name}").into(),
                    None => name.into(),
                }
            }
        });
        env.set_loader(move |name| load_template(&snapshot, name));
        filters::register(&mut env);
        Renderer { env }
    }

    fn render_template(&self, name: &str, ctx: &JValue) -> Result<String, Diagnostic> {
        let result = self.env.get_template(name).and_then(|t| t.render(ctx));
        match result {
            Ok(out) if out.len() > MAX_RENDERED_BYTES => Err(Diagnostic::new(
                name,
                None,
                Problem::Template {
                    detail: format!("rendered output is larger than {MAX_RENDERED_BYTES} bytes"),
                },
            )),
            Ok(out) => Ok(out),
            Err(e) => Err(template_diagnostic(name, &e)),
        }
    }
}

fn load_template(snapshot: &Snapshot, name: &str) -> Result<Option<String>, minijinja::Error> {
    if let Some((_, text)) = BUILTIN_BASELINE.iter().find(|(n, _)| *n == name) {
        return Ok(Some(text.to_string()));
    }
    let path = safe_relative(name)
        .map_err(|p| minijinja::Error::new(ErrorKind::InvalidOperation, p.to_string()))?;
    match snapshot.get(&path) {
        None => Ok(None),
        Some(Ok(text)) => Ok(Some(text.to_string())),
        Some(Err(problem)) => Err(minijinja::Error::new(
            ErrorKind::InvalidOperation,
            format!("{path}: {problem}"),
        )),
    }
}

/// A template's source text, borrowed (for mapping rendered documents to template lines).
fn template_source<'a>(snapshot: &'a Snapshot, name: &str) -> &'a str {
    if let Some((_, text)) = BUILTIN_BASELINE.iter().find(|(n, _)| *n == name) {
        return text;
    }
    match snapshot.get(name) {
        Some(Ok(text)) => text,
        _ => "",
    }
}

/// A minijinja error as a diagnostic at the innermost template and line it names.
fn template_diagnostic(name: &str, err: &minijinja::Error) -> Diagnostic {
    // The innermost error in the chain carries the include's own file and line.
    let mut innermost: &minijinja::Error = err;
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(me) = e.downcast_ref::<minijinja::Error>()
            && me.line().is_some()
        {
            innermost = me;
        }
        cur = e.source();
    }
    let file = innermost.name().unwrap_or(name).to_string();
    let mut detail = innermost.kind().to_string();
    if let Some(d) = innermost.detail() {
        detail = format!("{detail}: {d}");
    }
    if innermost.kind() == ErrorKind::OutOfFuel {
        detail = format!(
            "{detail} (the template ran more than {TEMPLATE_FUEL} instructions; look for a runaway loop)"
        );
    }
    Diagnostic::new(file, innermost.line(), Problem::Template { detail })
}

/// Render every tenant (or those named in `only`), in parallel, then check across tenants.
pub fn render_all(repo: &Repo, only: &[String]) -> Vec<TenantRender> {
    let renderer = Renderer::new(repo.snapshot.clone());
    let names: Vec<&String> = repo
        .tenants
        .keys()
        .filter(|n| only.is_empty() || only.contains(n))
        .collect();
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 16);
    let chunk = names.len().div_ceil(threads).max(1);
    let mut out: Vec<TenantRender> = std::thread::scope(|s| {
        let handles: Vec<_> = names
            .chunks(chunk)
            .map(|part| {
                let renderer = &renderer;
                s.spawn(move || {
                    part.iter()
                        .map(|n| render_tenant(renderer, repo, n))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    // Namespace collisions need every tenant's namespaces, filtered or not.
    let all_namespaces: BTreeMap<String, BTreeMap<String, String>> = match &repo.config {
        Ok(config) => repo
            .tenants
            .iter()
            .filter_map(|(n, t)| t.as_ref().ok().map(|t| (n.clone(), namespaces(config, t))))
            .collect(),
        Err(_) => BTreeMap::new(),
    };
    validate::check_namespace_collisions(&mut out, &all_namespaces, repo);
    out
}

/// The namespaces of a tenant, by environment.
pub fn namespaces(config: &Config, tenant: &Tenant) -> BTreeMap<String, String> {
    environments(config, tenant)
        .iter()
        .map(|e| (e.clone(), config.namespace(&tenant.metadata.name, e)))
        .collect()
}

fn environments(config: &Config, tenant: &Tenant) -> Vec<String> {
    if tenant.spec.environments.is_empty() {
        config.default_environments.clone()
    } else {
        tenant.spec.environments.clone()
    }
}

/// Render and validate one tenant.
pub fn render_tenant(renderer: &Renderer, repo: &Repo, name: &str) -> TenantRender {
    let mut out = TenantRender {
        tenant: name.to_string(),
        ..Default::default()
    };
    let tag = |ds: &[Diagnostic]| -> Vec<Diagnostic> {
        ds.iter().map(|d| d.clone().for_tenant(name)).collect()
    };
    let config = match &repo.config {
        Ok(c) => c,
        Err(ds) => {
            out.errors = tag(ds);
            return out;
        }
    };
    let tenant = match repo.tenants.get(name) {
        Some(Ok(t)) => t,
        Some(Err(ds)) => {
            out.errors = tag(ds);
            return out;
        }
        None => return out,
    };
    out.state = Some(tenant.spec.state);
    out.cluster = Some(tenant.spec.cluster.clone());
    out.namespaces = namespaces(config, tenant);
    let tenant_file = format!("tenants/{name}.yaml");
    let order = match component_order(repo, tenant, &tenant_file) {
        Ok(order) => order,
        Err(ds) => {
            out.errors = tag(&ds);
            return out;
        }
    };
    if tenant.spec.state == TenantState::Purged {
        return out;
    }
    let envs = environments(config, tenant);
    let mut errors = Vec::new();
    let env_files: BTreeMap<&str, Option<&crate::model::Environment>> = envs
        .iter()
        .map(|e| {
            let parsed = match repo.environments.get(e) {
                None => None,
                Some(Ok(env)) => Some(env),
                Some(Err(ds)) => {
                    errors.extend(ds.iter().cloned());
                    None
                }
            };
            (e.as_str(), parsed)
        })
        .collect();
    for (env_name, env) in &env_files {
        for key in env.map(|e| e.components.keys()).into_iter().flatten() {
            if key != BASELINE && !repo.components.contains_key(key) {
                let file = format!("environments/{env_name}.yaml");
                let line = repo
                    .snapshot
                    .get(&file)
                    .and_then(|e| e.as_ref().ok())
                    .and_then(|t| line_of_key(t, key));
                errors.push(Diagnostic::new(
                    file,
                    line,
                    Problem::UnknownComponent {
                        component: key.clone(),
                    },
                ));
            }
        }
    }
    let tenant_ctx = tenant_context(tenant, &envs, &out.namespaces);
    let fief_ctx =
        json!({"baseDomain": config.base_domain, "agentNamespace": config.agent_namespace});
    let applyset = objects::tenant_applyset_id(name, &config.agent_namespace);
    let mut emit =
        |component: &str, version: Option<&str>, vals: Value, env: &str, templates: &[String]| {
            let namespace = out.namespaces.get(env).cloned().unwrap_or_default();
            let ctx = JValue::from(minijinja::value::Serde(&json!({
                "tenant": tenant_ctx,
                "env": env,
                "namespace": namespace,
                "component": {"name": component, "version": version},
                "values": vals,
                "fief": fief_ctx,
            })));
            for template in templates {
                let rendered = match renderer.render_template(template, &ctx) {
                    Ok(r) => r,
                    Err(d) => {
                        errors.push(d);
                        continue;
                    }
                };
                let src_text = template_source(&repo.snapshot, template);
                let (objs, errs) =
                    parse_rendered(template, src_text, &rendered, component, env, &namespace);
                errors.extend(errs);
                for mut o in objs {
                    if keep_for_state(tenant.spec.state, &o) {
                        objects::add_labels(&mut o.object, name, component, &applyset);
                        freeze(tenant.spec.state, &mut o.object, &o.id);
                        out.objects.push(o);
                    }
                }
            }
        };
    for env in &envs {
        let env_file = env_files.get(env.as_str()).copied().flatten();
        let vals = values::layered([
            env_file.and_then(|e| e.values.as_ref()),
            env_file.and_then(|e| e.components.get(BASELINE)),
        ]);
        emit(BASELINE, None, vals, env, &repo.baseline);
    }
    for component in &order {
        let cref = tenant
            .spec
            .components
            .iter()
            .find(|c| c.name == component.name);
        let version = cref
            .and_then(|c| c.version.as_deref())
            .or(component.meta.version.as_deref());
        for env in &envs {
            let env_file = env_files.get(env.as_str()).copied().flatten();
            let vals = values::layered([
                Some(&component.values),
                env_file.and_then(|e| e.values.as_ref()),
                env_file.and_then(|e| e.components.get(&component.name)),
                cref.and_then(|c| c.values.as_ref()),
            ]);
            emit(&component.name, version, vals, env, &component.templates);
        }
    }
    errors.extend(validate::validate_objects(&out.objects, &out.namespaces));
    errors.extend(validate::check_policy(
        &out.objects,
        &config.policy,
        name,
        &config.base_domain,
        &tenant.spec.host_suffixes,
    ));
    out.errors = tag(&errors);
    if !out.errors.is_empty() {
        out.errors
            .sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
        out.errors.dedup();
    }
    out
}

fn tenant_context(
    tenant: &Tenant,
    envs: &[String],
    namespaces: &BTreeMap<String, String>,
) -> Value {
    json!({
        "name": tenant.metadata.name,
        "labels": tenant.metadata.labels,
        "annotations": tenant.metadata.annotations,
        "state": tenant.spec.state,
        "cluster": tenant.spec.cluster,
        "owner": tenant.spec.owner,
        "environments": envs,
        "namespaces": namespaces,
        "quota": tenant.spec.quota,
        "access": tenant.spec.access,
    })
}

/// The tenant's components, dependencies first (stable by spec order); or the diagnostics of
/// unknown components, missing dependencies and cycles.
fn component_order<'r>(
    repo: &'r Repo,
    tenant: &Tenant,
    tenant_file: &str,
) -> Result<Vec<&'r Component>, Vec<Diagnostic>> {
    let text = repo
        .snapshot
        .get(tenant_file)
        .and_then(|e| e.as_ref().ok())
        .map(|t| t.to_string())
        .unwrap_or_default();
    let line_of = |name: &str| {
        text.lines()
            .position(|l| {
                let t = l.trim_start().trim_start_matches("- ").trim_start();
                t.strip_prefix("name:")
                    .map(|v| v.trim().trim_matches(['"', '\'']) == name)
                    .unwrap_or(false)
            })
            .map(|i| i + 1)
    };
    let mut errors = Vec::new();
    let mut enabled: BTreeMap<&str, &Component> = BTreeMap::new();
    for c in &tenant.spec.components {
        match repo.components.get(&c.name) {
            None => errors.push(Diagnostic::new(
                tenant_file,
                line_of(&c.name),
                Problem::UnknownComponent {
                    component: c.name.clone(),
                },
            )),
            Some(Err(ds)) => errors.extend(ds.iter().cloned()),
            Some(Ok(component)) => {
                enabled.insert(c.name.as_str(), component);
            }
        }
    }
    for component in enabled.values() {
        for dep in &component.meta.depends_on {
            if enabled.contains_key(dep.as_str()) {
                continue;
            }
            if repo.components.contains_key(dep) {
                errors.push(Diagnostic::new(
                    tenant_file,
                    line_of(&component.name),
                    Problem::MissingDependency {
                        component: component.name.clone(),
                        needs: dep.clone(),
                    },
                ));
            } else {
                let file = format!("components/{}/component.yaml", component.name);
                let line = repo
                    .snapshot
                    .get(&file)
                    .and_then(|e| e.as_ref().ok())
                    .and_then(|t| line_of_key(t, "dependsOn"));
                errors.push(Diagnostic::new(
                    file,
                    line,
                    Problem::UnknownComponent {
                        component: dep.clone(),
                    },
                ));
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    // Depth-first topological sort in spec order; a grey node seen again is a cycle.
    let mut order = Vec::new();
    let mut done: BTreeSet<&str> = BTreeSet::new();
    for c in &tenant.spec.components {
        let mut path = Vec::new();
        if let Err(cycle) = visit(&c.name, &enabled, &mut done, &mut path, &mut order) {
            let file = format!("components/{}/component.yaml", c.name);
            return Err(vec![Diagnostic::new(
                file,
                None,
                Problem::DependencyCycle { cycle },
            )]);
        }
    }
    Ok(order)
}

fn visit<'r>(
    name: &str,
    enabled: &BTreeMap<&str, &'r Component>,
    done: &mut BTreeSet<&'r str>,
    path: &mut Vec<String>,
    order: &mut Vec<&'r Component>,
) -> Result<(), String> {
    let Some(component) = enabled.get(name) else {
        return Ok(());
    };
    if done.contains(component.name.as_str()) {
        return Ok(());
    }
    if path.iter().any(|p| p == name) {
        path.push(name.to_string());
        return Err(path.join(" -> "));
    }
    path.push(name.to_string());
    for dep in &component.meta.depends_on {
        visit(dep, enabled, done, path, order)?;
    }
    path.pop();
    done.insert(component.name.as_str());
    order.push(component);
    Ok(())
}

/// Template lines where each rendered document most likely starts.
fn source_lines(template: &str, docs: &[Document<'_>], kinds: &[Option<String>]) -> Vec<usize> {
    let chunks = yaml::split_documents(template);
    if chunks.len() == docs.len() {
        return chunks
            .iter()
            .map(|c| {
                let skip = c
                    .text
                    .lines()
                    .take_while(|l| is_non_content_line(l))
                    .count();
                c.first_line + skip
            })
            .collect();
    }
    let lines: Vec<&str> = template.lines().collect();
    let mut from = 0usize;
    kinds
        .iter()
        .map(|kind| {
            let Some(kind) = kind else { return 1 };
            let find = |start: usize| {
                lines[start.min(lines.len())..]
                    .iter()
                    .position(|l| {
                        l.trim_start()
                            .strip_prefix("kind:")
                            .map(|v| v.trim() == kind)
                            .unwrap_or(false)
                    })
                    .map(|i| i + start)
            };
            match find(from).or_else(|| find(0)) {
                Some(i) => {
                    from = i;
                    i + 1
                }
                None => 1,
            }
        })
        .collect()
}

/// A template line that renders no YAML of its own: blank, a comment, or only a tag.
fn is_non_content_line(line: &str) -> bool {
    let t = line.trim();
    t.is_empty()
        || t.starts_with('#')
        || (t.starts_with("{%") && t.ends_with("%}"))
        || (t.starts_with("{#") && t.ends_with("#}"))
}

/// Split rendered output into objects, checking each is a Kubernetes object, and default
/// namespaced objects into the environment's namespace.
fn parse_rendered(
    template: &str,
    template_src: &str,
    rendered: &str,
    component: &str,
    env: &str,
    namespace: &str,
) -> (Vec<RenderedObject>, Vec<Diagnostic>) {
    let docs = yaml::split_documents(rendered);
    let parsed: Vec<Result<Option<Value>, yaml::YamlError>> =
        docs.iter().map(yaml::parse_value).collect();
    let kinds: Vec<Option<String>> = parsed
        .iter()
        .map(|p| match p {
            Ok(Some(v)) => v.get("kind").and_then(Value::as_str).map(str::to_string),
            _ => None,
        })
        .collect();
    let lines = source_lines(template_src, &docs, &kinds);
    let mut objects = Vec::new();
    let mut errors = Vec::new();
    for ((doc, result), line) in docs.iter().zip(parsed).zip(lines) {
        let not_object =
            |detail: String| Diagnostic::new(template, Some(line), Problem::NotAnObject { detail });
        let value = match result {
            Ok(Some(v)) => v,
            Ok(None) => continue,
            Err(e) => {
                let rendered_line = e.line.unwrap_or(doc.first_line);
                errors.push(Diagnostic::new(
                    template,
                    Some(line + rendered_line.saturating_sub(doc.first_line)),
                    Problem::Yaml {
                        detail: format!(
                            "{} (line {rendered_line} of the rendered output)",
                            e.message
                        ),
                    },
                ));
                continue;
            }
        };
        let mut object = value;
        let Some(map) = object.as_object_mut() else {
            errors.push(not_object("the document is not a mapping".to_string()));
            continue;
        };
        let text_field = |map: &serde_json::Map<String, Value>, key: &str| {
            map.get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let (Some(api_version), Some(kind)) =
            (text_field(map, "apiVersion"), text_field(map, "kind"))
        else {
            errors.push(not_object(
                "apiVersion and kind must be non-empty strings".to_string(),
            ));
            continue;
        };
        let Some(metadata) = map.get_mut("metadata").and_then(Value::as_object_mut) else {
            errors.push(not_object("metadata must be a mapping".to_string()));
            continue;
        };
        let Some(name) = text_field(metadata, "name") else {
            errors.push(not_object(
                "metadata.name must be a non-empty string".to_string(),
            ));
            continue;
        };
        let group = objects::group_of(&api_version).to_string();
        let ns = match scope_of(&group, &kind) {
            Scope::Cluster => {
                metadata.remove("namespace");
                String::new()
            }
            Scope::Namespaced => match metadata.get("namespace") {
                None | Some(Value::Null) => {
                    metadata.insert("namespace".into(), Value::String(namespace.to_string()));
                    namespace.to_string()
                }
                Some(Value::String(s)) if !s.is_empty() => s.clone(),
                Some(Value::String(_)) => {
                    metadata.insert("namespace".into(), Value::String(namespace.to_string()));
                    namespace.to_string()
                }
                Some(_) => {
                    errors.push(not_object(
                        "metadata.namespace must be a string".to_string(),
                    ));
                    continue;
                }
            },
        };
        objects.push(RenderedObject {
            component: component.to_string(),
            env: env.to_string(),
            id: ObjectId {
                group,
                kind,
                namespace: ns,
                name,
            },
            source: Source {
                file: template.to_string(),
                line,
            },
            object,
        });
    }
    (objects, errors)
}

/// Kinds that hold data and survive `archived`.
fn holds_data(id: &ObjectId) -> bool {
    id.group.is_empty()
        && matches!(
            id.kind.as_str(),
            "PersistentVolumeClaim" | "Secret" | "ConfigMap"
        )
}

fn keep_for_state(state: TenantState, o: &RenderedObject) -> bool {
    match state {
        TenantState::Active | TenantState::Frozen => true,
        TenantState::Archived => o.component == BASELINE || holds_data(&o.id),
        TenantState::Purged => false,
    }
}

/// `frozen`: workloads at zero replicas, CronJobs suspended.
fn freeze(state: TenantState, object: &mut Value, id: &ObjectId) {
    if state != TenantState::Frozen {
        return;
    }
    let field = match (id.group.as_str(), id.kind.as_str()) {
        ("apps", "Deployment" | "StatefulSet") => ("replicas", json!(0)),
        ("batch", "CronJob") => ("suspend", json!(true)),
        _ => return,
    };
    if let Some(map) = object.as_object_mut() {
        let spec = map.entry("spec").or_insert_with(|| json!({}));
        if let Some(spec) = spec.as_object_mut() {
            spec.insert(field.0.to_string(), field.1);
        }
    }
}
