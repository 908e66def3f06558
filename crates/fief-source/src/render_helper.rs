//! Driving `fief-render-helper` (tools/render-helper): the Go program that renders `helm` and
//! `kustomize` components with Helm's and kustomize's own packages.
//!
//! In: [`PackageRequest`]s from the core's render path. Out: the rendered documents, or why
//! not. The helper is started on the first request (and, as render threads ask at the same
//! time, one more per core, at most four per process); each answers one JSON line per JSON
//! line on its stdin; a package's files are sent the first time its key is
//! seen (again if the helper says it lost them), so the helper loads each chart once. The
//! helper reads no file and opens no connection: what it renders is what this module sends.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;

use fief_core::model::RenderKind;
use fief_core::render::package::{
    PackageDocument, PackageError, PackageRenderer, PackageRequest, helper_missing_hint,
};
use serde::{Deserialize, Serialize};

/// The helper's file name.
pub const HELPER_NAME: &str = "fief-render-helper";
/// The environment variable naming the helper's path.
pub const HELPER_ENV: &str = "FIEF_RENDER_HELPER";

/// Most helper processes one fief process runs.
const MAX_HELPERS: usize = 4;

/// The renderer the CLI and the agent install: starts a helper when first needed, and up to
/// one per core (at most [`MAX_HELPERS`]) as render threads ask at the same time.
pub struct HelperRenderer {
    /// The helpers, each started on first use; a render takes a free one.
    pool: Vec<Mutex<Option<Running>>>,
    /// The helper to run; `None`: found by [`find_helper`] on first use.
    path: Option<PathBuf>,
}

impl Default for HelperRenderer {
    fn default() -> Self {
        HelperRenderer::with_path(None)
    }
}

/// A started helper and the keys whose files it holds.
struct Running {
    child: Child,
    stdin: BufWriter<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    sent: HashSet<String>,
    next_id: u64,
}

impl Drop for Running {
    fn drop(&mut self) {
        // Closing stdin ends the helper; wait so it leaves no zombie.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Serialize)]
struct Request<'a> {
    id: u64,
    kind: &'static str,
    key: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    files: Option<Files<'a>>,
    root: &'a str,
    values: &'a serde_json::Value,
    release: &'a str,
    namespace: &'a str,
    #[serde(rename = "kubeVersion", skip_serializing_if = "Option::is_none")]
    kube_version: Option<&'a str>,
    #[serde(rename = "apiVersions", skip_serializing_if = "<[String]>::is_empty")]
    api_versions: &'a [String],
    #[serde(rename = "includeCrds", skip_serializing_if = "std::ops::Not::not")]
    include_crds: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    kustomize: Option<&'a fief_core::model::KustomizeSettings>,
}

/// A package's files as a JSON object of path → text.
struct Files<'a>(&'a std::collections::BTreeMap<String, std::sync::Arc<str>>);

impl Serialize for Files<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, &**v)))
    }
}

#[derive(Deserialize)]
struct Answer {
    id: u64,
    #[serde(default)]
    documents: Vec<Document>,
    #[serde(default)]
    error: String,
    #[serde(default)]
    missing: bool,
}

#[derive(Deserialize)]
struct Document {
    source: String,
    text: String,
}

impl HelperRenderer {
    /// A renderer that runs the helper at `path` (tests; the CLI finds it with
    /// [`find_helper`]).
    pub fn at(path: PathBuf) -> HelperRenderer {
        HelperRenderer::with_path(Some(path))
    }

    fn with_path(path: Option<PathBuf>) -> HelperRenderer {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        HelperRenderer {
            pool: (0..cores.clamp(1, MAX_HELPERS))
                .map(|_| Mutex::default())
                .collect(),
            path,
        }
    }

    /// A free helper slot, else the first one (waited for).
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Running>> {
        for slot in &self.pool {
            if let Ok(guard) = slot.try_lock() {
                return guard;
            }
        }
        // The pool is never empty (at least one slot); a poisoned lock still holds a helper.
        self.pool[0].lock().unwrap_or_else(|e| e.into_inner())
    }

    fn start(&self) -> Result<Running, PackageError> {
        let path = match &self.path {
            Some(p) => p.clone(),
            None => find_helper()?,
        };
        let mut child = Command::new(&path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .env_clear()
            .spawn()
            .map_err(|e| {
                PackageError::Unavailable(format!(
                    "cannot start {}: {e}; {}",
                    path.display(),
                    helper_missing_hint()
                ))
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            return Err(PackageError::Unavailable(format!(
                "{}: no pipes to the helper",
                path.display()
            )));
        };
        Ok(Running {
            child,
            stdin: BufWriter::new(stdin),
            stdout: BufReader::new(stdout),
            sent: HashSet::new(),
            next_id: 0,
        })
    }
}

impl PackageRenderer for HelperRenderer {
    fn render(&self, request: &PackageRequest<'_>) -> Result<Vec<PackageDocument>, PackageError> {
        // One request at a time per helper: the answers come back in order on one pipe.
        let mut state = self.slot();
        // A helper that died (or a pipe that broke) is started again, once.
        for attempt in 0..2 {
            if state.is_none() {
                *state = Some(self.start()?);
            }
            let Some(running) = state.as_mut() else {
                continue;
            };
            match running.exchange(request) {
                Ok(Some(docs)) => return docs,
                Ok(None) => continue,
                Err(e) if attempt == 0 => {
                    tracing::warn!(error = %e, "the render helper stopped; starting it again");
                    *state = None;
                }
                Err(e) => {
                    *state = None;
                    return Err(PackageError::Unavailable(format!(
                        "the render helper stopped: {e}"
                    )));
                }
            }
        }
        Err(PackageError::Unavailable(
            "the render helper lost the package's files twice".to_string(),
        ))
    }
}

type Rendered = Result<Vec<PackageDocument>, PackageError>;

impl Running {
    /// One request and its answer; `Ok(None)` when the helper no longer holds the files
    /// (they are sent with the next try); `Err` when the pipe broke.
    fn exchange(&mut self, request: &PackageRequest<'_>) -> std::io::Result<Option<Rendered>> {
        let package = request.package;
        let first = !self.sent.contains(&package.key);
        self.next_id += 1;
        let line = Request {
            id: self.next_id,
            kind: match package.kind {
                RenderKind::Kustomize => "kustomize",
                _ => "helm",
            },
            key: &package.key,
            files: first.then_some(Files(&package.files)),
            root: &package.root,
            values: request.values,
            release: request.release,
            namespace: request.namespace,
            kube_version: request.capabilities.kube_version,
            api_versions: request.capabilities.api_versions,
            include_crds: request.include_crds,
            kustomize: request.kustomize,
        };
        serde_json::to_writer(&mut self.stdin, &line)?;
        self.stdin.write_all(b"\n")?;
        self.stdin.flush()?;
        let mut text = String::new();
        if self.stdout.read_line(&mut text)? == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the helper closed its output",
            ));
        }
        let answer: Answer = serde_json::from_str(&text)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        if answer.id != self.next_id {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("answer {} to request {}", answer.id, self.next_id),
            ));
        }
        if answer.missing {
            self.sent.remove(&package.key);
            return Ok(None);
        }
        self.sent.insert(package.key.clone());
        if !answer.error.is_empty() {
            return Ok(Some(Err(PackageError::Render(answer.error))));
        }
        let docs = answer
            .documents
            .into_iter()
            .map(|d| PackageDocument {
                source: d.source,
                text: d.text,
            })
            .collect();
        Ok(Some(Ok(docs)))
    }
}

/// The helper: `$FIEF_RENDER_HELPER`, else `fief-render-helper` next to the running binary,
/// else on PATH; the error says how to get it.
pub fn find_helper() -> Result<PathBuf, PackageError> {
    if let Some(path) = std::env::var_os(HELPER_ENV).filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        return if is_executable(&path) {
            Ok(path)
        } else {
            Err(PackageError::Unavailable(format!(
                "${HELPER_ENV} names {}, which is not an executable file; {}",
                path.display(),
                helper_missing_hint()
            )))
        };
    }
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join(HELPER_NAME)));
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(HELPER_NAME));
    beside
        .into_iter()
        .chain(on_path)
        .find(|p| is_executable(p))
        .ok_or_else(|| {
            PackageError::Unavailable(format!(
                "{HELPER_NAME} was not found (not in ${HELPER_ENV}, not next to the fief binary, not on PATH); {}",
                helper_missing_hint()
            ))
        })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
#[path = "render_helper_tests.rs"]
mod tests;
