//! Per-environment overrides in a tenant file (`spec.overrides.<env>`): what differs in one of
//! the tenant's environments — a component's version or values, the quota, the access lists.
//!
//! In: the deserialized `overrides:` block (its types are the tenant file's, in `tenant.rs`).
//! Out: the tenant's settings for one environment ([`Quota::overlay`], [`Access::overlay`],
//! [`EnvOverride::component`]). Precedence, lowest
//! first: the component's `varz.yaml`, the environment file's `values`, its
//! `components.<c>`, the tenant's `components[].values`, then `overrides.<env>.components.<c>`.
//! A version is the override's, else the tenant's `components[].version`, else
//! component.yaml's; a git `ref` likewise the override's, else the component entry's, else
//! none (the head). Pure.

use super::tenant::{Access, AccessOverride, ComponentOverride, EnvOverride, Quota, TenantSpec};

impl EnvOverride {
    /// The override of the tenant's component `name`, if this environment has one.
    pub fn component(&self, name: &str) -> Option<&ComponentOverride> {
        self.components.get(name)
    }

    /// Whether it changes the tenant's own settings (quota or access), which the baseline and
    /// every template read as `tenant.quota` and `tenant.access`.
    pub fn changes_tenant(&self) -> bool {
        self.quota.is_some() || self.access.is_some()
    }
}

impl Quota {
    /// This quota with the fields `over` sets replaced.
    pub fn overlay(&self, over: &Quota) -> Quota {
        Quota {
            cpu: over.cpu.clone().or_else(|| self.cpu.clone()),
            memory: over.memory.clone().or_else(|| self.memory.clone()),
            pods: over.pods.clone().or_else(|| self.pods.clone()),
            storage: over.storage.clone().or_else(|| self.storage.clone()),
        }
    }
}

impl TenantSpec {
    /// The git ref component `name` renders at in environment `env`: the environment
    /// override's `ref`, else the component entry's, else none (the head).
    pub fn component_ref(&self, name: &str, env: &str) -> Option<&str> {
        let over = self.overrides.get(env).and_then(|o| o.component(name));
        over.and_then(|o| o.git_ref.as_deref()).or_else(|| {
            self.components
                .iter()
                .find(|c| c.name == name)
                .and_then(|c| c.git_ref.as_deref())
        })
    }

    /// Every (component, ref) the tenant pins, in any environment: its component entries'
    /// `ref` and its environment overrides' `ref`.
    pub fn pinned_refs(&self) -> impl Iterator<Item = (&str, &str)> {
        let entries = self
            .components
            .iter()
            .filter_map(|c| Some((c.name.as_str(), c.git_ref.as_deref()?)));
        let overrides = self.overrides.values().flat_map(|o| {
            o.components
                .iter()
                .filter_map(|(name, c)| Some((name.as_str(), c.git_ref.as_deref()?)))
        });
        entries.chain(overrides)
    }

    /// Every admin, operator and viewer of the tenant or of any environment's override,
    /// sorted and once each: the people who may read the tenant's status.
    pub fn status_readers(&self) -> Vec<String> {
        let overlays = self
            .overrides
            .values()
            .filter_map(|o| o.access.as_ref())
            .map(|a| self.access.overlay(a));
        let all: std::collections::BTreeSet<String> = std::iter::once(self.access.clone())
            .chain(overlays)
            .flat_map(|a| a.admins.into_iter().chain(a.operators).chain(a.viewers))
            .collect();
        all.into_iter().collect()
    }
}

impl Access {
    /// These lists with the ones `over` sets replaced.
    pub fn overlay(&self, over: &AccessOverride) -> Access {
        Access {
            admins: over.admins.clone().unwrap_or_else(|| self.admins.clone()),
            operators: over
                .operators
                .clone()
                .unwrap_or_else(|| self.operators.clone()),
            viewers: over.viewers.clone().unwrap_or_else(|| self.viewers.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Quantity;

    #[test]
    fn an_override_replaces_only_the_quota_fields_and_access_lists_it_sets() {
        let base = Quota {
            cpu: Some(Quantity::Text("4".into())),
            memory: Some(Quantity::Text("8Gi".into())),
            ..Quota::default()
        };
        let over = Quota {
            cpu: Some(Quantity::Text("1".into())),
            ..Quota::default()
        };
        let q = base.overlay(&over);
        assert_eq!(q.cpu, Some(Quantity::Text("1".into())));
        assert_eq!(q.memory, Some(Quantity::Text("8Gi".into())));
        let access = Access {
            admins: vec!["alice".into()],
            viewers: vec!["bob".into()],
            ..Access::default()
        };
        let a = access.overlay(&AccessOverride {
            viewers: Some(vec![]),
            ..AccessOverride::default()
        });
        assert_eq!(a.admins, vec!["alice".to_string()]);
        assert!(a.viewers.is_empty());
    }
}
