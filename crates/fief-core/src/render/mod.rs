//! Render: tenant × environment × component templates → Kubernetes objects.
//!
//! In: a [`Repo`] (parsed model over an in-memory snapshot). Out: per tenant a
//! [`TenantRender`] holding labelled objects (each with the template file and line it came
//! from) and every diagnostic found while rendering. Validation is a separate step
//! ([`crate::validate`]); [`crate::pipeline`] runs both. Pure: templates load only
//! from the snapshot; execution is bounded by minijinja fuel and recursion limits.

mod context;
pub mod filters;
mod hints;
mod order;
pub mod package;
mod package_emit;
mod parse;
mod pinned;
pub mod provenance;
mod secret_values;
mod state;
mod tenant;
pub mod values;

pub(crate) use tenant::render_with_secrets;
pub use tenant::{render_tenant, render_tenant_in};

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use minijinja::{Environment, ErrorKind, UndefinedBehavior, Value as JValue};
use serde::Serialize;
use serde_json::Value;

use crate::diagnostic::{Diagnostic, Problem};
use crate::model::environments;
pub use crate::model::namespaces;
use crate::model::{BUILTIN_BASELINE, TenantState};
use crate::objects::ObjectId;
use crate::snapshot::{Snapshot, safe_relative};

/// Instructions one template render may execute before it is stopped.
pub const TEMPLATE_FUEL: u64 = 5_000_000;
/// Largest rendered output of one template.
pub const MAX_RENDERED_BYTES: usize = 8 * 1024 * 1024;

/// A template's document starts and the (address, length) of the text they belong to.
type TemplateStarts = ((usize, usize), Arc<[usize]>);

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
    /// The object. It must not change once [`RenderedObject::content_hash`] was asked for.
    pub object: Value,
    /// The content hash, computed on first use.
    pub hash: HashMemo,
}

impl RenderedObject {
    /// [`crate::objects::content_hash`] of the object, computed once: the plan, the
    /// revision and the inventory of one sync all use it.
    pub fn content_hash(&self) -> &str {
        self.hash
            .0
            .get_or_init(|| crate::objects::content_hash(&self.object))
    }
}

/// A hash computed once from the rest of its struct. Not part of its identity: any two compare
/// equal.
#[derive(Clone, Default)]
pub struct HashMemo(std::sync::OnceLock<String>);

impl PartialEq for HashMemo {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for HashMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HashMemo")
    }
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
    /// Who may read the tenant's status without rights in the agent namespace: every admin,
    /// operator and viewer of any of its environments, sorted (`None`: the tenant file did
    /// not parse, so who they are is unknown and whatever was granted before stands).
    pub status_readers: Option<Vec<String>>,
    /// The tenant is a spare (its file says `spare: true`), kept ready for `fief allocate`.
    pub spare: bool,
    /// Objects in apply order within the tenant (baseline, then components by dependency).
    pub objects: Vec<RenderedObject>,
    /// The CustomResourceDefinitions of the `crds/` folders of the tenant's charts (components
    /// with `crds: Create`), once each: a sync creates each one that is absent before its
    /// first stage and never updates or deletes one. They are in no inventory (every tenant
    /// using the chart shares them, so no tenant's prune may remove them) and are not
    /// validated as component objects (cluster-scoped, on purpose).
    pub chart_crds: Vec<RenderedObject>,
    /// Every problem found; a tenant with any is neither applied nor pruned.
    pub errors: Vec<Diagnostic>,
    /// Hash of everything this render read ([`crate::inputs`]), filled in by the caller
    /// that knows it (empty: unknown). A successful sync records it in the tenant's status.
    pub inputs: String,
    /// The environments rendered (`--env`); a sync of this render prunes only what this
    /// scope [covers](crate::scope::EnvScope::covers).
    pub scope: crate::scope::EnvScope,
    /// The `dependsOn` of the tenant's components: a sync applies a component only once what
    /// it depends on is applied and healthy.
    pub dependencies: crate::model::Dependencies,
    /// The plaintext secrets the render read: what a sync scrubs from the API server's
    /// messages about these objects.
    pub secret_leaves: crate::secrets::SecretLeaves,
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
    /// The snapshot the templates load from (for error lines).
    snapshot: Arc<Snapshot>,
    /// Every component's `values.schema.json`, compiled once per render.
    values_schemas: crate::schema::values::ValuesSchemas,
    /// What renders `helm` and `kustomize` components (the installed one, see
    /// [`package::install`]); `None`: such a component fails with how to get the helper.
    packages: Option<Arc<dyn package::PackageRenderer>>,
    /// Per template: the first content line of each of its documents, worked out on first use
    /// (with the address and length of the source text it was worked out from).
    starts: Mutex<HashMap<String, TemplateStarts>>,
}

impl Renderer {
    /// Set up minijinja: loader over the snapshot, strict undefined, fuel, fief's filters.
    pub fn new(snapshot: Arc<Snapshot>) -> Renderer {
        let values_schemas = crate::schema::values::ValuesSchemas::load(&snapshot);
        let source = snapshot.clone();
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
        Renderer {
            env,
            snapshot: source,
            values_schemas,
            packages: package::installed(),
            starts: Mutex::default(),
        }
    }

    /// This renderer with `packages` rendering its `helm` and `kustomize` components instead
    /// of the installed renderer.
    pub fn with_packages(mut self, packages: Arc<dyn package::PackageRenderer>) -> Renderer {
        self.packages = Some(packages);
        self
    }

    /// [`parse::document_starts`] of the template `name` (whose source is `text`), kept.
    fn document_starts(&self, name: &str, text: &str) -> Arc<[usize]> {
        let source = (text.as_ptr() as usize, text.len());
        // A poisoned lock (a panicking render on another thread) still holds good entries.
        let mut starts = self.starts.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((from, found)) = starts.get(name)
            && *from == source
        {
            return found.clone();
        }
        let found: Arc<[usize]> = parse::document_starts(text).into();
        starts.insert(name.to_string(), (source, found.clone()));
        found
    }

    /// Render `name` with `ctx`; `context` builds the same context as JSON, only when an
    /// error needs explaining.
    fn render_template(
        &self,
        name: &str,
        ctx: &JValue,
        context: impl FnOnce() -> Value,
    ) -> Result<String, Diagnostic> {
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
            Err(e) => Err(explained(
                template_diagnostic(name, &e),
                &self.snapshot,
                &context(),
            )),
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

/// A template diagnostic with what fief can add: the undefined name and its neighbours, or
/// the Jinja equivalent of Helm syntax on that line.
fn explained(d: Diagnostic, snapshot: &Snapshot, context: &Value) -> Diagnostic {
    let Problem::Template { detail } = d.problem.as_ref() else {
        return d;
    };
    let source = template_source(snapshot, &d.file);
    let Some(text) = d.line.and_then(|l| source.lines().nth(l.saturating_sub(1))) else {
        return d;
    };
    if text.contains("{{") && hints::foreign_template(text) {
        let problem = Problem::ForeignTemplate {
            detail: detail.clone(),
        };
        return Diagnostic::new(d.file, d.line, problem);
    }
    if let Some(jinja) = hints::helm_hint(text) {
        let problem = Problem::HelmSyntax {
            detail: detail.clone(),
            jinja,
        };
        return Diagnostic::new(d.file, d.line, problem);
    }
    if detail.starts_with(&ErrorKind::UndefinedError.to_string())
        && let Some(more) = hints::undefined_detail(text, source, context)
    {
        let problem = Problem::Template {
            detail: format!("undefined value: {more}"),
        };
        return Diagnostic::new(d.file, d.line, problem);
    }
    d
}
