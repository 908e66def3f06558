//! A fleet's values split into fief's layers: what every release of a component agrees on
//! becomes its `varz.yaml`, what every tenant of an environment agrees on the environment
//! file's `components.<c>`, what a tenant's environments agree on the tenant's values, and
//! the rest the tenant's per-environment overrides. Also each component's `secretValues`
//! and `dependsOn` (from Flux `dependsOn` and Argo CD sync waves).
//!
//! In: a [`Fleet`]. Out: a [`Repo`] to write, and findings. Pure.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::group::{Component, Fleet, Placed};
use super::model::Finding;
use super::values::{camel, common, get_path, set_path, subtract};

/// A component with its layers' shares.
#[derive(Debug)]
pub struct ComponentOut {
    /// The component and its releases.
    pub component: Component,
    /// `varz.yaml`.
    pub varz: Value,
    /// `secretValues`: values path → `tenant.<key>`.
    pub secret_values: BTreeMap<String, String>,
    /// `dependsOn`.
    pub depends_on: Vec<String>,
}

/// A tenant file's content.
#[derive(Debug, Default)]
pub struct TenantOut {
    /// `spec.cluster`, when not the default.
    pub cluster: Option<String>,
    /// `spec.environments`.
    pub environments: BTreeSet<String>,
    /// `spec.components`: name → values.
    pub components: BTreeMap<String, Value>,
    /// `spec.overrides`: environment → component → values.
    pub overrides: BTreeMap<String, BTreeMap<String, Value>>,
}

/// The repo to write.
#[derive(Debug, Default)]
pub struct Repo {
    /// The components, by name.
    pub components: Vec<ComponentOut>,
    /// The tenants, by name.
    pub tenants: BTreeMap<String, TenantOut>,
    /// Each environment's `components.<c>` values.
    pub environments: BTreeMap<String, BTreeMap<String, Value>>,
}

/// Split `fleet`'s values into layers.
pub fn repo(fleet: Fleet, findings: &mut Vec<Finding>) -> Repo {
    let mut repo = Repo::default();
    for c in &fleet.components {
        for p in &c.releases {
            let t = repo.tenants.entry(p.tenant.clone()).or_default();
            t.environments.insert(p.env.clone());
            repo.environments.entry(p.env.clone()).or_default();
            match (&t.cluster, &p.release.cluster) {
                (None, Some(cluster)) => t.cluster = Some(cluster.clone()),
                (Some(a), Some(b)) if a != b => findings.push(Finding {
                    at: p.release.origin.clone(),
                    field: "spec.destination".to_string(),
                    message: format!("tenant `{}` is on cluster `{a}` already; fief puts a tenant on one cluster: make a second tenant for `{b}`", p.tenant),
                }),
                _ => {}
            }
        }
    }
    let depends = depends_on(&fleet, findings);
    for c in fleet.components {
        let out = layer(c, &mut repo, findings);
        repo.components.push(out);
    }
    for out in &mut repo.components {
        out.depends_on = depends
            .get(&out.component.name)
            .cloned()
            .unwrap_or_default();
    }
    missing_envs(&repo, findings);
    repo
}

/// The layers of one component.
fn layer(c: Component, repo: &mut Repo, findings: &mut Vec<Finding>) -> ComponentOut {
    let all: Vec<&Value> = c.releases.iter().map(|p| &p.release.values).collect();
    let mut varz = common(&all).unwrap_or_else(|| json!({}));
    if !varz.is_object() {
        varz = json!({});
    }
    let mut rest: Vec<Value> = all
        .iter()
        .map(|v| subtract(v, Some(&varz)).unwrap_or_else(|| json!({})))
        .collect();
    // What every tenant of an environment (two or more) agrees on.
    let envs: BTreeSet<&str> = c.releases.iter().map(|p| p.env.as_str()).collect();
    for env in envs {
        let idx: Vec<usize> = (0..c.releases.len())
            .filter(|i| c.releases[*i].env == env)
            .collect();
        if idx.len() < 2 {
            continue;
        }
        let shared = common(&idx.iter().map(|i| &rest[*i]).collect::<Vec<_>>());
        if let Some(shared) = shared.filter(|s| !super::values::is_empty(s)) {
            for i in &idx {
                rest[*i] = subtract(&rest[*i], Some(&shared)).unwrap_or_else(|| json!({}));
            }
            repo.environments
                .entry(env.to_string())
                .or_default()
                .insert(c.name.clone(), shared);
        }
    }
    tenant_layers(&c, &rest, repo);
    kustomize_defaults(&c, &mut varz);
    let secret_values = secret_values(&c, findings);
    if !c.skip_crds() {
        for p in c.releases.iter().filter(|p| p.release.skip_crds) {
            findings.push(Finding {
                at: p.release.origin.clone(),
                field: "crds".to_string(),
                message: format!("skips the chart's CRDs, but other releases of `{}` install them: component.yaml keeps `crds: Create` (CRDs absent from the cluster are created, never changed)", c.name),
            });
        }
    }
    ComponentOut {
        component: c,
        varz,
        secret_values,
        depends_on: Vec::new(),
    }
}

/// Each tenant's values (what its environments agree on) and overrides (the rest).
fn tenant_layers(c: &Component, rest: &[Value], repo: &mut Repo) {
    let mut by_tenant: BTreeMap<&str, Vec<(&Placed, &Value)>> = BTreeMap::new();
    for (p, v) in c.releases.iter().zip(rest) {
        by_tenant.entry(p.tenant.as_str()).or_default().push((p, v));
    }
    for (tenant, list) in by_tenant {
        let values: Vec<&Value> = list.iter().map(|(_, v)| *v).collect();
        let shared = if list.len() == 1 {
            Some(values[0].clone())
        } else {
            common(&values)
        };
        let shared = shared.filter(Value::is_object).unwrap_or_else(|| json!({}));
        let t = repo.tenants.entry(tenant.to_string()).or_default();
        t.components.insert(c.name.clone(), shared.clone());
        for (p, v) in list.iter().filter(|_| values.len() > 1) {
            if let Some(own) = subtract(v, Some(&shared)) {
                t.overrides
                    .entry(p.env.clone())
                    .or_default()
                    .insert(c.name.clone(), own);
            }
        }
    }
}

/// Every value a kustomize setting names is defined in varz.yaml (null: unset, the
/// kustomization's own), so a tenant may set it.
fn kustomize_defaults(c: &Component, varz: &mut Value) {
    let mut paths: Vec<String> = Vec::new();
    for image in c.images() {
        let key = super::kustomize::image_key(&image.name);
        for (field, set) in [
            ("newName", &image.new_name),
            ("newTag", &image.new_tag),
            ("digest", &image.digest),
        ] {
            if set.is_some() {
                paths.push(format!("images.{key}.{field}"));
            }
        }
    }
    paths.extend(
        c.names(|r| &r.replicas)
            .into_iter()
            .map(|n| format!("replicas.{n}")),
    );
    paths.extend(
        c.names(|r| &r.vars)
            .into_iter()
            .map(|v| format!("vars.{v}")),
    );
    for path in paths {
        if get_path(varz, &path).is_none() {
            set_path(varz, &path, Value::Null);
        }
    }
}

/// `secretValues` of a component, and the report's lines saying where each secret goes.
fn secret_values(c: &Component, findings: &mut Vec<Finding>) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    let refs = c.secrets();
    let mut told: BTreeSet<(&str, &str)> = BTreeSet::new();
    for (tenant, s) in &refs {
        let key = camel(&[&c.name, &s.path]);
        out.insert(s.path.clone(), format!("tenant.{key}"));
        // One line per tenant and value: a tenant's SOPS file serves all its environments.
        if !told.insert((tenant, s.path.as_str())) {
            continue;
        }
        findings.push(Finding {
            at: s.at.clone(),
            field: s.path.clone(),
            message: format!(
                "from Secret {} key `{}`, which was not copied: put the value into the tenant's SOPS file as `{key}` (`sops set secrets/tenants/{tenant}.sops.yaml '[\"{key}\"]' '\"…\"'`); components/{}/component.yaml `secretValues` reads it",
                s.secret, s.secret_key, c.name
            ),
        });
    }
    for (path, key) in &out {
        for p in &c.releases {
            if told.insert((p.tenant.as_str(), path.as_str())) {
                findings.push(Finding {
                    at: p.release.origin.clone(),
                    field: path.clone(),
                    message: format!("took no Secret for `{path}`, but component `{}` reads `secrets.{key}` for every tenant: add it to secrets/tenants/{}.sops.yaml", c.name, p.tenant),
                });
            }
        }
    }
    out
}

/// `dependsOn` of each component: the components of the releases a release depends on
/// (Flux `dependsOn`), and of the releases in earlier sync waves in the same tenant
/// environment (Argo CD), kept when every tenant running the component runs the other.
fn depends_on(fleet: &Fleet, findings: &mut Vec<Finding>) -> BTreeMap<String, Vec<String>> {
    let component_of: BTreeMap<&str, &str> = fleet
        .components
        .iter()
        .flat_map(|c| {
            c.releases
                .iter()
                .map(|p| (p.release.key.as_str(), c.name.as_str()))
        })
        .collect();
    let tenants_of = |name: &str| -> BTreeSet<&str> {
        fleet
            .components
            .iter()
            .filter(|c| c.name == name)
            .flat_map(|c| c.releases.iter().map(|p| p.tenant.as_str()))
            .collect()
    };
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for c in &fleet.components {
        for p in &c.releases {
            let mut wanted: Vec<(String, String)> = p
                .release
                .depends_on
                .iter()
                .filter_map(|k| match component_of.get(k.as_str()) {
                    Some(d) => Some((d.to_string(), format!("dependsOn {k}"))),
                    None => {
                        findings.push(Finding {
                            at: p.release.origin.clone(),
                            field: "spec.dependsOn".to_string(),
                            message: format!("{k} is not imported: that dependency is not mapped"),
                        });
                        None
                    }
                })
                .collect();
            wanted.extend(earlier_waves(fleet, p));
            for (d, why) in wanted.into_iter().filter(|(d, _)| *d != c.name) {
                if tenants_of(&c.name).is_subset(&tenants_of(&d)) {
                    out.entry(c.name.clone()).or_default().insert(d);
                } else {
                    findings.push(Finding { at: p.release.origin.clone(), field: String::new(), message: format!("{why}: not mapped, as some tenants run `{}` without `{d}`; order them with component.yaml `dependsOn` by hand", c.name) });
                }
            }
        }
    }
    out.into_iter()
        .map(|(k, v)| (k, v.into_iter().collect()))
        .collect()
}

/// The components of the same tenant environment in an earlier Argo CD sync wave.
fn earlier_waves(fleet: &Fleet, p: &Placed) -> Vec<(String, String)> {
    let Some(wave) = p.release.wave else {
        return Vec::new();
    };
    fleet
        .components
        .iter()
        .flat_map(|c| c.releases.iter().map(move |q| (c, q)))
        .filter(|(_, q)| {
            q.tenant == p.tenant && q.env == p.env && q.release.wave.is_some_and(|w| w < wave)
        })
        .map(|(c, q)| {
            (
                c.name.clone(),
                format!(
                    "sync wave {wave} after wave {}",
                    q.release.wave.unwrap_or_default()
                ),
            )
        })
        .collect()
}

/// A tenant's component runs in each of the tenant's environments: say where that is more
/// than the source ran it.
fn missing_envs(repo: &Repo, findings: &mut Vec<Finding>) {
    for out in &repo.components {
        let c = &out.component;
        let mut ran: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for p in &c.releases {
            ran.entry(p.tenant.as_str())
                .or_default()
                .insert(p.env.as_str());
        }
        for (tenant, envs) in ran {
            let Some(t) = repo.tenants.get(tenant) else {
                continue;
            };
            let extra: Vec<&str> = t
                .environments
                .iter()
                .map(String::as_str)
                .filter(|e| !envs.contains(e))
                .collect();
            if !extra.is_empty() {
                findings.push(Finding {
                    at: c.releases[0].release.origin.clone(),
                    field: String::new(),
                    message: format!("tenant `{tenant}` ran `{}` only in {}; fief runs a tenant's components in each of its environments, so it now also runs in {}", c.name, envs.into_iter().collect::<Vec<_>>().join(", "), extra.join(", ")),
                });
            }
        }
    }
}
