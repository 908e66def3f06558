//! The cross-tenant index: what the checks across tenants read of every tenant file (its
//! namespaces and the host suffixes it claims), built once per repo.
//!
//! In: a repo's fief.yaml and tenant files; optionally the previous repo's index. Out: per
//! tenant its namespaces and claims, the owners of each namespace and the claims of each host
//! suffix (keyed by its labels in reverse, so the suffixes above and below one are a few
//! lookups and one key range, not a pass over every tenant). The checks
//! ([`crate::validate::check_namespace_collisions`],
//! [`crate::validate::tenancy::check_host_suffixes`]) then cost the renders they judge, not a
//! pass over every tenant file per call: the agent checks a chunk of renders at a time, and a
//! commit that changes one tenant file updates that tenant's entries only. The index is a
//! base in sorted vectors, built from every tenant at once (compact: a few words per claim),
//! and the tenants changed since in persistent maps, so the previous index (under the same
//! fief.yaml) is copied for nothing and the changed tenants replaced in it (see [`Across`]).
//! The [`Repo`] it indexes keeps it ([`Repo::across`]), so it is part of the model, read by
//! the checks.

use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::{Arc, OnceLock};

use super::{Config, Parsed, Repo, Tenant, Tenants, namespaces};

/// What one tenant file claims.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Claims {
    /// Its (environment, namespace) pairs, sorted by environment (a vector: most tenants
    /// have one or two, which a map's node would hold in many times the bytes).
    pub namespaces: Vec<(String, String)>,
    /// The host suffixes it claims, in order: the policy's `{tenant}` patterns, then its
    /// `spec.hostSuffixes` (`explicit`).
    pub suffixes: Vec<Suffix>,
}

/// One host suffix a tenant claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suffix {
    /// The suffix, expanded and lower-cased.
    pub suffix: String,
    /// From `spec.hostSuffixes` (true) or a `{tenant}` pattern of `policy.ingressHostSuffixes`.
    pub explicit: bool,
}

#[path = "across_frozen.rs"]
mod frozen;

/// The index of one repo (see the module docs). Cloning is O(1). The checks read it through
/// [`Across::claims`], [`Across::owners`] and [`Across::overlapping`].
///
/// Two parts: a base built once from every tenant, in sorted vectors ([`Across::frozen`], a
/// few words per claim), and the tenants changed since, in persistent maps (a commit copies
/// them for nothing and replaces its changed tenants). A changed tenant of the base is
/// *shadowed*: its base entries no longer count, and the maps hold what it claims now (if its
/// file still parses). When the changed tenants outnumber an eighth of the base and 64
/// more, the next update builds a new base from both parts, so the maps stay small and an
/// update costs its changed tenants (and, once in that many updates, the fleet).
#[derive(Debug, Default, Clone)]
pub struct Across {
    /// Per tenant changed since the base was built (every tenant, without a base), whose
    /// file parses: what it claims.
    tenants: imbl::OrdMap<String, Arc<Claims>>,
    /// Per namespace: the tenants of `tenants` that would own it, in tenant order.
    owners: imbl::OrdMap<String, Vec<String>>,
    /// Per host suffix, keyed by [`label_key`]: its claims among `tenants` as (tenant, index
    /// in that tenant's [`Claims::suffixes`]), in that order.
    suffixes: imbl::OrdMap<String, Vec<(String, usize)>>,
    /// The tenants of the base whose base entries no longer count (changed since it was
    /// built).
    shadowed: imbl::OrdSet<String>,
    /// The base: every tenant's claims when it was built.
    frozen: Option<Arc<frozen::Frozen>>,
}

impl Across {
    /// The index of the claims of every tenant (name, claims; sorted by name), as a base
    /// with no changed tenants.
    pub fn frozen(tenants: Vec<(String, Claims)>) -> Across {
        Across {
            frozen: Some(Arc::new(frozen::Frozen::new(tenants))),
            ..Across::default()
        }
    }

    /// Whether the base's entries of `tenant` count (it has not changed since).
    fn in_base(&self, tenant: &str) -> bool {
        !self.shadowed.contains(tenant)
    }

    /// What `tenant` claims (`None`: its file or fief.yaml does not parse).
    pub fn claims(&self, tenant: &str) -> Option<&Claims> {
        if let Some(c) = self.tenants.get(tenant) {
            return Some(c);
        }
        let frozen = self.frozen.as_ref().filter(|_| self.in_base(tenant))?;
        frozen.claims(tenant)
    }

    /// The tenants that would own namespace `ns`, in tenant order.
    pub fn owners(&self, ns: &str) -> Vec<&str> {
        let mut out: Vec<&str> = match &self.frozen {
            Some(f) => f
                .owners(ns)
                .into_iter()
                .filter(|t| self.in_base(t))
                .collect(),
            None => Vec::new(),
        };
        if let Some(o) = self.owners.get(ns) {
            out.extend(o.iter().map(String::as_str));
            out.sort_unstable();
        }
        out
    }

    /// Every tenant with claims and its claims, in tenant order.
    pub fn claimed(&self) -> Box<dyn Iterator<Item = (&str, &Claims)> + '_> {
        let changed = self.tenants.iter().map(|(t, c)| (t.as_str(), &**c));
        let Some(f) = &self.frozen else {
            return Box::new(changed);
        };
        let mut all: Vec<(&str, &Claims)> = f.tenants().filter(|(t, _)| self.in_base(t)).collect();
        all.extend(changed);
        all.sort_unstable_by(|a, b| a.0.cmp(b.0));
        Box::new(all.into_iter())
    }

    /// The index of `tenants` under `config`.
    pub fn build(config: &Parsed<Config>, tenants: &Tenants) -> Across {
        Across::reusing(config, tenants, None)
    }

    /// The index of `tenants` under `config`: with `prev`, the index of the previous repo
    /// (under the same fief.yaml) with the entries of the tenants named `changed` (their files
    /// changed) replaced; the cost is the changed tenants', not the fleet's (but for the
    /// update that builds a new base, see [`Across`]).
    pub fn reusing(
        config: &Parsed<Config>,
        tenants: &Tenants,
        prev: Option<(&Across, &BTreeSet<String>)>,
    ) -> Across {
        let Ok(config) = config else {
            return Across::default();
        };
        let Some((prev, changed)) = prev else {
            let all = tenants
                .iter()
                .filter_map(|(name, t)| {
                    Some((name.clone(), claims(config, name, t.as_ref().ok()?)))
                })
                .collect();
            return Across::frozen(all);
        };
        let mut out = prev.clone();
        for name in changed {
            out.remove(name);
            if out
                .frozen
                .as_ref()
                .is_some_and(|f| f.claims(name).is_some())
            {
                out.shadowed.insert(name.clone());
            }
            if let Some(Ok(tenant)) = tenants.get(name) {
                out.add(name, Arc::new(claims(config, name, tenant)));
            }
        }
        let base = out.frozen.as_ref().map_or(0, |f| f.len());
        if out.tenants.len() + out.shadowed.len() > base / 8 + 64 {
            return out.rebased();
        }
        out
    }

    /// The same index as one base ([`Across::frozen`]).
    fn rebased(&self) -> Across {
        let all = self
            .claimed()
            .map(|(t, c)| (t.to_string(), c.clone()))
            .collect();
        Across::frozen(all)
    }

    /// Add `name`'s claims to the changed tenants (not in the index before).
    pub(super) fn add(&mut self, name: &str, claims: Arc<Claims>) {
        for (_, ns) in &claims.namespaces {
            let owners = self.owners.entry(ns.clone()).or_default();
            if let Err(at) = owners.binary_search_by(|o| o.as_str().cmp(name)) {
                owners.insert(at, name.to_string());
            }
        }
        for (index, s) in claims.suffixes.iter().enumerate() {
            let claim = (name.to_string(), index);
            let entry = self.suffixes.entry(label_key(&s.suffix)).or_default();
            if let Err(at) = entry.binary_search(&claim) {
                entry.insert(at, claim);
            }
        }
        self.tenants.insert(name.to_string(), claims);
    }

    /// Remove `name`'s claims from the changed tenants.
    fn remove(&mut self, name: &str) {
        let Some(old) = self.tenants.remove(name) else {
            return;
        };
        for (_, ns) in &old.namespaces {
            if let Some(owners) = self.owners.get_mut(ns) {
                owners.retain(|o| o != name);
                if owners.is_empty() {
                    self.owners.remove(ns);
                }
            }
        }
        for s in &old.suffixes {
            let key = label_key(&s.suffix);
            if let Some(claims) = self.suffixes.get_mut(&key) {
                claims.retain(|(t, _)| t != name);
                if claims.is_empty() {
                    self.suffixes.remove(&key);
                }
            }
        }
    }

    /// The claims (tenant, index in its [`Claims::suffixes`]) of every suffix that overlaps
    /// `suffix`: equal to it, or one under the other on whole labels (`x.a.example.com` and
    /// `example.com` both overlap `a.example.com`; `ba.example.com` does not). Sorted by
    /// tenant then index; the tenant's own claims included.
    pub fn overlapping(&self, suffix: &str) -> Vec<(&str, usize)> {
        let mut out: Vec<(&str, usize)> = match &self.frozen {
            Some(f) => f
                .overlapping(suffix)
                .into_iter()
                .filter(|(t, _)| self.in_base(t))
                .collect(),
            None => Vec::new(),
        };
        if self.suffixes.is_empty() {
            return out;
        }
        let key = label_key(suffix);
        // Above it (its parents) and equal: each prefix of the reversed key ending at a label.
        let parents = key.match_indices('.').map(|(at, _)| &key[..at]);
        let above = parents
            .chain([key.as_str()])
            .filter_map(|k| self.suffixes.get(k));
        // Under it: the keys that start with its key and a dot, one range of the sorted map.
        let below = format!("{key}.");
        let range = (Bound::Included(below.as_str()), Bound::Unbounded);
        let under = self
            .suffixes
            .range::<_, str>(range)
            .take_while(|(k, _)| k.starts_with(&below))
            .map(|(_, claims)| claims);
        out.extend(above.chain(under).flatten().map(|(t, i)| (t.as_str(), *i)));
        out.sort_unstable();
        out
    }
}

/// A host suffix's labels in reverse order, joined by dots (`a.example.com` →
/// `com.example.a`): a suffix is under another exactly when its key starts with the other's
/// key and a dot, so the suffixes under one sit in one key range.
pub fn label_key(suffix: &str) -> String {
    suffix.rsplit('.').collect::<Vec<_>>().join(".")
}

/// The index a repo loaded from `prev` (under the same fief.yaml, with the tenant files named
/// in the set changed) starts with: carried over, changed tenants replaced, when `prev` built
/// one; else empty (built on first use).
pub fn carried(
    prev: Option<(&Repo, &BTreeSet<String>)>,
    config: &Parsed<Config>,
    tenants: &Tenants,
) -> OnceLock<Arc<Across>> {
    let out = OnceLock::new();
    if let Some((prev, changed)) = prev
        && let Some(index) = prev.across.get()
    {
        let index = Across::reusing(config, tenants, Some((index, changed)));
        let _ = out.set(Arc::new(index));
    }
    out
}

pub(super) fn claims(config: &Config, name: &str, tenant: &Tenant) -> Claims {
    let mut suffixes = Vec::new();
    for pattern in &config.policy.ingress_host_suffixes {
        if pattern.contains("{tenant}") {
            suffixes.push(Suffix {
                suffix: expand(pattern, name, &config.base_domain),
                explicit: false,
            });
        }
    }
    for s in &tenant.spec.host_suffixes {
        suffixes.push(Suffix {
            suffix: expand(s, name, &config.base_domain),
            explicit: true,
        });
    }
    Claims {
        namespaces: namespaces(config, tenant).into_iter().collect(),
        suffixes,
    }
}

fn expand(pattern: &str, tenant: &str, base_domain: &str) -> String {
    pattern
        .replace("{tenant}", tenant)
        .replace("{baseDomain}", base_domain)
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Repo;
    use crate::snapshot::Snapshot;

    fn repo(files: &[(&str, &str)]) -> Repo {
        let files = files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect::<Vec<_>>();
        Repo::load(Arc::new(Snapshot::from_files(files)))
    }

    fn tenant(name: &str, envs: &str) -> (String, String) {
        (
            format!("tenants/{name}.yaml"),
            format!(
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  environments: [{envs}]\n"
            ),
        )
    }

    #[test]
    fn an_unchanged_tenant_keeps_its_entry_and_a_changed_one_is_rebuilt() {
        let (a, b) = (tenant("a", "prod"), tenant("b", "prod"));
        let files = vec![
            ("fief.yaml", "baseDomain: example.com\n"),
            (a.0.as_str(), a.1.as_str()),
            (b.0.as_str(), b.1.as_str()),
        ];
        let first = repo(&files);
        let first_index = Across::build(&first.config, &first.tenants);
        let b2 = tenant("b", "prod, dev");
        let mut changed = files.clone();
        changed[2] = (b2.0.as_str(), b2.1.as_str());
        let changed_paths = [b2.0.clone()].into_iter().collect();
        let (second, _) = Repo::load_reusing(
            Arc::new(Snapshot::from_files(
                changed
                    .iter()
                    .map(|(p, t)| (p.to_string(), t.to_string()))
                    .collect::<Vec<_>>(),
            )),
            &first,
            &changed_paths,
        );
        let index = Across::reusing(
            &second.config,
            &second.tenants,
            Some((&first_index, &["b".to_string()].into_iter().collect())),
        );
        let same = |x: &Across, y: &Across, t: &str| match (x.claims(t), y.claims(t)) {
            (Some(x), Some(y)) => std::ptr::eq(x, y),
            _ => false,
        };
        assert!(
            same(&index, &first_index, "a"),
            "a is read from the same base"
        );
        assert!(!same(&index, &first_index, "b"));
        assert_eq!(index.claims("b").map(|c| c.namespaces.len()), Some(2));
        assert_eq!(index.owners("a-prod"), ["a"]);
        assert_eq!(index.owners("b-dev"), ["b"]);
        assert_eq!(
            index.owners("b-prod"),
            ["b"],
            "b's base entry no longer counts"
        );
        assert_eq!((index.tenants.len(), index.shadowed.len()), (1, 1));
        // Through the loader: a repo read from one that built its index starts with one.
        let (third, _) = Repo::load_reusing(second.snapshot.clone(), &first, &changed_paths);
        assert!(third.across.get().is_none(), "first built no index yet");
        let built = first.across();
        let (fourth, _) = Repo::load_reusing(second.snapshot.clone(), &first, &changed_paths);
        let carried = fourth.across.get().expect("carried over");
        assert!(same(carried, built, "a"));
    }

    /// Claims of `suffixes`, all explicit.
    fn claiming(suffixes: &[&str]) -> Arc<Claims> {
        Arc::new(Claims {
            namespaces: Vec::new(),
            suffixes: suffixes
                .iter()
                .map(|s| Suffix {
                    suffix: s.to_string(),
                    explicit: true,
                })
                .collect(),
        })
    }

    #[test]
    fn overlapping_finds_exactly_the_equal_parent_and_child_suffixes() {
        // Suffixes over a few labels (including empty ones), so that many are equal, parents
        // or children of others, or end with another without being under it.
        let labels = ["a", "b", "ab", "ba", ""];
        let mut seed: u64 = 7;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as usize) % n
        };
        let mut index = Across::default();
        let mut claimed = Vec::new();
        let mut all: Vec<(String, usize, String)> = Vec::new();
        for t in 0..40 {
            let tenant = format!("t{t:02}");
            let suffixes: Vec<String> = (0..next(3))
                .map(|_| {
                    let depth = 1 + next(4);
                    (0..depth)
                        .map(|_| labels[next(labels.len())])
                        .collect::<Vec<_>>()
                        .join(".")
                })
                .collect();
            for (i, s) in suffixes.iter().enumerate() {
                all.push((tenant.clone(), i, s.clone()));
            }
            let refs: Vec<&str> = suffixes.iter().map(String::as_str).collect();
            index.add(&tenant, claiming(&refs));
            claimed.push((
                tenant.clone(),
                Arc::into_inner(claiming(&refs)).expect("one owner"),
            ));
        }
        let frozen = Across::frozen(claimed);
        let under = |x: &str, y: &str| x.strip_suffix(y).is_some_and(|p| p.ends_with('.'));
        let mut probes: Vec<&str> = all.iter().map(|(_, _, s)| s.as_str()).collect();
        probes.extend(["", "a", "b.a", "x", "a.b.ab.ba"]);
        for probe in probes {
            let expected: Vec<(&str, usize)> = all
                .iter()
                .filter(|(_, _, s)| s == probe || under(s, probe) || under(probe, s))
                .map(|(t, i, _)| (t.as_str(), *i))
                .collect();
            assert_eq!(index.overlapping(probe), expected, "probe `{probe}`");
            assert_eq!(
                frozen.overlapping(probe),
                expected,
                "frozen, probe `{probe}`"
            );
        }
    }

    #[test]
    fn replacing_a_tenant_updates_its_suffix_claims_only() {
        let mut index = Across::default();
        index.add("a", claiming(&["a.io", "shop.a.io"]));
        index.add("b", claiming(&["a.io"]));
        let before = index.clone();
        index.remove("a");
        index.add("a", claiming(&["c.io"]));
        assert_eq!(index.overlapping("a.io"), [("b", 0)]);
        assert_eq!(index.overlapping("io"), [("a", 0), ("b", 0)]);
        assert!(index.suffixes.get(&label_key("shop.a.io")).is_none());
        assert_eq!(before.overlapping("a.io"), [("a", 0), ("a", 1), ("b", 0)]);
        assert_eq!(label_key("shop.a.io"), "io.a.shop");
    }
}

#[cfg(test)]
#[path = "across_tests.rs"]
mod updates;
