//! What the user can do about each [`Problem`]: one hint per kind, printed under the
//! diagnostic.
//!
//! In: a problem. Out: its hint. Pure.

use super::Problem;

impl Problem {
    /// What the user can do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            Problem::Unreadable { .. }
            | Problem::Binary { .. }
            | Problem::EscapesRepo { .. }
            | Problem::Yaml { .. }
            | Problem::UnknownField { .. }
            | Problem::InvalidField { .. } => file_hint(self),
            Problem::ClusterAccess { .. } => {
                "grant the agent list and watch on this kind (its ClusterRole), or stop using the kind"
            }
            Problem::NameMismatch { .. } => {
                "rename the file to <metadata.name>.yaml or change metadata.name"
            }
            Problem::TenantFileTwice { .. } => {
                "a tenant's name is its file name, wherever it is under tenants/: rename or remove one of the two files"
            }
            Problem::UnknownComponent { .. } => {
                "add components/<name>/ to the repo or correct the name"
            }
            Problem::UndeclaredEnvironment { .. } => {
                "correct the name, or declare the environment: add environments/<env>.yaml or list it in fief.yaml `environments`"
            }
            Problem::PinnedRef { .. } => {
                "correct `ref:` in the tenant file or create that tag or branch; pinned refs are read from the tenants repo's own git history, so REPO must be a git checkout"
            }
            Problem::MissingDependency { .. } => {
                "add the needed component to the tenant's spec.components"
            }
            Problem::DependencyCycle { .. } => "remove one dependsOn entry to break the cycle",
            Problem::Template { .. } => "fix the template at this line",
            Problem::HelmSyntax { jinja, .. } => jinja,
            Problem::ForeignTemplate { .. } => {
                "to send text with `{{` as written, put it between `{% raw %}` and `{% endraw %}` (or write `{{ '{{' }}` for each `{{`)"
            }
            Problem::Secret { hint, .. } => hint,
            Problem::NamespaceCollision { .. } => {
                "rename a tenant or an environment, or change namespacePattern in fief.yaml"
            }
            Problem::ReservedNamespace { .. } => {
                "rename the tenant or the environment; reserved are kube-*, default, the agent namespace and fief.yaml reservedNamespaces"
            }
            Problem::HostSuffixTaken { .. } => {
                "a host suffix belongs to one tenant: remove it from spec.hostSuffixes or pick one under this tenant's own domain"
            }
            Problem::ValuesSchema { .. } => {
                "correct the value at this line, or change the component's values.schema.json if it should be allowed"
            }
            Problem::UndefinedValue { .. } => {
                "correct the key, or define it (with its default) in the component's varz.yaml; a component that takes free-form values says `strictValues: false` in component.yaml"
            }
            Problem::InvalidSchema { .. } => {
                "fix the JSON Schema (every tenant using this component fails until then); `$ref` is resolved only inside the file"
            }
            Problem::UnknownOverride { .. } => {
                "use one of the tenant's own environments (spec.environments) or components (spec.components), or add it there"
            }
            Problem::Chart { .. } => {
                "run `fief chart update` to fetch the charts component.yaml names and record their digests in fief.lock, check what changed, and commit fief.lock"
            }
            Problem::Package { .. } => {
                "fix the chart or kustomization file named, or the values that reach it; `fief render --tenant T` shows the values"
            }
            Problem::RenderPanicked { .. } => {
                "this is a bug in fief: report it with the message; the tenant is retried on the next sync"
            }
            Problem::NotAnObject { .. }
            | Problem::ClusterScoped { .. }
            | Problem::ForeignNamespace { .. }
            | Problem::DuplicateObject { .. }
            | Problem::HostNotAllowed { .. }
            | Problem::RegistryNotAllowed { .. }
            | Problem::KindNotAllowed { .. }
            | Problem::ReservedLabel { .. }
            | Problem::InvalidName { .. }
            | Problem::ForeignSubject { .. }
            | Problem::KubeSchema { .. }
            | Problem::UnknownKind { .. } => object_hint(self),
        }
    }
}

/// The hint of a problem reading a repo file.
fn file_hint(problem: &Problem) -> &'static str {
    match problem {
        Problem::Unreadable { .. } => "make the file a UTF-8 text file inside the repo",
        Problem::Binary { .. } => {
            "make the file UTF-8 text: only the files of a `kind: helm` chart may be binary"
        }
        Problem::EscapesRepo { .. } => {
            "use a path inside the repo, without `..`, an absolute path or a symlink out"
        }
        Problem::Yaml { .. } => "fix the YAML at this line",
        Problem::UnknownField { .. } => {
            "correct the field's name (docs: reference/repo-format.md lists every field); unknown fields are errors so a typo never goes unnoticed"
        }
        _ => "correct the value of this field",
    }
}

/// The hint of a problem in a rendered object.
fn object_hint(problem: &Problem) -> &'static str {
    match problem {
        Problem::NotAnObject { .. } => {
            "every rendered document needs apiVersion, kind and metadata.name"
        }
        Problem::ClusterScoped { .. } => {
            "cluster-scoped objects come only from the baseline; use a namespaced kind"
        }
        Problem::ForeignNamespace { .. } => {
            "omit metadata.namespace or use one of the tenant's namespaces"
        }
        Problem::DuplicateObject { .. } => "rename one of the objects or remove the duplicate",
        Problem::HostNotAllowed { .. } => {
            "use a host under the tenant's suffix, or add one to the tenant's spec.hostSuffixes"
        }
        Problem::RegistryNotAllowed { .. } => {
            "use an image from a registry in fief.yaml policy.allowedRegistries"
        }
        Problem::KindNotAllowed { .. } => {
            "use an allowed kind, or add `group/Kind` to fief.yaml componentKinds (the fief-deployer Role then grants it)"
        }
        Problem::ReservedLabel { .. } => {
            "remove the label: labels under applyset.kubernetes.io/ are fief's (it sets applyset.kubernetes.io/part-of on every object itself)"
        }
        Problem::InvalidName { .. } => {
            "use a lowercase DNS-1123 name (letters, digits, `-`, `.`), without `/` or `..`"
        }
        Problem::ForeignSubject { .. } => {
            "component RoleBindings may bind only ServiceAccounts in the tenant's own namespaces; people get access through spec.access"
        }
        Problem::KubeSchema { .. } => {
            "correct the field in the template; fief checks built-in kinds offline against the Kubernetes API schema, which the API server would enforce or silently drop"
        }
        Problem::UnknownKind { .. } => {
            "correct `kind` or `apiVersion`; custom resources live in their own API groups and are left to the cluster"
        }
        _ => "correct the object in the template",
    }
}
