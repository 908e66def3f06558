//! The tenants repository of the agent's test kit: a local git repository the agent clones
//! and fetches, committed in-process with libgit2, and the files of a small fleet.
//!
//! In: the files of each commit (path, text) and the paths it removes. Out: the commit ids,
//! the repository's URL (its path) and the folder the agent caches its clone in.

use std::path::PathBuf;

use git2::{IndexAddOption, Repository, RepositoryInitOptions, Signature};

/// A local git repository on branch `main`, with a folder for the agent's clone.
pub(crate) struct Repo {
    work: tempfile::TempDir,
    cache: tempfile::TempDir,
}

impl Repo {
    /// A repository whose first commit holds `files`.
    pub(crate) fn new(files: &[(String, String)]) -> Repo {
        let repo = Repo {
            work: tempfile::tempdir().expect("temp dir"),
            cache: tempfile::tempdir().expect("temp dir"),
        };
        let mut init = RepositoryInitOptions::new();
        init.initial_head("main");
        Repository::init_opts(repo.work.path(), &init).expect("git init");
        repo.commit(files, &[]);
        repo
    }

    /// Its URL, as the agent's `--repo` (a local path).
    pub(crate) fn url(&self) -> String {
        self.work.path().display().to_string()
    }

    /// Where the agent keeps its clone (kept across restarts, as a Pod's volume).
    pub(crate) fn cache(&self) -> PathBuf {
        self.cache.path().to_path_buf()
    }

    fn open(&self) -> Repository {
        Repository::open(self.work.path()).expect("open the repository")
    }

    /// The commit `main` is at.
    pub(crate) fn head(&self) -> String {
        let repo = self.open();
        let head = repo.head().and_then(|h| h.peel_to_commit());
        head.expect("a commit").id().to_string()
    }

    /// Write `files`, delete `removed`, commit them all; the new commit.
    pub(crate) fn commit(&self, files: &[(String, String)], removed: &[&str]) -> String {
        let root = self.work.path();
        for (path, text) in files {
            let file = root.join(path);
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent).expect("create folder");
            }
            std::fs::write(&file, text).expect("write file");
        }
        for path in removed {
            std::fs::remove_file(root.join(path)).expect("remove file");
        }
        let repo = self.open();
        let mut index = repo.index().expect("the index");
        index
            .add_all(["*"], IndexAddOption::DEFAULT, None)
            .expect("git add");
        index.update_all(["*"], None).expect("git add (removals)");
        index.write().expect("write the index");
        let tree = index.write_tree().expect("write the tree");
        let tree = repo.find_tree(tree).expect("the tree");
        let me = Signature::now("fief", "fief@example.com").expect("a signature");
        let parent = repo.head().and_then(|h| h.peel_to_commit()).ok();
        let parents: Vec<&git2::Commit> = parent.iter().collect();
        let id = repo.commit(Some("HEAD"), &me, &me, "change", &tree, &parents);
        id.expect("git commit").to_string()
    }
}

/// The component `app`: one ConfigMap per name in its value `configmaps` (by default one,
/// `app`), each holding the value `greeting`.
const APP: &str = "{% for name in values.configmaps %}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ name }}\ndata:\n  greeting: {{ values.greeting | quote }}\n{% endfor %}\n";

/// The files of a fleet: fief.yaml (agent namespace [`super::kit::AGENT_NS`], then `config`,
/// e.g. rollout waves), the component `app` ([`APP`]) with greeting `hello`, and `tenants`
/// (see [`tenant`]).
pub(crate) fn fleet(config: &str, tenants: &[(String, String)]) -> Vec<(String, String)> {
    let mut files = vec![
        (
            "fief.yaml".to_string(),
            format!("agentNamespace: {}\n{config}", super::kit::AGENT_NS),
        ),
        (
            "components/app/varz.yaml".to_string(),
            "configmaps: [app]\ngreeting: hello\n".to_string(),
        ),
        (
            "components/app/templates/app.yaml".to_string(),
            APP.to_string(),
        ),
    ];
    files.extend(tenants.iter().cloned());
    files
}

/// fief.yaml's rollout: waves `canary` and `early` by the label `ring` (the other tenants
/// last).
pub(crate) const WAVES: &str = "rollout:\n  waves:\n    - {name: canary, selector: {ring: canary}}\n    - {name: early, selector: {ring: early}}\n";

/// The component `app`'s shared values with `greeting` (a change of it reaches every tenant
/// through a shared input: a rollout, with [`WAVES`]).
pub(crate) fn shared_greeting(greeting: &str) -> (String, String) {
    (
        "components/app/varz.yaml".to_string(),
        format!("configmaps: [app]\ngreeting: {greeting}\n"),
    )
}

/// The component `web`: one Deployment `web` of the value `image` (by default `nginx:1`),
/// one replica; its health is read from the status a controller writes.
pub(crate) fn web() -> Vec<(String, String)> {
    let template = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n        - name: web\n          image: {{ values.image | quote }}\n";
    vec![
        (
            "components/web/varz.yaml".to_string(),
            "image: nginx:1\n".to_string(),
        ),
        (
            "components/web/templates/web.yaml".to_string(),
            template.to_string(),
        ),
    ]
}

/// The file of tenant `name` running component `app` with `values` (a YAML flow map, e.g.
/// `{greeting: hi}`), labelled `labels` (e.g. `{ring: canary}`, or empty), in `environments`
/// (e.g. `[prod]`, or empty: the default one).
pub(crate) fn tenant(
    name: &str,
    labels: &str,
    environments: &str,
    values: &str,
) -> (String, String) {
    tenant_of(name, labels, environments, &[("app", values)])
}

/// The file of tenant `name` running `components` (name, values as a YAML flow map or empty),
/// labelled `labels` and in `environments` (as [`tenant`]).
pub(crate) fn tenant_of(
    name: &str,
    labels: &str,
    environments: &str,
    components: &[(&str, &str)],
) -> (String, String) {
    let labels = if labels.is_empty() {
        String::new()
    } else {
        format!("  labels: {labels}\n")
    };
    let environments = if environments.is_empty() {
        String::new()
    } else {
        format!("  environments: {environments}\n")
    };
    let components: String = components
        .iter()
        .map(|(c, values)| {
            let values = if values.is_empty() { "{}" } else { values };
            format!("    - name: {c}\n      values: {values}\n")
        })
        .collect();
    (
        format!("tenants/{name}.yaml"),
        format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\n{labels}spec:\n{environments}  components:\n{components}"
        ),
    )
}
