//! Where a day-2 command finds the agent: the namespace it reads (and writes requests into),
//! where that choice came from, and what to say when the namespace holds nothing of fief.
//!
//! In: [`AgentNamespaceArgs`], the current folder, and (for the hint only) the kubeconfig.
//! Out: an [`AgentNamespace`]: `-n/--namespace`, else `agentNamespace` of `--repo`'s
//! fief.yaml, else of the current folder's when it is a tenants repo, else `fief-system`.
//! The kubeconfig context's namespace is never used: it is where a person works (with
//! `kubens`, often a tenant's namespace), not where the agent runs, as `flux` keeps to
//! `flux-system` whatever the context says.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{AgentNamespaceArgs, CliError, ClusterArgs};
use crate::core::model::Repo;
use crate::core::snapshot::Snapshot;

/// The namespace when nothing names one.
pub const DEFAULT: &str = "fief-system";

/// Where the agent namespace of a command came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Origin {
    /// `-n/--namespace`.
    Flag,
    /// `agentNamespace` of the fief.yaml of `--repo DIR` (or its default, when the repo has
    /// no fief.yaml).
    Repo(PathBuf),
    /// `agentNamespace` of the current folder's fief.yaml.
    CurrentFolder,
    /// Nothing named one: [`DEFAULT`].
    Default,
}

/// The agent namespace a day-2 command uses, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct AgentNamespace {
    /// The namespace.
    pub name: String,
    /// Where it came from.
    pub origin: Origin,
}

impl fmt::Display for AgentNamespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let from = match &self.origin {
            Origin::Flag => "from -n".to_string(),
            Origin::Repo(dir) => format!("agentNamespace of {}", dir.join("fief.yaml").display()),
            Origin::CurrentFolder => "agentNamespace of ./fief.yaml".to_string(),
            Origin::Default => "the default: no -n, no --repo, no fief.yaml here".to_string(),
        };
        write!(f, "namespace {} ({from})", self.name)
    }
}

/// The agent namespace for `args`, looked for from the current folder.
pub(super) fn resolve(args: &AgentNamespaceArgs) -> Result<AgentNamespace, CliError> {
    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    resolve_in(args, &here)
}

/// [`resolve`] with `here` as the current folder.
fn resolve_in(args: &AgentNamespaceArgs, here: &Path) -> Result<AgentNamespace, CliError> {
    if let Some(name) = &args.namespace {
        return Ok(AgentNamespace {
            name: name.clone(),
            origin: Origin::Flag,
        });
    }
    if let Some(dir) = &args.repo {
        let name = repo_namespace(dir)?.ok_or_else(|| {
            CliError::Usage(format!(
                "--repo {}: not a tenants repo (no fief.yaml, no tenants/); give the folder \
                 that holds fief.yaml, or -n NAMESPACE",
                dir.display()
            ))
        })?;
        return Ok(AgentNamespace {
            name,
            origin: Origin::Repo(dir.clone()),
        });
    }
    if here.join("fief.yaml").is_file()
        && let Some(name) = repo_namespace(here)?
    {
        return Ok(AgentNamespace {
            name,
            origin: Origin::CurrentFolder,
        });
    }
    Ok(AgentNamespace {
        name: DEFAULT.to_string(),
        origin: Origin::Default,
    })
}

/// `agentNamespace` of `dir`'s fief.yaml (its default without one), when `dir` is a tenants
/// repo (it has fief.yaml or `tenants/`); an unreadable or invalid fief.yaml is an error, not
/// a silent default. Reads fief.yaml only, not the repo's tenants.
fn repo_namespace(dir: &Path) -> Result<Option<String>, CliError> {
    let path = dir.join("fief.yaml");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if !dir.join("tenants").is_dir() {
                return Ok(None);
            }
            String::new()
        }
        Err(e) => {
            return Err(CliError::Usage(format!(
                "{}: cannot read: {e}",
                path.display()
            )));
        }
    };
    let files: Vec<(&str, &str)> = if text.is_empty() {
        Vec::new()
    } else {
        vec![("fief.yaml", text.as_str())]
    };
    let repo = Repo::load(Arc::new(Snapshot::from_files(files)));
    match repo.config {
        Ok(config) => Ok(Some(config.agent_namespace)),
        Err(diagnostics) => {
            let first = diagnostics
                .first()
                .map(ToString::to_string)
                .unwrap_or_default();
            Err(CliError::Usage(format!(
                "{} is invalid, so the agent namespace is unknown: {first}; fix it or give -n NAMESPACE",
                path.display()
            )))
        }
    }
}

/// What to say when `ns` holds no fief inventory (and no agent): the namespace and where it
/// came from, how to name another, and the kubeconfig context's namespace when it differs
/// (fief does not use it).
pub(super) fn nothing_here(ns: &AgentNamespace, cluster: &ClusterArgs) -> String {
    let mut out = format!(
        "{ns} holds no fief inventory and no fief agent; name the agent's namespace with -n \
         NAMESPACE or --repo DIR (a tenants repo whose fief.yaml sets agentNamespace)"
    );
    if let Some(context) = context_namespace(cluster).filter(|c| *c != ns.name) {
        out.push_str(&format!(
            "; your kubeconfig context's namespace `{context}` is not where fief looks (-n {context} if the agent runs there)"
        ));
    }
    out
}

/// The namespace of the kubeconfig context in use (`--context`, else the current one), if it
/// names one.
fn context_namespace(cluster: &ClusterArgs) -> Option<String> {
    let kubeconfig = match &cluster.kubeconfig {
        Some(path) => kube::config::Kubeconfig::read_from(path).ok(),
        None => kube::config::Kubeconfig::read().ok(),
    }?;
    let current = cluster
        .context
        .clone()
        .or_else(|| kubeconfig.current_context.clone())?;
    kubeconfig
        .contexts
        .into_iter()
        .find(|c| c.name == current)?
        .context?
        .namespace
        .filter(|ns| !ns.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(namespace: Option<&str>, repo: Option<&Path>) -> AgentNamespaceArgs {
        AgentNamespaceArgs {
            namespace: namespace.map(str::to_string),
            repo: repo.map(Path::to_path_buf),
        }
    }

    fn repo_with(fief_yaml: Option<&str>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("tenants")).unwrap();
        if let Some(text) = fief_yaml {
            std::fs::write(dir.path().join("fief.yaml"), text).unwrap();
        }
        dir
    }

    #[test]
    fn the_flag_wins_then_the_repo_then_the_current_folder_then_fief_system() {
        let repo = repo_with(Some("agentNamespace: ops\n"));
        let here = repo_with(Some("agentNamespace: here-ns\n"));
        let empty = tempfile::tempdir().unwrap();
        let got = |a: &AgentNamespaceArgs, dir: &Path| resolve_in(a, dir).unwrap();

        let flag = got(&args(Some("x"), Some(repo.path())), here.path());
        assert_eq!((flag.name.as_str(), &flag.origin), ("x", &Origin::Flag));
        let from_repo = got(&args(None, Some(repo.path())), here.path());
        assert_eq!(from_repo.name, "ops");
        assert_eq!(from_repo.origin, Origin::Repo(repo.path().to_path_buf()));
        let from_here = got(&args(None, None), here.path());
        assert_eq!(
            (from_here.name.as_str(), &from_here.origin),
            ("here-ns", &Origin::CurrentFolder)
        );
        let default = got(&args(None, None), empty.path());
        assert_eq!(
            (default.name.as_str(), &default.origin),
            (DEFAULT, &Origin::Default)
        );
        assert!(
            default
                .to_string()
                .contains("namespace fief-system (the default")
        );
    }

    #[test]
    fn a_repo_without_agent_namespace_gives_the_default_and_a_folder_that_is_no_repo_is_refused() {
        let bare = repo_with(None);
        let got = resolve_in(&args(None, Some(bare.path())), bare.path()).unwrap();
        assert_eq!(got.name, DEFAULT);
        let plain = repo_with(Some("baseDomain: example.com\n"));
        let got = resolve_in(&args(None, Some(plain.path())), plain.path()).unwrap();
        assert_eq!(got.name, DEFAULT);
        let nothing = tempfile::tempdir().unwrap();
        let err = resolve_in(&args(None, Some(nothing.path())), nothing.path()).unwrap_err();
        assert!(err.to_string().contains("not a tenants repo"), "{err}");
    }

    #[test]
    fn an_invalid_fief_yaml_is_an_error_naming_it_not_a_silent_default() {
        let repo = repo_with(Some("agentNamespace: ops\nnoSuchSetting: 1\n"));
        let err = resolve_in(&args(None, None), repo.path()).unwrap_err();
        assert!(
            matches!(err, CliError::Usage(_)) && err.to_string().contains("fief.yaml is invalid"),
            "{err}"
        );
    }
}
