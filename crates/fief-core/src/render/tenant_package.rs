//! The emitter's `helm` and `kustomize` components: values (with the secrets the component
//! maps into them), `.Capabilities` from fief.yaml, the render through the installed package
//! renderer, and the chart CRDs the tenant brings.
//!
//! In: the component, its layered values and the environment. Out: the tenant's objects and
//! chart CRDs, or diagnostics. Pure.

use serde_json::Value;

use super::super::package::{Capabilities, Package};
use super::super::package_emit::{Target, render_package};
use super::super::secret_values;
use super::super::state::keep;
use super::Emitter;
use crate::model::{Component, TenantState};

impl Emitter<'_, '_> {
    /// Render a `helm` or `kustomize` component for one environment; `dir` is the
    /// component's folder (its pinned copy for a pinned tenant).
    pub(super) fn emit_package(
        &mut self,
        package: &Package,
        component: &Component,
        dir: &str,
        mut vals: Value,
        env: &str,
    ) {
        let refused = secret_values::set(
            &self.repo.snapshot,
            dir,
            &component.meta.secret_values,
            &secret_values::Secrets {
                tenant: &self.out.tenant,
                context: &self.secrets_ctx,
            },
            &mut vals,
        );
        if !refused.is_empty() {
            self.errors.extend(refused);
            return;
        }
        let namespace = self.out.namespaces.get(env).cloned().unwrap_or_default();
        // The config parsed (the tenant resolved only then); fief.yaml's settings.
        let capabilities = match &self.repo.config {
            Ok(config) => Capabilities {
                kube_version: config.kubernetes_version.as_deref(),
                api_versions: &config.api_versions,
            },
            Err(_) => Capabilities::default(),
        };
        let target = Target {
            component: &component.name,
            env,
            namespace: &namespace,
            values: &vals,
            capabilities,
            kustomize: &component.meta.kustomize,
            crds: component.meta.crds,
        };
        let out = render_package(self.renderer, &self.repo.snapshot, package, &target);
        self.errors.extend(out.errors);
        keep(
            self.out,
            self.tenant,
            &self.applyset,
            &component.name,
            out.objects,
        );
        // A tenant that keeps no workloads (archived, purged) creates no CRDs for them.
        if matches!(
            self.tenant.spec.state,
            TenantState::Active | TenantState::Frozen
        ) {
            for crd in out.crds {
                if !self.out.chart_crds.iter().any(|c| c.id == crd.id) {
                    self.out.chart_crds.push(crd);
                }
            }
        }
    }
}
