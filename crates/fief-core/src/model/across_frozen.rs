//! The base of the cross-tenant index, built from every tenant at once and never updated (an
//! [`crate::model::Indexed`] repo's whole index; the agent's until the tenants changed since
//! outgrow it, [`super::Across`]): sorted vectors instead of persistent maps, a few words per
//! claim, so a fleet of 100,000 tenants holds it in a fraction of the bytes.
//!
//! In: every tenant's claims, in tenant order. Out: the same answers as the persistent index
//! ([`super::Across`]): a tenant's claims, a namespace's owners, the claims overlapping a host
//! suffix. Pure.

use super::{Claims, label_key};

/// See the module docs. Tenants are numbered by their place in `names`.
#[derive(Debug, Default)]
pub(super) struct Frozen {
    /// The tenants with claims, sorted.
    names: Vec<Box<str>>,
    /// Their claims, in the same order.
    claims: Vec<Claims>,
    /// (namespace, tenant), sorted.
    owners: Vec<(Box<str>, u32)>,
    /// ([`label_key`] of a suffix, tenant, index in its claims), sorted.
    suffixes: Vec<(Box<str>, u32, u32)>,
}

impl Frozen {
    /// The index of `tenants` (name, claims), sorted by name.
    pub(super) fn new(tenants: Vec<(String, Claims)>) -> Frozen {
        let mut out = Frozen {
            names: Vec::with_capacity(tenants.len()),
            claims: Vec::with_capacity(tenants.len()),
            owners: Vec::with_capacity(tenants.iter().map(|(_, c)| c.namespaces.len()).sum()),
            suffixes: Vec::with_capacity(tenants.iter().map(|(_, c)| c.suffixes.len()).sum()),
        };
        for (i, (name, claims)) in tenants.into_iter().enumerate() {
            let i = i as u32;
            for (_, ns) in &claims.namespaces {
                out.owners.push((ns.as_str().into(), i));
            }
            for (at, s) in claims.suffixes.iter().enumerate() {
                out.suffixes
                    .push((label_key(&s.suffix).into(), i, at as u32));
            }
            out.names.push(name.into());
            out.claims.push(claims);
        }
        out.owners.sort_unstable();
        out.owners.dedup();
        out.owners.shrink_to_fit();
        out.suffixes.sort_unstable();
        out.suffixes.dedup();
        out.suffixes.shrink_to_fit();
        out
    }

    fn find(&self, tenant: &str) -> Option<usize> {
        self.names.binary_search_by(|n| (**n).cmp(tenant)).ok()
    }

    /// What `tenant` claims.
    pub(super) fn claims(&self, tenant: &str) -> Option<&Claims> {
        self.find(tenant).map(|i| &self.claims[i])
    }

    /// The tenants that would own namespace `ns`, in tenant order.
    pub(super) fn owners(&self, ns: &str) -> Vec<&str> {
        let start = self.owners.partition_point(|(n, _)| **n < *ns);
        self.owners[start..]
            .iter()
            .take_while(|(n, _)| **n == *ns)
            .map(|(_, t)| &*self.names[*t as usize])
            .collect()
    }

    /// The claims with exactly the key `key`.
    fn equal(&self, key: &str) -> &[(Box<str>, u32, u32)] {
        let start = self.suffixes.partition_point(|(k, _, _)| **k < *key);
        let len = self.suffixes[start..]
            .iter()
            .take_while(|(k, _, _)| **k == *key)
            .count();
        &self.suffixes[start..start + len]
    }

    /// See [`super::Across::overlapping`].
    pub(super) fn overlapping(&self, suffix: &str) -> Vec<(&str, usize)> {
        let key = label_key(suffix);
        let parents = key.match_indices('.').map(|(at, _)| &key[..at]);
        let mut found: Vec<&(Box<str>, u32, u32)> = parents
            .chain([key.as_str()])
            .flat_map(|k| self.equal(k))
            .collect();
        let below = format!("{key}.");
        let start = self.suffixes.partition_point(|(k, _, _)| **k < *below);
        found.extend(
            self.suffixes[start..]
                .iter()
                .take_while(|(k, _, _)| k.starts_with(&below)),
        );
        let mut out: Vec<(&str, usize)> = found
            .into_iter()
            .map(|(_, t, i)| (&*self.names[*t as usize], *i as usize))
            .collect();
        out.sort_unstable();
        out
    }

    /// How many tenants have claims.
    pub(super) fn len(&self) -> usize {
        self.names.len()
    }

    /// Every tenant with claims, in order.
    pub(super) fn tenants(&self) -> impl Iterator<Item = (&str, &Claims)> {
        self.names.iter().map(|n| &**n).zip(&self.claims)
    }
}
