//! The test API server's audit log: every mutating request that reached it (who sent it, the
//! verb, the object, when it was received), as `tools/start-control-plane.sh` records it.
//! Tests count writes here, at the API server, not from the sender's own metrics.

use serde_json::Value;

/// One mutating request the API server received.
#[derive(Debug, Clone)]
pub struct Write {
    /// The authenticated user.
    pub user: String,
    /// The client's User-Agent header.
    pub user_agent: String,
    /// `create`, `update`, `patch`, `delete`, ...
    pub verb: String,
    /// `configmaps`, `leases`, `events`, ...
    pub resource: String,
    /// The object's namespace (empty: cluster-scoped).
    pub namespace: String,
    /// The object's name.
    pub name: String,
    /// When the API server received it, in microseconds since the Unix epoch.
    pub received_us: i64,
    /// The HTTP status the API server answered.
    pub code: i64,
}

/// Microseconds since the Unix epoch of an RFC 3339 time (`2026-01-01T00:00:00.123456Z`).
pub fn micros(rfc3339: &str) -> i64 {
    let t: k8s_openapi::jiff::Timestamp = rfc3339
        .parse()
        .unwrap_or_else(|e| panic!("not an RFC 3339 time {rfc3339:?}: {e}"));
    t.as_microsecond()
}

/// Every mutating request logged so far.
pub fn writes() -> Vec<Write> {
    let cp = super::control_plane();
    let path = cp
        .env("FIEF_CP_AUDIT_LOG")
        .expect("the control plane's env names FIEF_CP_AUDIT_LOG");
    writes_in(std::path::Path::new(path))
}

/// Every mutating request in the audit log at `path` (another control plane's, such as the
/// node cluster's).
pub fn writes_in(path: &std::path::Path) -> Vec<Write> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read the audit log {}: {e}", path.display()));
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|e| e["stage"] == "ResponseComplete")
        .map(|e| {
            let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
            Write {
                user: s(&e["user"]["username"]),
                user_agent: s(&e["userAgent"]),
                verb: s(&e["verb"]),
                resource: s(&e["objectRef"]["resource"]),
                namespace: s(&e["objectRef"]["namespace"]),
                name: s(&e["objectRef"]["name"]),
                received_us: micros(e["requestReceivedTimestamp"].as_str().unwrap_or("")),
                code: e["responseStatus"]["code"].as_i64().unwrap_or(0),
            }
        })
        .collect()
}

/// Bind `cluster-admin` to `user` (one of the control plane's users), so an agent can run as
/// that user and its writes be told apart from another's in the audit log.
pub fn make_admin(user: &str) {
    let name = super::unique(&format!("admin-{user}"));
    super::cluster_cli::kubectl_ok(&[
        "create",
        "clusterrolebinding",
        &name,
        "--clusterrole=cluster-admin",
        &format!("--user={user}"),
    ]);
}
