//! Live objects' metadata: a paged metadata-only LIST of a kind, and whether a live object is
//! still the one fief last applied.
//!
//! In: a resource, a label selector, a recorded [`Entry`]. Out: each listed object's identity
//! and the metadata fief compares ([`ItemMeta`]), and the comparison
//! ([`unchanged_since_applied`]). Reads only.

use kube::api::{Api, DynamicObject, ListParams};
use serde::Deserialize;
use serde_json::Value;

use crate::{FIELD_MANAGER, Resource, Resources};
use fief_core::inventory::{AppliedVersion, Entry};
use fief_core::objects::ObjectId;

/// Kinds read at once.
pub(super) const KINDS_AT_ONCE: usize = 6;

/// Whether a live object (its metadata) is still the one fief last applied, as far as the
/// fields fief sets go: same uid, and either the same resourceVersion (no write at all) or
/// fief's own `managedFields` entry unchanged (writes since touched none of fief's fields,
/// e.g. a controller's status updates). `managed` gives the live object's
/// [`fief_core::plan::managed_fingerprint`]; it is asked for only
/// when the resourceVersion moved.
pub(super) fn unchanged_since_applied(
    entry: &Entry,
    resource_version: &str,
    uid: &str,
    managed: impl FnOnce() -> String,
) -> bool {
    let managed = if entry.resource_version == resource_version {
        String::new()
    } else {
        managed()
    };
    entry.applied_version().still(&AppliedVersion {
        uid: uid.to_string(),
        resource_version: resource_version.to_string(),
        managed,
    })
}

/// Whether a `managedFields` entry is fief's own apply (what
/// [`fief_core::plan::managed_fingerprint`] reads).
pub(super) fn is_own_apply(f: &Value) -> bool {
    f["manager"] == FIELD_MANAGER
        && f["operation"] == "Apply"
        && f["subresource"].as_str().unwrap_or_default().is_empty()
}

/// One page of a metadata-only LIST, as far as [`each_metadata`] reads it.
#[derive(Deserialize)]
struct MetaPage {
    #[serde(default)]
    metadata: PageMeta,
    /// `null` (not `[]`) in an empty `PartialObjectMetadataList`: every object of the kind
    /// is gone.
    #[serde(default, deserialize_with = "null_as_empty")]
    items: Vec<MetaItem>,
}

/// A list that the API server may write as `null`.
fn null_as_empty<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

#[derive(Deserialize, Default)]
struct PageMeta {
    #[serde(rename = "continue", default)]
    continue_: Option<String>,
}

#[derive(Deserialize)]
struct MetaItem {
    metadata: ItemMeta,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ItemMeta {
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    pub(super) resource_version: String,
    #[serde(default)]
    pub(super) uid: String,
    #[serde(default)]
    pub(super) managed_fields: Value,
}

/// Page through the metadata-only LIST of `resource` where `selector` (`page` objects a
/// page), calling `each` with every object's id and metadata; no page is kept.
pub(super) async fn each_metadata(
    resources: &Resources,
    resource: &Resource,
    selector: &str,
    page: u32,
    mut each: impl FnMut(ObjectId, ItemMeta),
) -> Result<(), kube::Error> {
    let api: Api<DynamicObject> = Api::all_with(resources.client().clone(), &resource.api);
    let mut token: Option<String> = None;
    loop {
        let mut params = ListParams::default().labels(selector).limit(page);
        if let Some(t) = &token {
            params = params.continue_token(t);
        }
        // Read into a lean shape: only the metadata this needs is kept.
        let request = kube::core::Request::new(api.resource_url())
            .list_metadata(&params)
            .map_err(kube::Error::BuildRequest)?;
        let page: MetaPage = resources.client().request(request).await?;
        for item in page.items {
            let mut m = item.metadata;
            let id = ObjectId {
                group: resource.api.group.clone(),
                kind: resource.api.kind.clone(),
                namespace: std::mem::take(&mut m.namespace),
                name: std::mem::take(&mut m.name),
            };
            each(id, m);
        }
        match page.metadata.continue_ {
            Some(t) if !t.is_empty() => token = Some(t),
            _ => return Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_metadata_list_reads_as_no_items() {
        // What the API server answers when every object of a kind is gone.
        let empty = r#"{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"226"},"items":null}"#;
        let page: MetaPage = serde_json::from_str(empty).expect("null items");
        assert!(page.items.is_empty());
        let page: MetaPage = serde_json::from_str(r#"{"metadata":{}}"#).expect("no items");
        assert!(page.items.is_empty());
    }
}
