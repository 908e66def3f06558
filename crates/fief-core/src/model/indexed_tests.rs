use std::sync::Arc;

use super::*;
use crate::pipeline::{render_all, render_indexed_batches};
use crate::render::TenantRender;
use crate::scope::EnvScope;

fn tenant(name: &str, spec: &str) -> (String, String) {
    (
        format!("tenants/{name}.yaml"),
        format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n{spec}"
        ),
    )
}

/// A repo with good tenants and every kind of bad tenant file.
fn files() -> Vec<(String, String)> {
    vec![
        ("fief.yaml".into(), "baseDomain: example.com\n".into()),
        tenant("acme", "  environments: [prod]\n"),
        // Claims acme's host suffix: fails across tenants.
        tenant("zed", "  hostSuffixes: [acme.example.com]\n"),
        tenant("pinned", "  components: [{name: web, ref: v1}]\n"),
        // Both would own the namespace `x-y-prod`.
        tenant("x-y", "  environments: [prod]\n"),
        tenant("x", "  environments: [y-prod]\n"),
        ("tenants/broken.yaml".into(), "kind: [".into()),
        ("tenants/other.yaml".into(), tenant("mismatch", "").1),
        ("tenants/eu/twice.yaml".into(), tenant("twice", "").1),
        ("tenants/us/twice.yaml".into(), tenant("twice", "").1),
        ("tenants/empty.yml".into(), String::new()),
    ]
}

/// The repo of `files` indexed: the tenant files left out of the snapshot, read through
/// `reader`; a tenant file that cannot be used stays in the snapshot, as a source leaves it.
fn indexed(files: &[(String, String)], reader: Arc<dyn TenantReader>) -> Indexed {
    let mut snapshot = Snapshot::default();
    let mut listed = Vec::new();
    for (path, text) in files {
        if tenant_stem(path).is_some() {
            listed.push(path.clone());
        } else {
            snapshot.insert(path.clone(), Ok(text.as_str().into()));
        }
    }
    snapshot.insert_problem("tenants/locked.yaml".into(), "permission denied".into());
    Indexed::load(snapshot, listed, reader)
}

fn whole(files: &[(String, String)]) -> Snapshot {
    let mut snapshot = Snapshot::from_files(files.iter().map(|(p, t)| (p.as_str(), t.as_str())));
    snapshot.insert_problem("tenants/locked.yaml".into(), "permission denied".into());
    snapshot
}

fn render(indexed: &Indexed, batch: usize) -> Vec<TenantRender> {
    let mut out = Vec::new();
    let done = render_indexed_batches(indexed, &[], &EnvScope::All, batch, |b| {
        out.extend(b);
        Ok::<(), ()>(())
    });
    assert_eq!(done, Ok(()));
    out
}

fn debug(renders: &[TenantRender]) -> Vec<String> {
    renders.iter().map(|r| format!("{r:?}")).collect()
}

#[test]
fn an_indexed_repo_renders_every_tenant_as_the_repo_loaded_whole() {
    let files = files();
    let snapshot = whole(&files);
    let loaded = Repo::load(Arc::new(snapshot.clone()));
    let expected = render_all(&loaded, &[]);
    let indexed = indexed(&files, Arc::new(snapshot));
    assert!(indexed.base.tenants.is_empty());
    let names: Vec<&str> = indexed.names().collect();
    assert_eq!(names, loaded.tenants.keys().collect::<Vec<_>>());
    assert!(indexed.base.tenant_files.is_empty());
    assert_eq!(indexed.tenant_file("twice"), loaded.tenant_file("twice"));
    for batch in [2, 100] {
        assert_eq!(debug(&render(&indexed, batch)), debug(&expected));
    }
    let errors = |name: &str| {
        let r = expected
            .iter()
            .find(|r| r.tenant == name)
            .expect("rendered");
        format!("{:?}", r.errors)
    };
    assert!(errors("zed").contains("acme.example.com"));
    assert!(errors("x-y").contains("x-y-prod"), "{}", errors("x-y"));
    assert_eq!(
        indexed.pins,
        BTreeSet::from([("web".to_string(), "v1".to_string())])
    );
    assert_eq!(
        indexed.base.pinning,
        imbl::OrdSet::unit("pinned".to_string())
    );
    assert_eq!(indexed.environments("acme").collect::<Vec<_>>(), ["prod"]);
}

/// Reads the tenant files of one snapshot, but one of them as another text.
struct Edited(Snapshot);

impl TenantReader for Edited {
    fn read(&self, path: &str) -> Entry {
        if path == "tenants/acme.yaml" {
            return Ok(tenant("acme", "  environments: [dev]\n").1.into());
        }
        self.0.read(path)
    }
}

#[test]
fn a_tenant_file_changed_after_it_was_indexed_fails_its_tenant() {
    let files = files();
    let mut indexed = indexed(&files, Arc::new(whole(&files)));
    indexed.reader = Arc::new(Edited(whole(&files)));
    let renders = render(&indexed, 100);
    let acme = renders.iter().find(|r| r.tenant == "acme").expect("acme");
    let text = format!("{}", acme.errors[0]);
    assert!(
        text.contains("tenants/acme.yaml") && text.contains("changed while fief read"),
        "{text}"
    );
    assert!(renders.iter().any(|r| r.tenant == "pinned"));
}

#[test]
fn an_apply_pass_over_the_index_judges_renders_and_stamps_as_over_the_whole_repo() {
    use crate::fleet::Pass;
    let files = files();
    let repo = Arc::new(Repo::load(Arc::new(whole(&files))));
    let reader: Arc<dyn TenantReader> = Arc::new(whole(&files));
    let indexed = Arc::new(indexed(&files, reader));
    for scope in [EnvScope::All, EnvScope::of(&["prod".to_string()])] {
        let scope = Arc::new(scope);
        let loaded = Pass::new(repo.clone(), &[], scope.clone(), "default", None);
        let index = Pass::indexed(indexed.clone(), &[], scope, "default");
        assert_eq!(index.names, loaded.names);
        assert_eq!(index.known, loaded.known);
        assert_eq!(index.reusable, loaded.reusable);
        assert!(index.reusable.contains_key("acme"), "{:?}", index.reusable);
        assert!(!index.reusable.contains_key("zed"), "fails across tenants");
        // An invalid render's input hash is never recorded: the index stamps valid ones only.
        let mut want = loaded.renders.batch(&loaded.names);
        for r in want.iter_mut().filter(|r| !r.is_ok()) {
            r.inputs.clear();
        }
        assert!(want.iter().any(|r| r.is_ok() && !r.inputs.is_empty()));
        assert_eq!(debug(&index.renders.batch(&index.names)), debug(&want));
        assert_eq!(index.renders.rendered(), loaded.renders.rendered());
    }
}
