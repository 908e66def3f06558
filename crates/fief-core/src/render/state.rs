//! What a tenant's lifecycle state does to its objects: `archived` keeps the baseline and
//! data, `frozen` scales workloads to zero.
//!
//! In: a state and a rendered object. Out: whether to keep it, and the object changed. Pure.

use serde_json::{Value, json};

use super::RenderedObject;
use crate::model::{BASELINE, TenantState};
use crate::objects::ObjectId;

/// Kinds that hold data and survive `archived`.
fn holds_data(id: &ObjectId) -> bool {
    id.group.is_empty()
        && matches!(
            id.kind.as_str(),
            "PersistentVolumeClaim" | "Secret" | "ConfigMap"
        )
}

pub(super) fn keep_for_state(state: TenantState, o: &RenderedObject) -> bool {
    match state {
        TenantState::Active | TenantState::Frozen => true,
        TenantState::Archived => o.component == BASELINE || holds_data(&o.id),
        TenantState::Purged => false,
    }
}

/// `frozen`: workloads at zero replicas, CronJobs suspended.
pub(super) fn freeze(state: TenantState, object: &mut Value, id: &ObjectId) {
    if state != TenantState::Frozen {
        return;
    }
    let field = match (id.group.as_str(), id.kind.as_str()) {
        ("apps", "Deployment" | "StatefulSet") => ("replicas", json!(0)),
        ("batch", "CronJob") => ("suspend", json!(true)),
        _ => return,
    };
    if let Some(map) = object.as_object_mut() {
        let spec = map.entry("spec").or_insert_with(|| json!({}));
        if let Some(spec) = spec.as_object_mut() {
            spec.insert(field.0.to_string(), field.1);
        }
    }
}

/// Label the objects the tenant's state keeps and add them to its output.
pub(super) fn keep(
    out: &mut super::TenantRender,
    tenant: &crate::model::Tenant,
    applyset: &str,
    component: &str,
    objs: Vec<super::RenderedObject>,
) {
    let (name, state) = (&tenant.metadata.name, tenant.spec.state);
    for mut o in objs {
        if keep_for_state(state, &o) {
            crate::objects::add_labels(&mut o.object, name, component, applyset);
            freeze(state, &mut o.object, &o.id);
            out.objects.push(o);
        }
    }
}
