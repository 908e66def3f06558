//! The `git` generator of an ApplicationSet: one element per folder (`directories`) or per
//! file (`files`, its YAML or JSON keys as parameters) of a checkout the user gave with
//! `--checkout URL=DIR`, and the path globs it matches with.
//!
//! In: the generator and the checkouts ([`GitFiles`]). Out: parameter sets and findings.
//! Pure: the checkouts are read through the trait.

use serde_json::{Value, json};

use super::model::{Finding, Object};
use super::values::params;

/// The files of the git repositories the user checked out, for the git generators.
pub trait GitFiles {
    /// Paths (relative to the repository's root, `/`-separated) of the folders (`dirs`) or
    /// files matching `pattern`; `None` when no checkout of `url` was given.
    fn matching(&self, url: &str, pattern: &str, dirs: bool) -> Option<Vec<String>>;
    /// The text of a file of the checkout of `url`.
    fn read(&self, url: &str, path: &str) -> Option<String>;
}

/// The elements of a git generator.
pub fn elements(
    o: &Object,
    at: &str,
    body: &Value,
    git: &dyn GitFiles,
    go: bool,
    findings: &mut Vec<Finding>,
) -> Vec<Value> {
    let url = body["repoURL"].as_str().unwrap_or("");
    let mut out = Vec::new();
    for (field, dirs) in [("directories", true), ("files", false)] {
        let entries = body[field].as_array().into_iter().flatten();
        let (excluded, included): (Vec<&Value>, Vec<&Value>) =
            entries.partition(|e| e["exclude"] == true);
        let mut paths: Vec<String> = Vec::new();
        for entry in included {
            let pattern = entry["path"].as_str().unwrap_or("");
            match git.matching(url, pattern, dirs) {
                Some(found) => paths.extend(found),
                None => {
                    findings.push(o.finding(
                        &format!("{at}.git"),
                        format!("the git generator reads {url}: nothing generated; check it out and pass `--checkout {url}=DIR`"),
                    ));
                    return Vec::new();
                }
            }
        }
        paths.retain(|p| {
            !excluded
                .iter()
                .any(|e| glob(e["path"].as_str().unwrap_or(""), p))
        });
        paths.sort();
        paths.dedup();
        for path in paths {
            if dirs {
                let mut p = params(&path_params(&path, None), go);
                if !go {
                    // fasttemplate's `{{path}}` is the folder, not the mapping of its parts.
                    p["path"] = json!(path);
                }
                out.push(p);
            } else if let Some(element) = file_element(o, at, url, &path, git, go, findings) {
                out.push(element);
            }
        }
    }
    out
}

/// The `path` parameters of a folder (or of the folder of a file named `file`).
fn path_params(dir: &str, file: Option<&str>) -> Value {
    let segments: Vec<&str> = dir.split('/').filter(|s| !s.is_empty()).collect();
    let basename = segments.last().copied().unwrap_or("");
    let mut path = json!({
        "path": dir,
        "basename": basename,
        "basenameNormalized": basename.to_ascii_lowercase().replace(['_', '.'], "-"),
        "segments": segments,
    });
    if let Some(file) = file {
        path["filename"] = json!(file);
        path["filenameNormalized"] = json!(file.to_ascii_lowercase().replace(['_', '.'], "-"));
    }
    // `{{path}}` is the folder itself; `{{path.basename}}` and `{{path[0]}}` its parts.
    let mut element = json!({ "path": path });
    for (i, s) in segments.iter().enumerate() {
        element[format!("path[{i}]")] = json!(s);
    }
    element
}

fn file_element(
    o: &Object,
    at: &str,
    url: &str,
    path: &str,
    git: &dyn GitFiles,
    go: bool,
    findings: &mut Vec<Finding>,
) -> Option<Value> {
    let text = git.read(url, path)?;
    let doc = crate::core::yaml::Document {
        text: &text,
        first_line: 1,
    };
    let Ok(Some(Value::Object(keys))) = crate::core::yaml::parse_value(&doc) else {
        findings.push(o.finding(
            &format!("{at}.git.files"),
            format!("{path} does not hold a YAML mapping: no element"),
        ));
        return None;
    };
    let (dir, file) = path.rsplit_once('/').unwrap_or(("", path));
    let mut element = path_params(dir, Some(file));
    for (k, v) in keys {
        element[k] = v;
    }
    let mut p = params(&element, go);
    if !go {
        // fasttemplate's `{{path}}` is the folder, not the mapping of its parts.
        p["path"] = json!(dir);
    }
    Some(p)
}

/// Whether `path` matches the glob `pattern`: `*` and `?` within one segment, `**` any
/// number of segments.
pub fn glob(pattern: &str, path: &str) -> bool {
    let pat: Vec<&str> = pattern.split('/').filter(|s| !s.is_empty()).collect();
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    glob_segments(&pat, &segs)
}

fn glob_segments(pat: &[&str], segs: &[&str]) -> bool {
    match (pat.split_first(), segs.split_first()) {
        (None, None) => true,
        (Some((&"**", rest)), _) => {
            glob_segments(rest, segs) || (!segs.is_empty() && glob_segments(pat, &segs[1..]))
        }
        (Some((p, prest)), Some((s, srest))) => {
            segment(p.as_bytes(), s.as_bytes()) && glob_segments(prest, srest)
        }
        _ => false,
    }
}

fn segment(p: &[u8], s: &[u8]) -> bool {
    match (p.split_first(), s.split_first()) {
        (None, None) => true,
        (Some((b'*', rest)), _) => segment(rest, s) || (!s.is_empty() && segment(p, &s[1..])),
        (Some((b'?', rest)), Some((_, srest))) => segment(rest, srest),
        (Some((a, rest)), Some((b, srest))) => a == b && segment(rest, srest),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn glob_matches_within_a_segment_and_across_with_double_star() {
        assert!(glob("customers/*", "customers/acme"));
        assert!(!glob("customers/*", "customers/acme/prod"));
        assert!(glob(
            "customers/**/config.json",
            "customers/eu/acme/config.json"
        ));
        assert!(glob("apps/web-?", "apps/web-1"));
    }
}
