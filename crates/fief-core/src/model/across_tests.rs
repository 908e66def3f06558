//! The index updated commit after commit (a base and the tenants changed since, rebuilt as
//! one base now and then) answers as an index built afresh from the same repo.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::Across;
use crate::model::Repo;
use crate::snapshot::Snapshot;

/// Names whose namespaces collide with their environments (`x` in `a-b` and `x-a` in `b`
/// both own `x-a-b`), and numbered ones.
fn names() -> Vec<String> {
    let mut out: Vec<String> = ["x", "x-a", "y", "y-b"].map(String::from).to_vec();
    out.extend((0..96).map(|i| format!("t{i:02}")));
    out
}

/// The file of `name` for a draw `n`: its environments and host suffixes (or, one draw in
/// eight, no file at all; one in sixteen, a file that does not parse).
fn tenant_file(name: &str, n: u64) -> Option<String> {
    let envs = ["prod", "dev", "a-b", "b", "b-b"];
    let hosts = ["a.io", "shop.a.io", "io", "b.io", "x.b.io"];
    match n % 16 {
        0 | 1 => return None,
        2 => {
            return Some(format!(
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec: [\n"
            ));
        }
        _ => {}
    }
    let env = envs[(n / 16) as usize % envs.len()];
    let host = hosts[(n / 128) as usize % hosts.len()];
    let suffixes = if (n / 1024).is_multiple_of(2) {
        format!("[{host}]")
    } else {
        "[]".into()
    };
    Some(format!(
        "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  environments: [{env}]\n  hostSuffixes: {suffixes}\n"
    ))
}

/// What the checks read of `index`, for comparing two indexes: every tenant's claims, the
/// owners of every namespace and the claims overlapping every suffix claimed.
fn answers(index: &Across) -> String {
    let claimed: Vec<_> = index.claimed().collect();
    let mut out = format!("{claimed:?}\n");
    for (_, claims) in &claimed {
        for (_, ns) in &claims.namespaces {
            out += &format!("{ns}: {:?}\n", index.owners(ns));
        }
        for s in &claims.suffixes {
            out += &format!("{}: {:?}\n", s.suffix, index.overlapping(&s.suffix));
        }
    }
    out
}

#[test]
fn an_index_updated_commit_after_commit_answers_as_one_built_afresh_and_stays_small() {
    let mut seed: u64 = 11;
    let mut next = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        seed >> 20
    };
    let names = names();
    let mut files: Vec<(String, String)> = vec![(
        "fief.yaml".into(),
        "baseDomain: example.com\npolicy:\n  ingressHostSuffixes: [\"{tenant}.example.com\"]\n"
            .into(),
    )];
    for name in &names {
        files.extend(tenant_file(name, next()).map(|f| (format!("tenants/{name}.yaml"), f)));
    }
    let mut repo = Repo::load(Arc::new(Snapshot::from_files(files.clone())));
    repo.across();
    let (mut rebased, mut shared) = (0, 0);
    for step in 0..300 {
        let mut snapshot = (*repo.snapshot).clone();
        let mut changed = BTreeSet::new();
        for _ in 0..1 + next() % 3 {
            let name = &names[next() as usize % names.len()];
            let path = format!("tenants/{name}.yaml");
            match tenant_file(name, next()) {
                Some(text) => snapshot.insert(path.clone(), Ok(text.into())),
                None => drop(snapshot.remove(&path)),
            }
            changed.insert(path);
        }
        let (next_repo, _) = Repo::load_reusing(Arc::new(snapshot), &repo, &changed);
        let before = repo.across().frozen.clone();
        repo = next_repo;
        let index = repo
            .across
            .get()
            .expect("carried from the last commit's index");
        let fresh = Across::build(&repo.config, &repo.tenants);
        let answered = answers(index);
        assert_eq!(answered, answers(&fresh), "step {step}");
        shared += answered
            .lines()
            .filter(|l| l.contains("\", \"") || l.contains("), (\""))
            .count();
        let base = index.frozen.as_ref().map_or(0, |f| f.len());
        assert!(
            index.tenants.len() + index.shadowed.len() <= base / 8 + 64,
            "step {step}"
        );
        if !before
            .zip(index.frozen.clone())
            .is_some_and(|(b, a)| Arc::ptr_eq(&b, &a))
        {
            rebased += 1;
        }
    }
    assert!(
        rebased > 0,
        "the changed tenants outgrew the bound and were made a base"
    );
    assert!(
        shared > 0,
        "some namespaces and suffixes were claimed by two tenants"
    );
}
