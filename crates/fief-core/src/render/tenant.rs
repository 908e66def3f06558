//! Rendering one tenant: baseline and components × environments, values layered per step.
//!
//! In: the shared [`Renderer`], the [`Repo`] and a tenant name. Out: the tenant's
//! [`TenantRender`] (objects labelled, namespaces defaulted, state applied) with every render
//! diagnostic tagged with the tenant. Not validated here: see [`crate::pipeline`]. Pure.

use std::collections::BTreeMap;

use minijinja::Value as JValue;
use serde_json::{Value, json};

use super::context::fief_context;
use super::order::component_order;
use super::package_emit::check_strict;
use super::parse::parse_rendered;
use super::pinned::env_override;
use super::state::keep;
use super::{Renderer, TenantRender, environments, namespaces, template_source, values};
use crate::diagnostic::Diagnostic;
use crate::model::{BASELINE, Config, Environment, Repo, Tenant, TenantState, line_of_key};
use crate::objects;
use crate::schema::locate::Step;
use crate::schema::values::Layer;
use crate::scope::EnvScope;

/// Render one tenant; a tenant with errors in its own files or its components' keeps the
/// diagnostics and no objects.
pub fn render_tenant(renderer: &Renderer, repo: &Repo, name: &str) -> TenantRender {
    render_tenant_in(renderer, repo, name, &EnvScope::All)
}

/// [`render_tenant`] for the environments of `scope` only: the others are not rendered (so
/// their problems are not reported), while templates still see every environment and
/// namespace of the tenant, so an environment renders as it does in a full render.
pub fn render_tenant_in(
    renderer: &Renderer,
    repo: &Repo,
    name: &str,
    scope: &EnvScope,
) -> TenantRender {
    let (mut out, leaves) = render_with_secrets(renderer, repo, name, scope);
    // A diagnostic that quotes rendered text names the secret key, never the value.
    crate::secrets::scrub(&mut out.errors, &leaves);
    out.secret_leaves = crate::secrets::SecretLeaves(leaves);
    out
}

/// [`render_tenant_in`] without scrubbing its diagnostics, and the plaintext secrets the
/// tenant read, `(secrets.<shared|tenant>.<path>, value)`: the caller runs more checks and
/// scrubs every diagnostic of the tenant with them once it has all of them.
pub(crate) fn render_with_secrets(
    renderer: &Renderer,
    repo: &Repo,
    name: &str,
    scope: &EnvScope,
) -> (TenantRender, Vec<(String, String)>) {
    let mut out = TenantRender {
        tenant: name.to_string(),
        scope: scope.clone(),
        ..Default::default()
    };
    let (config, tenant) = match resolve(repo, name) {
        Ok(Some(found)) => found,
        Ok(None) => return (out, Vec::new()),
        Err(ds) => {
            out.errors = tagged(name, ds);
            return (out, Vec::new());
        }
    };
    out.state = Some(tenant.spec.state);
    out.cluster = Some(tenant.spec.cluster.clone());
    out.namespaces = namespaces(config, tenant);
    out.status_readers = Some(tenant.spec.status_readers());
    out.spare = tenant.spec.spare;
    let order = match component_order(repo, tenant, &repo.tenant_file(name)) {
        Ok(order) => order,
        Err(ds) => {
            out.errors = tagged(name, &ds);
            return (out, Vec::new());
        }
    };
    if tenant.spec.state == TenantState::Purged {
        return (out, Vec::new());
    }
    out.dependencies = crate::model::Dependencies::of(&order);
    let envs = environments(config, tenant);
    let secrets = match repo.secrets.for_tenant(name) {
        Ok(s) => s,
        Err(ds) => {
            out.errors = tagged(name, &ds);
            return (out, Vec::new());
        }
    };
    let mut errors = Vec::new();
    // Only the environments in scope are rendered, so only their files are read.
    let emitted: Vec<String> = envs.iter().filter(|e| scope.includes(e)).cloned().collect();
    let env_files = environment_files(repo, &emitted, &mut errors);
    check_environment_components(repo, &env_files, &mut errors);
    let tenant_ctx = tenant_context(tenant, &envs, &out.namespaces, None);
    let by_env = env_tenant_contexts(tenant, &envs, &out.namespaces);
    let fief_ctx = fief_context(config);
    let mut emitter = Emitter {
        renderer,
        repo,
        tenant,
        // The parts of the context every template of the tenant shares, converted once.
        shared: [
            to_jinja(&tenant_ctx),
            to_jinja(&fief_ctx),
            to_jinja(&secrets.context),
        ],
        tenant_ctx,
        by_env,
        fief_ctx,
        secrets_ctx: secrets.context,
        applyset: objects::tenant_applyset_id(name, &config.agent_namespace),
        out: &mut out,
        errors: &mut errors,
    };
    for env in &emitted {
        let env_file = env_files.get(env.as_str()).copied().flatten();
        let vals = values::layered([
            env_file.and_then(|e| e.values.as_ref()),
            env_file.and_then(|e| e.components.get(BASELINE)),
        ]);
        emitter.emit(BASELINE, None, vals, env, &repo.baseline);
    }
    for component in &order {
        for env in &emitted {
            let env_file = env_files.get(env.as_str()).copied().flatten();
            emitter.emit_component(component, env, env_file);
        }
    }
    out.errors = tagged(name, &errors);
    (out, secrets.leaves)
}

/// `tenant` for the environments whose overrides change `tenant.quota` or `tenant.access`:
/// they get their own, as JSON and as a template value.
fn env_tenant_contexts(
    tenant: &Tenant,
    envs: &[String],
    namespaces: &BTreeMap<String, String>,
) -> BTreeMap<String, (Value, JValue)> {
    envs.iter()
        .filter_map(|env| {
            let over = tenant
                .spec
                .overrides
                .get(env)
                .filter(|o| o.changes_tenant())?;
            let ctx = tenant_context(tenant, envs, namespaces, Some(over));
            let jv = to_jinja(&ctx);
            Some((env.clone(), (ctx, jv)))
        })
        .collect()
}

/// Where one component's values for one environment come from.
pub(super) struct LayerSources<'a> {
    /// The component's folder (`name@ref` when pinned).
    pub(super) dir: &'a str,
    pub(super) component: &'a str,
    /// The tenant's file (see [`Repo::tenant_file`]).
    pub(super) tenant_file: &'a str,
    pub(super) env: &'a str,
}

/// The tenant file's own values of one component in one environment, parsed from the
/// tenant as it is held ([`crate::model::Packed`]) for the time of a render.
pub(super) struct OwnValues {
    /// `spec.components[<c>].values`.
    tenant: Option<Value>,
    /// `spec.overrides.<env>.components.<c>.values`.
    over: Option<Value>,
}

impl OwnValues {
    /// The values of the component entry `cref` and its environment's override `over`.
    pub(super) fn of(
        cref: Option<&crate::model::ComponentRef>,
        over: Option<&crate::model::ComponentOverride>,
    ) -> OwnValues {
        OwnValues {
            tenant: cref.and_then(|c| c.values.as_ref()).map(|v| v.value()),
            over: over.and_then(|o| o.values.as_ref()).map(|v| v.value()),
        }
    }
}

/// A component's value layers in precedence order, each with the file (and place in it)
/// that holds it: `varz.yaml`, the environment's `values`, its `components.<c>`, the tenant's
/// `values`, the tenant's `overrides.<env>.components.<c>.values`.
pub(super) fn value_layers<'a>(
    at: &LayerSources<'a>,
    parsed: &'a crate::model::Component,
    env_file: Option<&'a Environment>,
    own: &'a OwnValues,
) -> [Layer<'a>; 5] {
    let (dir, component, env) = (at.dir, at.component, at.env);
    let env_path = format!("environments/{env}.yaml");
    let tenant_path = at.tenant_file.to_string();
    [
        Layer {
            value: Some(&parsed.values),
            file: format!("components/{dir}/varz.yaml"),
            anchor: Vec::new(),
        },
        Layer {
            value: env_file.and_then(|e| e.values.as_ref()),
            file: env_path.clone(),
            anchor: vec![Step::Key("values")],
        },
        Layer {
            value: env_file.and_then(|e| e.components.get(component)),
            file: env_path,
            anchor: vec![Step::Key("components"), Step::Key(component)],
        },
        Layer {
            value: own.tenant.as_ref(),
            file: tenant_path.clone(),
            anchor: vec![
                Step::Key("spec"),
                Step::Key("components"),
                Step::ItemWith("name", component),
                Step::Key("values"),
            ],
        },
        Layer {
            value: own.over.as_ref(),
            file: tenant_path,
            anchor: vec![
                Step::Key("spec"),
                Step::Key("overrides"),
                Step::Key(env),
                Step::Key("components"),
                Step::Key(component),
                Step::Key("values"),
            ],
        },
    ]
}

/// The repo settings and the tenant file; `Ok(None)` for a tenant the repo does not have.
fn resolve<'r>(
    repo: &'r Repo,
    name: &str,
) -> Result<Option<(&'r Config, &'r Tenant)>, &'r [Diagnostic]> {
    let config = repo.config.as_ref().map_err(Vec::as_slice)?;
    match repo.tenants.get(name) {
        Some(Ok(t)) => Ok(Some((config, t))),
        Some(Err(ds)) => Err(ds),
        None => Ok(None),
    }
}

fn tagged(tenant: &str, ds: &[Diagnostic]) -> Vec<Diagnostic> {
    ds.iter().map(|d| d.clone().for_tenant(tenant)).collect()
}

/// The environment files of the tenant's environments (absent files are `None`); the
/// diagnostics of files that do not parse go to `errors`.
fn environment_files<'r, 'e>(
    repo: &'r Repo,
    envs: &'e [String],
    errors: &mut Vec<Diagnostic>,
) -> BTreeMap<&'e str, Option<&'r Environment>> {
    envs.iter()
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
        .collect()
}

/// An environment file's `components:` keys must name components of the repo.
fn check_environment_components(
    repo: &Repo,
    env_files: &BTreeMap<&str, Option<&Environment>>,
    errors: &mut Vec<Diagnostic>,
) {
    for (env_name, env) in env_files {
        for key in env.map(|e| e.components.keys()).into_iter().flatten() {
            if key != BASELINE && !repo.components.contains_key(key) {
                let file = format!("environments/{env_name}.yaml");
                let line = repo
                    .snapshot
                    .get(&file)
                    .and_then(|e| e.as_ref().ok())
                    .and_then(|t| line_of_key(t, key));
                errors.push(Diagnostic::new(file, line, repo.unknown_component(key)));
            }
        }
    }
}

/// Renders one component's templates for one environment into the tenant's output.
#[path = "tenant_package.rs"]
mod package;

struct Emitter<'a, 'r> {
    renderer: &'a Renderer,
    repo: &'r Repo,
    tenant: &'r Tenant,
    /// `tenant`, `fief` and `secrets` as template values.
    shared: [JValue; 3],
    /// The same three as JSON, to explain template errors.
    tenant_ctx: Value,
    /// `tenant` for the environments whose overrides change its quota or access.
    by_env: BTreeMap<String, (Value, JValue)>,
    fief_ctx: Value,
    secrets_ctx: Value,
    applyset: String,
    out: &'a mut TenantRender,
    errors: &'a mut Vec<Diagnostic>,
}

impl Emitter<'_, '_> {
    /// Render one component for one environment, unless its values are refused (by its
    /// `values.schema.json`, or as keys its varz.yaml does not define).
    fn emit_component(
        &mut self,
        component: &crate::model::Component,
        env: &str,
        env_file: Option<&Environment>,
    ) {
        // The folder of this environment: its override's `ref`, else the entry's.
        let (cref, dir, component) =
            match super::pinned::env_component(self.repo, self.tenant, component, env) {
                Ok(found) => (found.entry, found.dir, found.component),
                Err(ds) => {
                    self.errors.extend(ds);
                    return;
                }
            };
        let over = env_override(self.tenant, env, &component.name);
        let version = over
            .and_then(|o| o.version.as_deref())
            .or(cref.and_then(|c| c.version.as_deref()))
            .or(component.meta.version.as_deref());
        let tenant_file = self.repo.tenant_file(&self.out.tenant);
        let sources = LayerSources {
            dir: &dir,
            component: &component.name,
            tenant_file: &tenant_file,
            env,
        };
        let own = OwnValues::of(cref, over);
        let layers = value_layers(&sources, component, env_file, &own);
        let vals = values::layered(layers.iter().map(|l| l.value));
        let schemas = &self.renderer.values_schemas;
        let snapshot = &self.repo.snapshot;
        let mut invalid = schemas.check(snapshot, &dir, &component.name, &vals, &layers);
        if !schemas.has_schema(&dir) && component.meta.strict_values != Some(false) {
            invalid.extend(check_strict(snapshot, component, &dir, &layers));
        }
        if !invalid.is_empty() {
            // Values the component refuses are not rendered: its templates may assume them.
            self.errors.extend(invalid);
            return;
        }
        match component.package.as_deref() {
            Some(package) => self.emit_package(package, component, &dir, vals, env),
            None => self.emit(&component.name, version, vals, env, &component.templates),
        }
    }

    fn emit(
        &mut self,
        component: &str,
        version: Option<&str>,
        vals: Value,
        env: &str,
        templates: &[String],
    ) {
        let namespace = self.out.namespaces.get(env).cloned().unwrap_or_default();
        let component_ctx = json!({"name": component, "version": version});
        // The same map the JSON context below converts to, without converting the shared
        // parts again for every component and environment.
        let [tenant_jv, fief_jv, secrets_jv] = &self.shared;
        let (tenant_json, tenant_jv) = match self.by_env.get(env) {
            Some((json, jv)) => (json, jv),
            None => (&self.tenant_ctx, tenant_jv),
        };
        let ctx = JValue::from_pairs([
            ("tenant", tenant_jv.clone()),
            ("env", JValue::from(env)),
            ("namespace", JValue::from(namespace.as_str())),
            ("component", to_jinja(&component_ctx)),
            ("values", to_jinja(&vals)),
            ("fief", fief_jv.clone()),
            ("secrets", secrets_jv.clone()),
        ]);
        let context = || {
            json!({
                "tenant": tenant_json,
                "env": env,
                "namespace": namespace,
                "component": component_ctx,
                "values": vals,
                "fief": self.fief_ctx,
                "secrets": self.secrets_ctx,
            })
        };
        for template in templates {
            let rendered = match self.renderer.render_template(template, &ctx, context) {
                Ok(r) => r,
                Err(d) => {
                    self.errors.push(d);
                    continue;
                }
            };
            let src_text = template_source(&self.repo.snapshot, template);
            let starts = self.renderer.document_starts(template, src_text);
            let (objs, errs) = parse_rendered(
                template, src_text, &starts, &rendered, component, env, &namespace,
            );
            self.errors.extend(errs);
            keep(self.out, self.tenant, &self.applyset, component, objs);
        }
    }
}

/// `tenant` as templates see it; with `over`, the quota and access of that environment.
fn tenant_context(
    tenant: &Tenant,
    envs: &[String],
    namespaces: &BTreeMap<String, String>,
    over: Option<&crate::model::EnvOverride>,
) -> Value {
    let quota = match over.and_then(|o| o.quota.as_ref()) {
        Some(q) => tenant.spec.quota.overlay(q),
        None => (*tenant.spec.quota).clone(),
    };
    let access = match over.and_then(|o| o.access.as_ref()) {
        Some(a) => tenant.spec.access.overlay(a),
        None => tenant.spec.access.clone(),
    };
    json!({
        "name": tenant.metadata.name,
        "labels": tenant.metadata.labels,
        "annotations": tenant.metadata.annotations,
        "state": tenant.spec.state,
        "cluster": tenant.spec.cluster,
        "owner": tenant.spec.owner,
        "environments": envs,
        "namespaces": namespaces,
        "quota": quota,
        "access": access,
    })
}

/// A JSON value as a template value (the conversion minijinja's `Serde` wrapper does).
fn to_jinja(value: &Value) -> JValue {
    JValue::from(minijinja::value::Serde(value))
}
