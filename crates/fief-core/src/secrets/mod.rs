//! Secrets: SOPS-encrypted files (age) in the tenants repo, given to templates as `secrets`.
//!
//! In: the [`Snapshot`] (encrypted files under `secrets/`) and, when fief should decrypt,
//! age [`Keys`] (parsed from text; reading the key file is the CLI's and the agent's job).
//! Out: per tenant the `secrets` template context `{shared: {...}, tenant: {...}}`,
//! decrypted, or with every encrypted value shown as `<encrypted>`, or diagnostics (file,
//! what is wrong, what to do); and [`scrub`], which replaces any plaintext secret in a
//! diagnostic with the key it came from. Pure: no I/O, nothing logged.
//!
//! Layout in the repo:
//! - `secrets/shared.sops.yaml` (or `.sops.json`): every tenant reads it, as `secrets.shared`;
//! - `secrets/tenants/<tenant>.sops.yaml` (or `.sops.json`): only that tenant, as `secrets.tenant`.
//!
//! Decryption happens only while a tenant renders; the shared file is decrypted at most once
//! per loaded repo. A repo that git did not change is not loaded again, so nothing is decrypted.

pub mod sops;
pub mod tree;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};

pub use sops::{Decrypted, ENCRYPTED, SopsError, SopsFile};

use crate::diagnostic::{Diagnostic, Problem};
use crate::snapshot::Snapshot;

/// The directory of secret files.
pub const DIR: &str = "secrets";
/// The shared file's paths (one of them may exist).
pub const SHARED: [&str; 2] = ["secrets/shared.sops.yaml", "secrets/shared.sops.json"];

/// A tenant's own secret file paths (one of them may exist).
pub fn tenant_paths(tenant: &str) -> [String; 2] {
    [
        format!("secrets/tenants/{tenant}.sops.yaml"),
        format!("secrets/tenants/{tenant}.sops.json"),
    ]
}

/// Age identities (X25519) fief decrypts with. Never printed.
#[derive(Clone, Default)]
pub struct Keys(Vec<age::x25519::Identity>);

impl fmt::Debug for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Keys({} age identities)", self.0.len())
    }
}

/// Why a key file cannot be used. Never carries key material.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// A line is not an age X25519 identity.
    #[error(
        "line {line}: not an age identity (expected AGE-SECRET-KEY-1..., as `age-keygen` writes)"
    )]
    BadLine {
        /// 1-based line.
        line: usize,
    },
    /// No identity at all.
    #[error("no age identity in it (expected a line AGE-SECRET-KEY-1...)")]
    Empty,
}

impl Keys {
    /// Parse an age identity file (`age-keygen` output): one `AGE-SECRET-KEY-1...` per line,
    /// `#` comments and blank lines ignored.
    pub fn parse(text: &str) -> Result<Keys, KeyError> {
        let mut keys = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let id = line
                .parse::<age::x25519::Identity>()
                .map_err(|_| KeyError::BadLine { line: i + 1 })?;
            keys.push(id);
        }
        if keys.is_empty() {
            return Err(KeyError::Empty);
        }
        Ok(Keys(keys))
    }

    /// The identities, as age wants them.
    pub fn iter(&self) -> impl Iterator<Item = &dyn age::Identity> {
        self.0.iter().map(|i| i as &dyn age::Identity)
    }

    /// How many identities.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// What rendering does with encrypted values.
#[derive(Debug, Clone, Default)]
pub enum Unlock {
    /// No key was configured: a tenant that reads a secret file fails with a clear error
    /// (never applies placeholders). The default, so a reconciler cannot apply `<encrypted>`.
    #[default]
    Required,
    /// Check structure only; encrypted values render as `<encrypted>` (CLI without a key).
    Redacted,
    /// Decrypt with these identities and verify each file's MAC.
    Keys(Arc<Keys>),
}

type Loaded = Result<Arc<SopsFile>, Diagnostic>;

/// The repo's secret files, parsed (not decrypted), and how to unlock them.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    /// Shared by the repo's copies (an indexed repo makes one per tenant it renders).
    files: Arc<BTreeMap<String, Loaded>>,
    unlock: Unlock,
    shared: Arc<OnceLock<Result<Decrypted, Diagnostic>>>,
}

/// A tenant's `secrets` context and the plaintext leaves to scrub from its diagnostics.
#[derive(Debug, Clone, Default)]
pub struct TenantSecrets {
    /// `{shared: {...}, tenant: {...}}`.
    pub context: Value,
    /// `(secrets.<shared|tenant>.<path>, plaintext)` of every decrypted value.
    pub leaves: Vec<(String, String)>,
}

fn diagnostic(path: &str, e: &SopsError) -> Diagnostic {
    let line = match e {
        SopsError::Parse { line, .. } => *line,
        _ => None,
    };
    Diagnostic::new(
        path,
        line,
        Problem::Secret {
            detail: e.to_string(),
            hint: e.hint(),
        },
    )
}

impl Secrets {
    /// Parse the secret files of the layout; other files under `secrets/` are not read.
    pub fn load(snapshot: &Snapshot) -> Secrets {
        Secrets::load_reusing(snapshot, &Secrets::default(), &BTreeSet::new())
    }

    /// [`Secrets::load`], taking every file not in `changed` from `prev` (parsed, never
    /// decrypted; the unlock setting is not carried over).
    pub fn load_reusing(
        snapshot: &Snapshot,
        prev: &Secrets,
        changed: &BTreeSet<String>,
    ) -> Secrets {
        let mut files = BTreeMap::new();
        for (path, entry) in snapshot.under(DIR) {
            let json = path.ends_with(".sops.json");
            if !(json || path.ends_with(".sops.yaml")) {
                continue;
            }
            if !changed.contains(path)
                && let Some(kept) = prev.files.get(path)
            {
                files.insert(path.clone(), kept.clone());
                continue;
            }
            let loaded = match entry {
                Err(problem) => Err(Diagnostic::new(path.clone(), None, problem.clone())),
                Ok(text) => SopsFile::parse(text, json)
                    .map(Arc::new)
                    .map_err(|e| diagnostic(path, &e)),
            };
            files.insert(path.clone(), loaded);
        }
        Secrets {
            files: Arc::new(files),
            ..Default::default()
        }
    }

    /// Set how encrypted values are treated (drops any cached decryption).
    pub fn set_unlock(&mut self, unlock: Unlock) {
        self.unlock = unlock;
        self.shared = Arc::default();
    }

    /// The parsed SOPS file at `path` (not decrypted), or why it cannot be used; `None` when
    /// the repo has no SOPS file there.
    pub fn file(&self, path: &str) -> Option<Result<&Arc<SopsFile>, &Diagnostic>> {
        self.files.get(path).map(Result::as_ref)
    }

    /// Whether the repo has any secret file.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The secret files a tenant reads (those that exist), shared first.
    pub fn paths_for(&self, tenant: &str) -> Vec<String> {
        let mut out: Vec<String> = SHARED
            .iter()
            .filter(|p| self.files.contains_key(**p))
            .map(|p| p.to_string())
            .collect();
        out.extend(
            tenant_paths(tenant)
                .into_iter()
                .filter(|p| self.files.contains_key(p)),
        );
        out
    }

    fn one(&self, paths: &[String]) -> Result<Option<(&str, &Arc<SopsFile>)>, Vec<Diagnostic>> {
        let found: Vec<(&String, &Loaded)> = paths
            .iter()
            .filter_map(|p| self.files.get_key_value(p))
            .collect();
        match found.as_slice() {
            [] => Ok(None),
            [(p, Ok(f))] => Ok(Some((p.as_str(), f))),
            [(_, Err(d))] => Err(vec![d.clone()]),
            _ => Err(vec![Diagnostic::new(
                paths[1].clone(),
                None,
                Problem::Secret {
                    detail: format!("both {} and {} exist", paths[0], paths[1]),
                    hint: "keep one of the two files",
                },
            )]),
        }
    }

    fn open(&self, path: &str, file: &SopsFile) -> Result<Decrypted, Diagnostic> {
        match &self.unlock {
            Unlock::Redacted => Ok(Decrypted {
                value: file.redacted(),
                leaves: Vec::new(),
            }),
            Unlock::Keys(keys) => file.decrypt(keys).map_err(|e| diagnostic(path, &e)),
            Unlock::Required => Err(Diagnostic::new(
                path,
                None,
                Problem::Secret {
                    detail: "encrypted, and no age key was given".into(),
                    hint: "give fief the age identity: --age-key-file or SOPS_AGE_KEY_FILE (CLI), --age-key-file from the key Secret (agent)",
                },
            )),
        }
    }

    /// The `secrets` context of one tenant (empty maps for absent files).
    pub fn for_tenant(&self, tenant: &str) -> Result<TenantSecrets, Vec<Diagnostic>> {
        let shared_paths = SHARED.map(str::to_string);
        let mut errors = Vec::new();
        let mut out = TenantSecrets::default();
        let mut shared = json!({});
        match self.one(&shared_paths) {
            Ok(Some((path, file))) => match self.shared.get_or_init(|| self.open(path, file)) {
                Ok(d) => {
                    shared = d.value.clone();
                    out.leaves.extend(
                        d.leaves
                            .iter()
                            .map(|(k, v)| (format!("secrets.shared.{k}"), v.clone())),
                    );
                }
                Err(e) => errors.push(e.clone()),
            },
            Ok(None) => {}
            Err(ds) => errors.extend(ds),
        }
        let mut own = json!({});
        match self.one(&tenant_paths(tenant)) {
            Ok(Some((path, file))) => match self.open(path, file) {
                Ok(d) => {
                    own = d.value;
                    out.leaves.extend(
                        d.leaves
                            .into_iter()
                            .map(|(k, v)| (format!("secrets.tenant.{k}"), v)),
                    );
                }
                Err(e) => errors.push(e),
            },
            Ok(None) => {}
            Err(ds) => errors.extend(ds),
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        out.context = json!({"shared": shared, "tenant": own});
        Ok(out)
    }
}

/// The plaintext secrets a tenant's render read, `(secrets.<shared|tenant>.<path>, value)`,
/// kept with the render so that a message about its objects from elsewhere (the API server's
/// answer to an apply or a dry run) is scrubbed too ([`SecretLeaves::scrub`]). Memory only:
/// never serialized, and its `Debug` shows the keys alone.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SecretLeaves(pub Vec<(String, String)>);

impl SecretLeaves {
    /// [`scrub_text`] with these leaves.
    pub fn scrub(&self, text: &str) -> String {
        scrub_text(text, &self.0)
    }
}

impl std::fmt::Debug for SecretLeaves {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(k, _)| k))
            .finish()
    }
}

/// Shortest plaintext that [`scrub`] replaces (shorter strings would mangle messages).
pub const MIN_SCRUB_LEN: usize = 4;

/// Replace every plaintext secret in `text` with `<secret KEY>`: as written, in another
/// letter case (a template's `lower`/`upper`), escaped as a quoted string shows it, and in
/// base64.
pub fn scrub_text(text: &str, leaves: &[(String, String)]) -> String {
    use base64::Engine;
    let mut out = text.to_string();
    for (key, plain) in leaves {
        if plain.len() < MIN_SCRUB_LEN {
            continue;
        }
        let hidden = format!("<secret {key}>");
        let escaped = format!("{plain:?}");
        let escaped = &escaped[1..escaped.len() - 1];
        for needle in [plain.as_str(), escaped] {
            out = replace_ignoring_case(&out, needle, &hidden);
        }
        let b64 = base64::engine::general_purpose::STANDARD.encode(plain);
        if out.contains(&b64) {
            out = out.replace(&b64, &hidden);
        }
    }
    out
}

/// `text` with every occurrence of `needle`, in any ASCII letter case, replaced by `with`.
fn replace_ignoring_case(text: &str, needle: &str, with: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let wanted = needle.to_ascii_lowercase();
    if needle.is_empty() || !lower.contains(&wanted) {
        return text.to_string();
    }
    // ASCII lowercasing keeps every byte offset, so matches in `lower` are matches in `text`.
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (i, _) in lower.match_indices(&wanted) {
        if i < at {
            continue;
        }
        out.push_str(&text[at..i]);
        out.push_str(with);
        at = i + wanted.len();
    }
    out.push_str(&text[at..]);
    out
}

/// Scrub every text of the diagnostics (each field of its problem, and its file) of the
/// plaintext secrets `leaves`: a check that quotes what a template rendered (an object's
/// name, a value, a path) then names the secret key, never its value.
pub fn scrub(diagnostics: &mut [Diagnostic], leaves: &[(String, String)]) {
    if leaves.is_empty() {
        return;
    }
    for d in diagnostics {
        d.file = scrub_text(&d.file, leaves);
        for t in d.problem.texts_mut() {
            *t = scrub_text(t, leaves);
        }
    }
}

/// Whether `object` is a Secret rendered without the age key: one of its `stringData` values,
/// or `data` values once base64-decoded, holds the [`ENCRYPTED`] placeholder. Its values are
/// unknown, so a diff cannot compare them.
pub fn holds_redacted_value(object: &Value) -> bool {
    use base64::Engine;
    if object["kind"] != "Secret" || object["apiVersion"] != "v1" {
        return false;
    }
    let values = |field: &str| {
        object[field]
            .as_object()
            .map(|m| m.values().filter_map(Value::as_str).collect::<Vec<_>>())
            .unwrap_or_default()
    };
    values("stringData").iter().any(|v| v.contains(ENCRYPTED))
        || values("data").iter().any(|v| {
            base64::engine::general_purpose::STANDARD
                .decode(v)
                .is_ok_and(|plain| String::from_utf8_lossy(&plain).contains(ENCRYPTED))
        })
}

#[cfg(test)]
mod tests;
