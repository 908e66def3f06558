//! Schemas checked before anything reaches a cluster.
//!
//! - [`values`]: a component's own `values.schema.json` (JSON Schema) over each tenant's
//!   merged values, before render.
//! - [`k8s`]: rendered objects of built-in Kubernetes kinds against a compact, committed
//!   copy of the Kubernetes API schema (fields and types), after render.
//! - [`strict`]: for a component without a schema, the keys a tenant or an environment sets
//!   must be keys its `varz.yaml` defines.
//! - [`locate`]: the line of a nested key in a YAML file, for their diagnostics.
//!
//! In: the snapshot and rendered or merged values. Out: diagnostics. Pure.

mod builtin;
pub mod k8s;
pub mod locate;
pub mod strict;
pub mod values;

/// A path of keys and list indexes as written in YAML: `["spec", "containers", "0", "image"]`
/// → `spec.containers[0].image`.
pub(crate) fn dotted(path: &[String]) -> String {
    let mut out = String::new();
    for seg in path {
        if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(seg);
        }
    }
    out
}
