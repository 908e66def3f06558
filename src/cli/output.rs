//! Output: rendered objects as a multi-document YAML stream, one JSON `v1/List`, or one file per object.
//!
//! In: [`TenantRender`]s. Out: text (stdout) and relative paths for `--out`; Secrets' values
//! redacted unless asked otherwise. A redacted Secret carries a comment saying it will not
//! apply (see [`crate::core::redact`]). Pure: the CLI does the writing.

use std::fmt::Write;
use std::path::PathBuf;

use crate::core::redact::{is_secret, redact};

/// The comment above a redacted Secret.
pub const REDACTED_NOTE: &str = "# fief: Secret values redacted; this document is invalid on purpose and will not apply (use --show-secrets for real values)\n";
use crate::core::render::{RenderedObject, TenantRender};

/// One object as a YAML document with a `# Source:` comment, starting with `---`.
pub fn document(tenant: &str, o: &RenderedObject, show_secrets: bool) -> Result<String, String> {
    let (note, body) = if show_secrets || !is_secret(&o.object) {
        ("", crate::core::yaml::value_to_string(&o.object)?)
    } else {
        (
            REDACTED_NOTE,
            crate::core::yaml::value_to_string(&redact(&o.object))?,
        )
    };
    Ok(format!(
        "---\n# Source: {} (tenant {}, env {})\n{note}{}",
        o.source, tenant, o.env, body
    ))
}

/// The whole stream for the tenants that rendered cleanly, as [`document`]s in order. Each
/// thread (one per core) writes a contiguous part of the tenants straight into one buffer.
pub fn stream(renders: &[TenantRender], show_secrets: bool) -> Result<String, String> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(renders.len().max(1));
    let part = renders.len().div_ceil(threads).max(1);
    let parts: Vec<Result<String, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = renders
            .chunks(part)
            .map(|chunk| s.spawn(move || stream_part(chunk, show_secrets)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("the YAML writer failed (a bug)".to_string()))
            })
            .collect()
    });
    let mut parts = parts.into_iter();
    let mut out = parts.next().unwrap_or_else(|| Ok(String::new()))?;
    for p in parts {
        out.push_str(&p?);
    }
    Ok(out)
}

/// [`stream`] of some tenants, into one buffer.
fn stream_part(renders: &[TenantRender], show_secrets: bool) -> Result<String, String> {
    let mut out = String::with_capacity(renders.len() * 16 * 1024);
    for r in renders.iter().filter(|r| r.is_ok()) {
        for o in &r.objects {
            let secret = !show_secrets && is_secret(&o.object);
            // Writing into a String cannot fail.
            let _ = writeln!(
                out,
                "---\n# Source: {} (tenant {}, env {})",
                o.source, r.tenant, o.env
            );
            if secret {
                out.push_str(REDACTED_NOTE);
                crate::core::yaml::write_value(&mut out, &redact(&o.object))?;
            } else {
                crate::core::yaml::write_value(&mut out, &o.object)?;
            }
        }
    }
    Ok(out)
}

/// Every cleanly rendered tenant's objects as one JSON `v1/List` (Secrets redacted unless
/// `show_secrets`; a redacted Secret will not apply, as in the YAML stream).
pub fn json_list(renders: &[TenantRender], show_secrets: bool) -> Result<String, String> {
    let items: Vec<std::borrow::Cow<'_, serde_json::Value>> = renders
        .iter()
        .filter(|r| r.is_ok())
        .flat_map(|r| &r.objects)
        .map(|o| {
            if !show_secrets && is_secret(&o.object) {
                std::borrow::Cow::Owned(redact(&o.object))
            } else {
                std::borrow::Cow::Borrowed(&o.object)
            }
        })
        .collect();
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
    let mut text = serde_json::to_string_pretty(&list).map_err(|e| e.to_string())?;
    text.push('\n');
    Ok(text)
}

/// `<tenant>/<namespace or _cluster>/<kind>.<name>.yaml`.
pub fn out_path(tenant: &str, o: &RenderedObject) -> PathBuf {
    let ns = if o.id.namespace.is_empty() {
        "_cluster"
    } else {
        o.id.namespace.as_str()
    };
    let kind = o.id.kind.to_lowercase();
    PathBuf::from(tenant)
        .join(ns)
        .join(format!("{kind}.{}.yaml", o.id.name))
}
