//! Playing the Job controller, which the test control plane does not run: a Job's status
//! written as complete or failed through its status subresource, with the fields the API
//! server requires of a finished Job (start and completion times, the success or failure
//! target condition before the final one).

use super::cluster_cli::patch_status;

/// Mark Job `name` in `ns` Complete; returns when (microseconds, as the audit log counts).
pub fn complete(name: &str, ns: &str) -> i64 {
    let now = timestamp();
    let cond = |t: &str| {
        serde_json::json!({"type": t, "status": "True", "reason": "CompletionsReached",
            "message": "Reached expected number of succeeded pods",
            "lastProbeTime": now, "lastTransitionTime": now})
    };
    let status = serde_json::json!({
        "startTime": now, "completionTime": now, "succeeded": 1, "active": 0,
        "conditions": [cond("SuccessCriteriaMet"), cond("Complete")]});
    patch_status("job", name, ns, &status)
}

/// Mark Job `name` in `ns` Failed (reason `BackoffLimitExceeded`); returns when.
pub fn fail(name: &str, ns: &str) -> i64 {
    let now = timestamp();
    let cond = |t: &str| {
        serde_json::json!({"type": t, "status": "True", "reason": "BackoffLimitExceeded",
            "message": "Job has reached the specified backoff limit",
            "lastProbeTime": now, "lastTransitionTime": now})
    };
    let status = serde_json::json!({
        "startTime": now, "failed": 1, "active": 0,
        "conditions": [cond("FailureTarget"), cond("Failed")]});
    patch_status("job", name, ns, &status)
}

fn timestamp() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}
