//! `fief diff --adopt`: one rendered object that no inventory records, compared with what the
//! cluster holds under its name as `fief apply --adopt` compares it.
//!
//! In: a tenant's render and one of its objects. Out: [`Adoptable`] — nothing there (the
//! usual diff follows), an object `--adopt` takes with no change (its field managers), or the
//! diff of one that differs; an [`AdoptionError`] for another fief tenant's object.

use super::ObjectDiff;
use super::text::{to_yaml, unified};
use crate::Resources;
use crate::adoption::{AdoptionError, Examined, examine};
use fief_core::render::{RenderedObject, TenantRender};

/// What `--adopt` would do with one object.
pub(super) enum Adoptable {
    /// No object under that name that another tool made: compared as usual.
    NotFound,
    /// It exists and equals the render: taken with no change (from these field managers).
    Equal(Vec<String>),
    /// It exists and differs: its diff.
    Found(Option<ObjectDiff>),
}

/// Compare `o` with the live object under its name, as `fief apply --adopt` does.
pub(super) async fn adoption_diff(
    resources: &Resources,
    render: &TenantRender,
    o: &RenderedObject,
) -> Result<Adoptable, AdoptionError> {
    let examined = examine(resources, &render.tenant, o).await?;
    let (managers, live, applied) = match examined {
        Examined::Absent | Examined::Own => return Ok(Adoptable::NotFound),
        Examined::OtherTenant(owner) => {
            return Err(AdoptionError::OtherTenant {
                id: o.id.clone(),
                owner,
            });
        }
        Examined::Equal { managers } => return Ok(Adoptable::Equal(managers)),
        Examined::Differs {
            managers,
            live,
            applied,
        } => (managers, live, applied),
    };
    let made_by = if managers.is_empty() {
        String::new()
    } else {
        format!(" (made by {})", managers.join(", "))
    };
    let namespace = crate::adopt::is_namespace(&o.id.group, &o.id.kind);
    let (action, what) = if namespace {
        ("update", "--adopt takes it and sets it as shown")
    } else {
        (
            "adopt",
            "--adopt does not take it (and applies nothing of this tenant); \
             --adopt=force takes it and sets it as shown",
        )
    };
    let text = format!(
        "# {} exists{made_by} and differs from the render: {what}\n{}",
        o.id,
        unified(&to_yaml(&live), &to_yaml(&applied), &o.id)
    );
    Ok(Adoptable::Found(Some(ObjectDiff {
        tenant: render.tenant.clone(),
        id: o.id.clone(),
        action,
        text,
    })))
}
