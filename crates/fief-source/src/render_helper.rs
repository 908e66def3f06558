//! Driving `fief-render-helper` (tools/render-helper): the Go program that renders `helm` and
//! `kustomize` components with Helm's and kustomize's own packages.
//!
//! In: [`PackageRequest`]s from the core's render path. Out: the rendered documents, or why
//! not. One helper process serves every render thread (render_helper_pipe.rs): it is started
//! on the first request, renders one request per core at once and answers each JSON line on
//! its stdin with one JSON line naming the request's id; it is ended after a while without
//! requests and started again when needed. A package's files are sent the first time its key
//! is seen (again if the helper says it lost them), so the helper loads each chart once: text
//! files as text, a chart's other files as base64 beside them. The
//! helper reads no file and opens no connection: what it renders is what this module sends.

#[path = "render_helper_pipe.rs"]
mod pipe;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fief_core::model::RenderKind;
use fief_core::render::package::{
    PackageDocument, PackageError, PackageRenderer, PackageRequest, helper_missing_hint,
};
use serde::{Deserialize, Serialize};

/// The helper's file name.
pub const HELPER_NAME: &str = "fief-render-helper";
/// The environment variable naming the helper's path.
pub const HELPER_ENV: &str = "FIEF_RENDER_HELPER";
/// The file name of the program that fetches a chart archive (tools/render-helper's
/// `cmd/fief-chart-pull`), built and shipped with the helper.
pub const PULL_NAME: &str = "fief-chart-pull";

/// The renderer the CLI and the agent install: one helper process, started when first needed
/// and again after it stopped or was ended for idleness.
pub struct HelperRenderer {
    /// The running helper, if any (the idle watcher holds it weakly, to end it).
    slot: Arc<Mutex<Option<Arc<pipe::Process>>>>,
    /// The helper to run; `None`: found by [`find_helper`] on first use.
    path: Option<PathBuf>,
    /// How long the helper may go without a request before it is ended.
    idle: Duration,
}

impl Default for HelperRenderer {
    fn default() -> Self {
        HelperRenderer::with_path(None)
    }
}

#[derive(Serialize)]
struct Request<'a> {
    id: u64,
    kind: &'static str,
    key: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    files: Option<Files<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    binary: Option<Binary<'a>>,
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

/// A package's text files as a JSON object of path → text.
struct Files<'a>(&'a BTreeMap<String, Arc<str>>);

impl Serialize for Files<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, &**v)))
    }
}

/// A chart's files that are not UTF-8 text as a JSON object of path → standard base64 (what
/// Go's encoding/json reads into a `[]byte`).
struct Binary<'a>(&'a BTreeMap<String, Arc<[u8]>>);

impl Serialize for Binary<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use base64::Engine as _;
        let engine = &base64::engine::general_purpose::STANDARD;
        s.collect_map(self.0.iter().map(|(k, v)| (k, engine.encode(v))))
    }
}

#[derive(Deserialize)]
struct Answer {
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
    #[serde(default)]
    crd: bool,
}

impl HelperRenderer {
    /// A renderer that runs the helper at `path` (tests; the CLI finds it with
    /// [`find_helper`]).
    pub fn at(path: PathBuf) -> HelperRenderer {
        HelperRenderer::with_path(Some(path))
    }

    fn with_path(path: Option<PathBuf>) -> HelperRenderer {
        HelperRenderer {
            slot: Arc::default(),
            path,
            idle: pipe::IDLE_EXIT,
        }
    }

    /// The same renderer, its helper ended after `idle` without a request.
    pub fn with_idle_exit(mut self, idle: Duration) -> HelperRenderer {
        self.idle = idle;
        self
    }

    /// The running helper, started if there is none or it stopped.
    fn process(&self) -> Result<Arc<pipe::Process>, PackageError> {
        let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(running) = slot.as_ref().filter(|p| !p.is_broken()) {
            return Ok(running.clone());
        }
        let process = self.start()?;
        *slot = Some(process.clone());
        pipe::end_when_idle(
            Arc::downgrade(&self.slot),
            Arc::downgrade(&process),
            self.idle,
        );
        Ok(process)
    }

    /// Forget `process` (its pipe broke): the next request starts another.
    fn discard(&self, process: &Arc<pipe::Process>) {
        let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        if slot.as_ref().is_some_and(|p| Arc::ptr_eq(p, process)) {
            *slot = None;
        }
    }

    fn start(&self) -> Result<Arc<pipe::Process>, PackageError> {
        let path = match &self.path {
            Some(p) => p.clone(),
            None => find_helper()?,
        };
        let mut command = Command::new(&path);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .env_clear();
        // The helper gets none of fief's environment (it needs none, and it may hold
        // credentials) but Go's collector setting, which the agent's Deployment gives.
        if let Some(gogc) = std::env::var_os("GOGC") {
            command.env("GOGC", gogc);
        }
        let mut child = spawn_when_not_busy(&mut command).map_err(|e| {
            PackageError::Unavailable(format!(
                "cannot start {}: {e}; {}",
                path.display(),
                helper_missing_hint()
            ))
        })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(PackageError::Unavailable(format!(
                "{}: no pipes to the helper",
                path.display()
            )));
        };
        Ok(pipe::Process::new(child, stdin, stdout))
    }
}

/// Spawns `command`, trying again for a moment while its file is busy: a helper that was
/// just written (or whose writer's descriptor a fork in another thread still holds until
/// that fork execs) cannot be executed until the last writable descriptor closes.
fn spawn_when_not_busy(command: &mut Command) -> std::io::Result<std::process::Child> {
    let mut tries = 0;
    loop {
        match command.spawn() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 50 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

impl PackageRenderer for HelperRenderer {
    fn render(&self, request: &PackageRequest<'_>) -> Result<Vec<PackageDocument>, PackageError> {
        // A helper that stopped (or a pipe that broke) is started again, once; files the
        // helper lost are sent again, once.
        let (mut stopped, mut lost) = (0, 0);
        loop {
            let process = self.process()?;
            match exchange(&process, request) {
                Ok(Some(docs)) => return docs,
                Ok(None) if lost == 0 => lost += 1,
                Ok(None) => {
                    return Err(PackageError::Unavailable(
                        "the render helper lost the package's files twice".to_string(),
                    ));
                }
                Err(e) => {
                    self.discard(&process);
                    if stopped > 0 {
                        return Err(PackageError::Unavailable(format!(
                            "the render helper stopped: {e}"
                        )));
                    }
                    tracing::warn!(error = %e, "the render helper stopped; starting it again");
                    stopped += 1;
                }
            }
        }
    }
}

type Rendered = Result<Vec<PackageDocument>, PackageError>;

/// One request and its answer; `Ok(None)` when the helper no longer holds the files (they
/// are sent with the next try); `Err` when the pipe broke.
fn exchange(
    process: &pipe::Process,
    request: &PackageRequest<'_>,
) -> std::io::Result<Option<Rendered>> {
    let package = request.package;
    let text = process.exchange(|id| {
        // The first request written for a key carries its files.
        let first = pipe::lock(&process.sent).insert(package.key.clone());
        let line = Request {
            id,
            kind: match package.kind {
                RenderKind::Kustomize => "kustomize",
                _ => "helm",
            },
            key: &package.key,
            files: first.then_some(Files(&package.files)),
            binary: (first && !package.binary.is_empty()).then_some(Binary(&package.binary)),
            root: &package.root,
            values: request.values,
            release: request.release,
            namespace: request.namespace,
            kube_version: request.capabilities.kube_version,
            api_versions: request.capabilities.api_versions,
            include_crds: request.include_crds,
            kustomize: request.kustomize,
        };
        serde_json::to_vec(&line).map_err(std::io::Error::other)
    })?;
    let answer: Answer = serde_json::from_str(&text)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    if answer.missing {
        pipe::lock(&process.sent).remove(&package.key);
        return Ok(None);
    }
    if !answer.error.is_empty() {
        return Ok(Some(Err(PackageError::Render(answer.error))));
    }
    let docs = answer
        .documents
        .into_iter()
        .map(|d| PackageDocument {
            source: d.source,
            text: d.text,
            crd: d.crd,
        })
        .collect();
    Ok(Some(Ok(docs)))
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
    beside_fief_or_on_path(HELPER_NAME)
        .find(|p| is_executable(p))
        .ok_or_else(|| {
            PackageError::Unavailable(format!(
                "{HELPER_NAME} was not found (not in ${HELPER_ENV}, not next to the fief binary, not on PATH); {}",
                helper_missing_hint()
            ))
        })
}

/// The chart fetcher: `fief-chart-pull` beside the render helper [`find_helper`] finds, else
/// next to the running binary, else on PATH; the error says how to get it.
pub fn find_pull() -> Result<PathBuf, PackageError> {
    let beside_helper = find_helper()
        .ok()
        .and_then(|helper| helper.parent().map(|d| d.join(PULL_NAME)));
    beside_helper
        .into_iter()
        .chain(beside_fief_or_on_path(PULL_NAME))
        .find(|p| is_executable(p))
        .ok_or_else(|| {
            PackageError::Unavailable(format!(
                "{PULL_NAME}, which fetches charts not yet cached, was not found (not beside \
                 {HELPER_NAME}, not next to the fief binary, not on PATH); \
                 `tools/build-render-helper.sh` builds it beside the helper, and each release \
                 ships it as fief-chart-pull-VERSION-ARCH-linux"
            ))
        })
}

/// Where a program `name` is looked for: next to the running binary, then in each folder of
/// PATH, in that order.
fn beside_fief_or_on_path(name: &str) -> impl Iterator<Item = PathBuf> + '_ {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join(name)));
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(move |d| d.join(name));
    beside.into_iter().chain(on_path)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
#[path = "render_helper_tests.rs"]
mod tests;
