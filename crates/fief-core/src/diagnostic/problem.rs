//! The kinds of problem a diagnostic reports, each with the facts that describe it.
//!
//! In: nothing (every stage of the core builds them). Out: [`Problem`], whose `Display` is
//! the one-line message the user reads (an invalid YAML's parser message with its parser
//! options and Rust type names taken out, `readable_yaml`), and [`OverrideTarget`]. The hint of
//! each kind is in `hint`, the reading of deserializer messages in `yaml_error`.

use std::fmt;

/// The kind of problem, with the facts that describe it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// A file could not be read or is not allowed in the repo.
    #[error("cannot read file: {reason}")]
    Unreadable {
        /// Why the file could not be read.
        reason: String,
    },
    /// A file that is not UTF-8 text, with its bytes: only the files of a `kind: helm` chart
    /// (packed subcharts and files `.Files` reads) and fetched chart archives are read from
    /// them.
    #[error("cannot read file: it is not UTF-8 text")]
    Binary {
        /// The file's content.
        bytes: std::sync::Arc<[u8]>,
    },
    /// A chart a component takes from a repository that fief.lock does not pin, or whose
    /// archive could not be had with the locked digest.
    #[error("chart `{chart}`: {detail}")]
    Chart {
        /// The chart, as `<repository>/<name>:<version>`.
        chart: String,
        /// What is wrong and what to run.
        detail: String,
    },
    /// A symlink or include path that leaves the repo.
    #[error("path `{path}` leaves the repo")]
    EscapesRepo {
        /// The offending path as written.
        path: String,
    },
    /// The YAML could not be parsed or does not match the expected schema.
    #[error("invalid YAML: {}", readable_yaml(.detail))]
    Yaml {
        /// The parser's message.
        detail: String,
    },
    /// A repo file has a field its format does not have (most often a typo).
    #[error("unknown field `{field}`{suggestion}; the fields here are: {allowed}")]
    UnknownField {
        /// The field as written.
        field: String,
        /// ` (did you mean `x`?)`, or empty.
        suggestion: String,
        /// The fields allowed at that place, comma-separated.
        allowed: String,
    },
    /// A field has a value fief does not accept.
    #[error("{field}: {detail}")]
    InvalidField {
        /// The field path, e.g. `metadata.name`.
        field: String,
        /// What is wrong with it.
        detail: String,
    },
    /// The file name of a tenant does not match its `metadata.name`.
    #[error("file name `{file_stem}` does not match metadata.name `{name}`")]
    NameMismatch {
        /// The file name without `.yaml`.
        file_stem: String,
        /// The name inside the file.
        name: String,
    },
    /// Two tenant files in different directories under `tenants/` have the same file name,
    /// so they declare the same tenant.
    #[error("tenant `{tenant}` is declared twice: here and in {other}")]
    TenantFileTwice {
        /// The tenant's name (the file name without `.yaml`).
        tenant: String,
        /// The other file's path.
        other: String,
    },
    /// A tenant or environment file names a component that does not exist.
    #[error("unknown component `{component}`{suggestion}")]
    UnknownComponent {
        /// The component name as written.
        component: String,
        /// ` (did you mean `x`?)`, or empty.
        suggestion: String,
    },
    /// A tenant names an environment the repo does not declare.
    #[error("undeclared environment `{env}`{suggestion}; declared: {declared}")]
    UndeclaredEnvironment {
        /// The name as written.
        env: String,
        /// ` (did you mean `x`?)`, or empty.
        suggestion: String,
        /// The declared environments, comma-separated.
        declared: String,
    },
    /// A tenant pins a component to a git ref that cannot be read.
    #[error("component `{component}` pinned to ref `{git_ref}`: {detail}")]
    PinnedRef {
        /// The component.
        component: String,
        /// The ref as written.
        git_ref: String,
        /// Why it cannot be read.
        detail: String,
    },
    /// A component needs another component the tenant does not enable.
    #[error("component `{component}` depends on `{needs}`, which this tenant does not enable")]
    MissingDependency {
        /// The dependent component.
        component: String,
        /// The component it depends on.
        needs: String,
    },
    /// Components depend on each other in a circle.
    #[error("components depend on each other in a cycle: {cycle}")]
    DependencyCycle {
        /// The cycle, `a -> b -> a`.
        cycle: String,
    },
    /// minijinja refused or failed the template.
    #[error("template error: {detail}")]
    Template {
        /// minijinja's message.
        detail: String,
    },
    /// A template error on a line written in Helm (Go template) syntax.
    #[error("template error: {detail} (this line is written in Helm's Go template syntax)")]
    HelmSyntax {
        /// minijinja's message.
        detail: String,
        /// The Jinja way to write it.
        jinja: &'static str,
    },
    /// A template error on a line that holds another tool's template text (Prometheus and
    /// Alertmanager rules, Grafana), meant to reach the cluster as written.
    #[error(
        "template error: {detail} (this line holds another tool's template, such as Prometheus's `{{{{ $labels.x }}}}`, which fief reads as Jinja)"
    )]
    ForeignTemplate {
        /// minijinja's message.
        detail: String,
    },
    /// A rendered document is not a Kubernetes object.
    #[error("rendered document is not a Kubernetes object: {detail}")]
    NotAnObject {
        /// What is missing.
        detail: String,
    },
    /// A component object of a cluster-scoped kind.
    #[error("{kind} `{name}` is cluster-scoped; components may only create namespaced objects")]
    ClusterScoped {
        /// The kind.
        kind: String,
        /// The object name.
        name: String,
    },
    /// An object outside the tenant's namespaces.
    #[error(
        "{kind} `{name}` targets namespace `{namespace}`, which is not one of this tenant's namespaces ({allowed})"
    )]
    ForeignNamespace {
        /// The kind.
        kind: String,
        /// The object name.
        name: String,
        /// The namespace it targets.
        namespace: String,
        /// The tenant's namespaces, comma separated.
        allowed: String,
    },
    /// Two objects of one tenant with the same identity.
    #[error("duplicate object {id}; first rendered from {first}")]
    DuplicateObject {
        /// group/kind/namespace/name.
        id: String,
        /// Where the first one came from (`file:line`).
        first: String,
    },
    /// An Ingress host outside the tenant's allowed suffixes.
    #[error(
        "{kind} `{name}`: host `{host}` is not allowed for this tenant (allowed suffixes: {allowed})"
    )]
    HostNotAllowed {
        /// The kind.
        kind: String,
        /// The object name.
        name: String,
        /// The host.
        host: String,
        /// Allowed suffixes, comma separated.
        allowed: String,
    },
    /// An image from a registry that is not allowed.
    #[error("{kind} `{name}`: image `{image}` is not from an allowed registry ({allowed})")]
    RegistryNotAllowed {
        /// The kind.
        kind: String,
        /// The object name.
        name: String,
        /// The image.
        image: String,
        /// Allowed registries, comma separated.
        allowed: String,
    },
    /// Two tenants claim the same namespace.
    #[error("namespace `{namespace}` is also a namespace of tenant `{other}`")]
    NamespaceCollision {
        /// The namespace.
        namespace: String,
        /// The other tenant.
        other: String,
    },
    /// A SOPS secret file cannot be used (never quotes a secret value).
    #[error("secret file: {detail}")]
    Secret {
        /// What is wrong.
        detail: String,
        /// What to do.
        hint: &'static str,
    },
    /// A tenant namespace that is reserved for the platform.
    #[error("namespace `{namespace}` is reserved (matches `{pattern}`); no tenant may have it")]
    ReservedNamespace {
        /// The namespace.
        namespace: String,
        /// The reserved pattern it matches.
        pattern: String,
    },
    /// A component object of a kind components may not create.
    #[error(
        "{kind} `{name}` (group `{group}`) is not a kind components may create (allowed: {allowed})"
    )]
    KindNotAllowed {
        /// The API group (empty for core).
        group: String,
        /// The kind.
        kind: String,
        /// The object name.
        name: String,
        /// The allowed kinds, comma separated.
        allowed: String,
    },
    /// A host suffix claimed by two tenants, or under another tenant's.
    #[error("host suffix `{suffix}` overlaps `{theirs}`, a host suffix of tenant `{other}`")]
    HostSuffixTaken {
        /// This tenant's suffix.
        suffix: String,
        /// The other tenant's suffix it equals or lies under (or above).
        theirs: String,
        /// The other tenant.
        other: String,
    },
    /// An object name (or kind) the API server would refuse, or that is unsafe as a path.
    #[error("{kind} `{name}`: {detail}")]
    InvalidName {
        /// The kind.
        kind: String,
        /// The name as rendered.
        name: String,
        /// What rule it breaks.
        detail: String,
    },
    /// A label fief reserves, set by a template.
    #[error("{kind} `{name}` sets label `{label}`, which fief reserves for its inventories")]
    ReservedLabel {
        /// The kind.
        kind: String,
        /// The object name.
        name: String,
        /// The label key.
        label: String,
    },
    /// A component RoleBinding whose subject is not a ServiceAccount of the tenant.
    #[error("RoleBinding `{name}` binds {subject}, which is not a ServiceAccount of this tenant")]
    ForeignSubject {
        /// The RoleBinding name.
        name: String,
        /// The subject, e.g. `Group system:authenticated`.
        subject: String,
    },
    /// A component's merged values break its `values.schema.json`.
    #[error("values of component `{component}`: `{path}` {detail}")]
    ValuesSchema {
        /// The component.
        component: String,
        /// The offending value, `values.image.tag`.
        path: String,
        /// What is wrong with it, the schema file and path, and what is allowed there.
        detail: String,
    },
    /// A tenant or environment sets a value the component's varz.yaml does not define.
    #[error("values of component `{component}`: `{path}` is not defined in {varz}{suggestion}")]
    UndefinedValue {
        /// The component.
        component: String,
        /// The value's path, `values.replicsa`.
        path: String,
        /// The component's varz.yaml.
        varz: String,
        /// ` (did you mean `x`?)`, or empty.
        suggestion: String,
    },
    /// A `values.schema.json` that is not JSON or not a valid JSON Schema.
    #[error("invalid values schema: {detail}")]
    InvalidSchema {
        /// What is wrong.
        detail: String,
    },
    /// A field of a built-in kind that the Kubernetes API does not have, or of the wrong type.
    #[error(
        "{kind} `{name}`: `{path}` {detail} (Kubernetes {} API schema)",
        crate::schema::k8s::kubernetes_version()
    )]
    KubeSchema {
        /// The kind.
        kind: String,
        /// The object name.
        name: String,
        /// The field, `spec.replicas`.
        path: String,
        /// What is wrong with it.
        detail: String,
    },
    /// A kind that a built-in API group does not serve.
    #[error(
        "`kind: {kind}` is not served by apiVersion `{api_version}` in Kubernetes {}{suggestion}",
        crate::schema::k8s::kubernetes_version()
    )]
    UnknownKind {
        /// The apiVersion as written.
        api_version: String,
        /// The kind as written.
        kind: String,
        /// ` (did you mean ...?)`, or empty.
        suggestion: String,
    },
    /// A render thread panicked; the tenants it rendered are reported failed.
    #[error("rendering this tenant crashed: {message}")]
    RenderPanicked {
        /// The panic message.
        message: String,
    },
    /// The agent cannot list or watch a kind the tenant uses: the tenant is not synced. Not a
    /// fault of the repo: the cluster refuses the agent.
    #[error(
        "cluster access: {detail}; the agent cannot watch this kind, so this tenant is not synced"
    )]
    ClusterAccess {
        /// What the API server said (the kind and why).
        detail: String,
    },
    /// A tenant's `overrides:` names an environment or a component the tenant does not have.
    #[error("overrides: unknown {target} `{name}`{suggestion}; the tenant has: {known}")]
    UnknownOverride {
        /// What the key should name.
        target: OverrideTarget,
        /// The key as written.
        name: String,
        /// ` (did you mean `x`?)`, or empty.
        suggestion: String,
        /// The names the tenant has, comma-separated.
        known: String,
    },
    /// A `helm` or `kustomize` component did not render (Helm or kustomize refused it, or
    /// the render helper is missing).
    #[error("{kind} component `{component}` did not render: {detail}")]
    Package {
        /// `helm` or `kustomize`.
        kind: &'static str,
        /// The component.
        component: String,
        /// Helm's or kustomize's message, or how to get the helper.
        detail: String,
    },
}

/// What a key of a tenant's `overrides:` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverrideTarget {
    /// A key of `overrides:`: one of the tenant's environments.
    Environment,
    /// A key of `overrides.<env>.components:`: one of the tenant's components.
    Component,
}

impl fmt::Display for OverrideTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OverrideTarget::Environment => "environment",
            OverrideTarget::Component => "component",
        })
    }
}

/// A YAML or deserializer message in the user's terms: no parser option or Rust type names.
fn readable_yaml(detail: &str) -> String {
    if let Some(rest) = detail.strip_prefix("duplicate mapping key: ") {
        let key = rest
            .split(", set DuplicateKeyPolicy")
            .next()
            .unwrap_or(rest);
        return format!("duplicate key `{key}` (a key may appear once in a map)");
    }
    if let Some(name) = detail.strip_prefix("data did not match any variant of untagged enum ") {
        return if name.trim() == "Quantity" {
            "not a quantity: write a number or a string such as `500m`, `2` or `4Gi`".to_string()
        } else {
            "this value has none of the accepted forms".to_string()
        };
    }
    let replaced = detail
        .replace(
            "expected sequence start",
            "expected a list (`[a, b]` or `- a` lines)",
        )
        .replace(
            "expected mapping start",
            "expected a map (`key: value` lines)",
        );
    match replaced.split_once(", set DuplicateKeyPolicy") {
        Some((head, _)) => head.to_string(),
        None => replaced,
    }
}
