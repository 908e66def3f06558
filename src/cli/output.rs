//! Output: rendered objects as a multi-document YAML stream, one JSON `v1/List`, or one file per object
//! (each tenant's chart `crds/` CRDs first, then its objects).
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
        // A chart's crds/ CRDs first, as `helm template --include-crds` prints them.
        for o in r.chart_crds.iter().chain(&r.objects) {
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

/// One JSON `v1/List` of the objects of the tenants that rendered cleanly (`render -o json`),
/// written a batch of tenants at a time: [`JsonList::items`] for each batch, then
/// [`JsonList::end`]. The text is `serde_json`'s pretty form of the whole list (keys sorted:
/// `apiVersion`, `items`, `kind`), without holding every item at once.
#[derive(Debug, Default)]
pub struct JsonList {
    /// Items written so far.
    written: usize,
}

/// The list's text up to its first item.
const JSON_HEAD: &str = "{\n  \"apiVersion\": \"v1\",\n  \"items\": [\n";

impl JsonList {
    /// The text of the objects of `renders` (Secrets redacted unless `show_secrets`), after
    /// the items written before.
    pub fn items(
        &mut self,
        renders: &[TenantRender],
        show_secrets: bool,
    ) -> Result<String, String> {
        let mut out = String::new();
        for o in renders
            .iter()
            .filter(|r| r.is_ok())
            .flat_map(|r| r.chart_crds.iter().chain(&r.objects))
        {
            let item = if !show_secrets && is_secret(&o.object) {
                std::borrow::Cow::Owned(redact(&o.object))
            } else {
                std::borrow::Cow::Borrowed(&o.object)
            };
            let text = serde_json::to_string_pretty(&*item).map_err(|e| e.to_string())?;
            out.push_str(if self.written == 0 { JSON_HEAD } else { ",\n" });
            // Strings are escaped, so every line break is the pretty form's: indent each line
            // to the item's depth.
            for (i, line) in text.lines().enumerate() {
                if i > 0 {
                    out.push('\n');
                }
                out.push_str("    ");
                out.push_str(line);
            }
            self.written += 1;
        }
        Ok(out)
    }

    /// The text that closes the list.
    pub fn end(&self) -> &'static str {
        if self.written == 0 {
            "{\n  \"apiVersion\": \"v1\",\n  \"items\": [],\n  \"kind\": \"List\"\n}\n"
        } else {
            "\n  ],\n  \"kind\": \"List\"\n}\n"
        }
    }
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// [`JsonList`] over `batches`, as one text.
    fn streamed(batches: &[&[TenantRender]], show_secrets: bool) -> String {
        let mut list = JsonList::default();
        let mut out = String::new();
        for b in batches {
            out.push_str(&list.items(b, show_secrets).expect("serialize"));
        }
        out + list.end()
    }

    /// The whole list through `serde_json`'s pretty printer at once.
    fn whole(renders: &[TenantRender], show_secrets: bool) -> String {
        let items: Vec<serde_json::Value> = renders
            .iter()
            .filter(|r| r.is_ok())
            .flat_map(|r| &r.objects)
            .map(|o| match !show_secrets && is_secret(&o.object) {
                true => redact(&o.object),
                false => o.object.clone(),
            })
            .collect();
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
        serde_json::to_string_pretty(&list).expect("serialize") + "\n"
    }

    #[test]
    fn the_json_list_written_a_tenant_at_a_time_is_the_whole_list_pretty_printed() {
        const TEMPLATE: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  a: \"x\\ny\"\n  b: []\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: app\nstringData:\n  password: hunter2\n";
        let tenant = |name: &str| {
            format!(
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  components:\n    - name: app\n"
            )
        };
        let files = [
            (
                "components/app/templates/app.yaml".to_string(),
                TEMPLATE.to_string(),
            ),
            ("tenants/alpha.yaml".to_string(), tenant("alpha")),
            ("tenants/beta.yaml".to_string(), tenant("beta")),
        ];
        let snapshot = crate::core::snapshot::Snapshot::from_files(
            files.iter().map(|(p, t)| (p.as_str(), t.as_str())),
        );
        let repo = crate::core::model::Repo::load(Arc::new(snapshot));
        let renders = crate::core::pipeline::render_all(&repo, &[]);
        assert!(renders.len() > 1 && renders.iter().any(|r| !r.objects.is_empty()));
        let batches: Vec<&[TenantRender]> = renders.chunks(1).collect();
        for show_secrets in [false, true] {
            assert_eq!(
                streamed(&batches, show_secrets),
                whole(&renders, show_secrets)
            );
        }
        assert_eq!(streamed(&[], false), whole(&[], false));
    }
}
