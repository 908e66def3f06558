//! Health of applied objects by kstatus rules — the ones Flux and `kubectl wait`-style tools
//! use — so a tenant is `Ready` only when what it applied is observed to work.
//!
//! In: a live object (as the API server returns it). Out: [`Health`]: `Current` (done),
//! `InProgress` (still rolling out; why), or `Failed` (why). Pure.
//!
//! Rules: an object whose `status.observedGeneration` is behind `metadata.generation` is in
//! progress; Deployments, StatefulSets, DaemonSets and ReplicaSets must have every replica
//! updated, ready and available; a Job must complete (failed when its `Failed` condition is
//! true); a PersistentVolumeClaim must be `Bound`; a Pod must be `Ready` (or `Succeeded`);
//! any other object with a `Ready` condition must have it `True` (a `Stalled=True` condition is
//! a failure); objects without status rules (ConfigMaps, Services, RBAC...) are current as
//! soon as they exist.
//!
//! A tenant's [`Verdict`] (what the agent writes on its status) follows from its waited-on
//! objects: `Stalled` when one failed or is still not healthy past its component's timeout,
//! `Reconciling` while some are converging, `Ready` when all are current.

use serde_json::Value;

use crate::condition::{ConditionStatus, ConditionType, Reason};
use crate::inventory::Status;

/// What an object's status says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// Done: the object is what was asked for.
    Current,
    /// Still converging, and why.
    InProgress(String),
    /// Will not converge without a change, and why.
    Failed(String),
}

fn int(v: &Value, path: &[&str]) -> Option<i64> {
    path.iter()
        .try_fold(v, |v, k| v.get(*k))
        .and_then(Value::as_i64)
}

fn condition<'a>(v: &'a Value, type_: &str) -> Option<&'a Value> {
    v["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// Whether a raw condition (from `status.conditions`) holds: its `status` is `True`.
fn holds(c: &Value) -> bool {
    c["status"].as_str().and_then(ConditionStatus::parse) == Some(ConditionStatus::True)
}

/// Whether the object's condition of `type_` is set and holds.
fn condition_holds(v: &Value, type_: &str) -> bool {
    condition(v, type_).is_some_and(holds)
}

fn message(c: Option<&Value>) -> String {
    c.and_then(|c| c["message"].as_str().or(c["reason"].as_str()))
        .unwrap_or("")
        .to_string()
}

/// The health of one live object.
pub fn health(object: &Value) -> Health {
    let kind = object["kind"].as_str().unwrap_or("");
    let group = object["apiVersion"]
        .as_str()
        .and_then(|a| a.rsplit_once('/').map(|(g, _)| g))
        .unwrap_or("");
    if let (Some(generation), observed) = (
        int(object, &["metadata", "generation"]),
        int(object, &["status", "observedGeneration"]),
    ) && observed.is_some_and(|o| o < generation)
    {
        return Health::InProgress(format!(
            "the controller has not seen generation {generation} yet"
        ));
    }
    match (group, kind) {
        ("apps", "Deployment") => deployment(object),
        ("apps", "StatefulSet") => stateful_set(object),
        ("apps", "DaemonSet") => daemon_set(object),
        ("apps", "ReplicaSet") => replicas(object, "ready"),
        ("batch", "Job") => job(object),
        ("", "PersistentVolumeClaim") => match object["status"]["phase"].as_str() {
            Some("Bound") => Health::Current,
            Some("Lost") => Health::Failed("the claim lost its volume".to_string()),
            other => Health::InProgress(format!("phase {}", other.unwrap_or("unknown"))),
        },
        ("", "Pod") => pod(object),
        _ => generic(object),
    }
}

fn want(object: &Value) -> i64 {
    int(object, &["spec", "replicas"]).unwrap_or(1)
}

fn replicas(object: &Value, field: &str) -> Health {
    let want = want(object);
    let have = int(object, &["status", &format!("{field}Replicas")]).unwrap_or(0);
    if have < want {
        Health::InProgress(format!("{have}/{want} replicas {field}"))
    } else {
        Health::Current
    }
}

fn deployment(d: &Value) -> Health {
    if condition(d, "Progressing").is_some_and(|c| c["reason"] == "ProgressDeadlineExceeded") {
        return Health::Failed(format!(
            "progress deadline exceeded: {}",
            message(condition(d, "Progressing"))
        ));
    }
    if d["status"].is_null() {
        return Health::InProgress("no status yet".to_string());
    }
    let want = want(d);
    let updated = int(d, &["status", "updatedReplicas"]).unwrap_or(0);
    let ready = int(d, &["status", "readyReplicas"]).unwrap_or(0);
    let available = int(d, &["status", "availableReplicas"]).unwrap_or(0);
    let total = int(d, &["status", "replicas"]).unwrap_or(0);
    if updated < want {
        return Health::InProgress(format!("{updated}/{want} replicas updated"));
    }
    if total > updated {
        return Health::InProgress(format!(
            "{} old replicas pending termination",
            total - updated
        ));
    }
    if available < want {
        return Health::InProgress(format!(
            "{ready}/{want} replicas ready, {available} available"
        ));
    }
    Health::Current
}

fn stateful_set(s: &Value) -> Health {
    if s["status"].is_null() {
        return Health::InProgress("no status yet".to_string());
    }
    let want = want(s);
    let ready = int(s, &["status", "readyReplicas"]).unwrap_or(0);
    if ready < want {
        return Health::InProgress(format!("{ready}/{want} replicas ready"));
    }
    let current = s["status"]["currentRevision"].as_str();
    let update = s["status"]["updateRevision"].as_str();
    if update.is_some() && current != update {
        return Health::InProgress("rolling update in progress".to_string());
    }
    Health::Current
}

fn daemon_set(d: &Value) -> Health {
    if d["status"].is_null() {
        return Health::InProgress("no status yet".to_string());
    }
    let want = int(d, &["status", "desiredNumberScheduled"]).unwrap_or(0);
    let updated = int(d, &["status", "updatedNumberScheduled"]).unwrap_or(0);
    let available = int(d, &["status", "numberAvailable"]).unwrap_or(0);
    if updated < want || available < want {
        return Health::InProgress(format!(
            "{available}/{want} pods available, {updated} updated"
        ));
    }
    Health::Current
}

fn job(j: &Value) -> Health {
    if condition_holds(j, "Failed") {
        // The condition's reason (BackoffLimitExceeded, DeadlineExceeded...) and its message.
        let failed = condition(j, "Failed");
        let reason = failed.and_then(|c| c["reason"].as_str()).unwrap_or("");
        let message = failed.and_then(|c| c["message"].as_str()).unwrap_or("");
        let why = match (reason, message) {
            ("", m) | (m, "") => m.to_string(),
            (r, m) => format!("{r}: {m}"),
        };
        return Health::Failed(format!("job failed: {why}"));
    }
    if condition_holds(j, "Complete") {
        return Health::Current;
    }
    let succeeded = int(j, &["status", "succeeded"]).unwrap_or(0);
    Health::InProgress(format!("running ({succeeded} succeeded)"))
}

fn pod(p: &Value) -> Health {
    match p["status"]["phase"].as_str() {
        Some("Succeeded") => return Health::Current,
        Some("Failed") => return Health::Failed("the pod failed".to_string()),
        _ => {}
    }
    if condition_holds(p, "Ready") {
        Health::Current
    } else {
        Health::InProgress(format!("not ready: {}", message(condition(p, "Ready"))))
    }
}

fn generic(o: &Value) -> Health {
    if condition_holds(o, "Stalled") {
        return Health::Failed(format!("stalled: {}", message(condition(o, "Stalled"))));
    }
    match condition(o, "Ready") {
        Some(c) if holds(c) => Health::Current,
        Some(c) => Health::InProgress(format!("not ready: {}", message(Some(c)))),
        None => Health::Current,
    }
}

/// One object a tenant waits for, as the agent last saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waited {
    /// The object, `group/kind namespace/name`.
    pub object: String,
    /// Its health at the version fief applied; `None` while not observed at that version.
    pub health: Option<Health>,
    /// Its component's `health.timeout` has passed.
    pub overdue: bool,
}

/// A tenant's health after its objects were applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every waited-on object is current.
    Ready,
    /// Some objects are still converging: (object, why).
    Reconciling(Vec<(String, String)>),
    /// An object failed, or is still not healthy after its timeout: (object, why).
    Stalled(Vec<(String, String)>),
}

impl Verdict {
    /// `ready`, `reconciling` or `stalled`.
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Ready => "ready",
            Verdict::Reconciling(_) => "reconciling",
            Verdict::Stalled(_) => "stalled",
        }
    }
}

/// The verdict over a tenant's waited-on objects.
pub fn verdict(objects: &[Waited]) -> Verdict {
    let mut pending = Vec::new();
    let mut stalled = Vec::new();
    for w in objects {
        let why = match &w.health {
            Some(Health::Current) => continue,
            Some(Health::Failed(why)) => {
                stalled.push((w.object.clone(), format!("failed: {why}")));
                continue;
            }
            Some(Health::InProgress(why)) => why.clone(),
            None => "not observed at the applied version yet".to_string(),
        };
        if w.overdue {
            stalled.push((w.object.clone(), format!("{why} (timed out)")));
        } else {
            pending.push((w.object.clone(), why));
        }
    }
    if !stalled.is_empty() {
        Verdict::Stalled(stalled)
    } else if !pending.is_empty() {
        Verdict::Reconciling(pending)
    } else {
        Verdict::Ready
    }
}

fn describe(list: &[(String, String)]) -> String {
    let shown: Vec<String> = list
        .iter()
        .take(5)
        .map(|(o, why)| format!("{o}: {why}"))
        .collect();
    let more = if list.len() > 5 {
        format!("; and {} more", list.len() - 5)
    } else {
        String::new()
    };
    format!("{}{more}", shown.join("; "))
}

/// The reasons a health verdict writes ([`set_conditions`]).
const VERDICT_REASONS: [Reason; 3] = [Reason::Healthy, Reason::WaitingForHealth, Reason::Unhealthy];

/// Whether `status` carries a health verdict ([`set_conditions`]) rather than a sync's own
/// `Ready`: the verdict judges the objects the last sync left, and a sync that changes none
/// of them leaves it standing.
pub fn holds_verdict(status: &Status) -> bool {
    status
        .condition(ConditionType::Ready)
        .is_some_and(|c| VERDICT_REASONS.iter().any(|r| c.has_reason(*r)))
}

/// Set a tenant's conditions from its verdict: `Ready` (reason `Healthy`), `Reconciling`
/// (reason `WaitingForHealth`, the pending objects named) or `Stalled` (reason `Unhealthy`,
/// the unhealthy objects named and why; also the last error).
pub fn set_conditions(status: &mut Status, verdict: &Verdict, now: &str) {
    use ConditionType::{Ready, Reconciling, Stalled};
    match verdict {
        // What was applied is healthy, but components wait for their dependencies: not Ready.
        Verdict::Ready if status.holds_back() => set_waiting(status, now),
        Verdict::Ready => {
            let reason = Reason::Healthy;
            status.set_condition(Ready, true, reason, "applied and healthy", now);
            status.set_condition(Reconciling, false, reason, "", now);
            status.set_condition(Stalled, false, reason, "", now);
            status.last_error = None;
        }
        Verdict::Reconciling(list) => {
            let mut message = format!(
                "waiting for {} object(s) to become healthy: {}",
                list.len(),
                describe(list)
            );
            let mut reason = Reason::WaitingForHealth;
            if status.holds_back() {
                // Components or phases wait for these objects: say which, first.
                message = format!("{}; {message}", status.held_back());
                reason = held_reason(status);
            }
            status.set_condition(Ready, false, reason, &message, now);
            status.set_condition(Reconciling, true, reason, &message, now);
            status.set_condition(Stalled, false, reason, "", now);
        }
        Verdict::Stalled(list) => {
            let mut message = format!("{} object(s) not healthy: {}", list.len(), describe(list));
            if status.holds_back() {
                message.push_str(&format!("; held: {}", status.held_back()));
            }
            let reason = Reason::Unhealthy;
            status.set_condition(Ready, false, reason, &message, now);
            status.set_condition(Reconciling, false, reason, "", now);
            status.set_condition(Stalled, true, reason, &message, now);
            status.last_error = Some(message);
        }
    }
}

/// `Ready=False`, `Reconciling=True` with reason `DependencyNotReady` (components of the
/// tenant wait for what they depend on, [`Status::waiting`]) or `PhaseNotReady` (a phase
/// waits for an earlier one, [`Status::phase_waiting`]).
pub fn set_waiting(status: &mut Status, now: &str) {
    use ConditionType::{Ready, Reconciling, Stalled};
    let message = status.held_back();
    let reason = held_reason(status);
    status.set_condition(Ready, false, reason, &message, now);
    status.set_condition(Reconciling, true, reason, &message, now);
    status.set_condition(Stalled, false, reason, "", now);
}

/// `PhaseNotReady` when a phase is held for an earlier one, else `DependencyNotReady`.
fn held_reason(status: &Status) -> Reason {
    if status.phase_waiting.is_some() {
        Reason::PhaseNotReady
    } else {
        Reason::DependencyNotReady
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deploy(status: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"generation": 2}, "spec": {"replicas": 2}, "status": status})
    }

    #[test]
    fn a_deployment_is_current_only_when_every_replica_is_updated_and_available() {
        let done = deploy(
            json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2,
                                 "readyReplicas": 2, "availableReplicas": 2}),
        );
        assert_eq!(health(&done), Health::Current);
        let zero = deploy(
            json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2,
                                 "readyReplicas": 0, "availableReplicas": 0}),
        );
        assert!(matches!(health(&zero), Health::InProgress(m) if m.contains("0/2 replicas ready")));
        let stale = deploy(
            json!({"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2,
                                  "readyReplicas": 2, "availableReplicas": 2}),
        );
        assert!(matches!(health(&stale), Health::InProgress(m) if m.contains("generation 2")));
        let stuck = deploy(json!({"observedGeneration": 2, "conditions": [
            {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
             "message": "ReplicaSet \"web-1\" has timed out progressing."}]}));
        assert!(matches!(health(&stuck), Health::Failed(m) if m.contains("timed out")));
    }

    #[test]
    fn jobs_claims_pods_and_custom_resources_follow_their_conditions() {
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "status": {"conditions": [
            {"type": "Failed", "status": "True", "message": "BackoffLimitExceeded"}]}});
        assert!(matches!(health(&job), Health::Failed(_)));
        let pvc = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                         "status": {"phase": "Pending"}});
        assert!(matches!(health(&pvc), Health::InProgress(_)));
        let cert = json!({"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
                          "status": {"conditions": [{"type": "Ready", "status": "False",
                                                     "message": "issuing"}]}});
        assert!(matches!(health(&cert), Health::InProgress(m) if m.contains("issuing")));
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap"});
        assert_eq!(health(&cm), Health::Current);
    }

    #[test]
    fn a_statefulset_waits_for_its_update_revision() {
        let s = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "spec": {"replicas": 1},
                       "status": {"readyReplicas": 1, "currentRevision": "a", "updateRevision": "b"}});
        assert!(matches!(health(&s), Health::InProgress(_)));
    }

    #[test]
    fn a_tenant_is_stalled_by_a_failed_or_overdue_object_and_reconciling_while_waiting() {
        let w = |object: &str, health: Option<Health>, overdue: bool| Waited {
            object: object.to_string(),
            health,
            overdue,
        };
        assert_eq!(
            verdict(&[w("a", Some(Health::Current), true)]),
            Verdict::Ready
        );
        let slow = w("d", Some(Health::InProgress("0/1 ready".into())), false);
        assert!(
            matches!(verdict(std::slice::from_ref(&slow)), Verdict::Reconciling(l) if l[0].0 == "d")
        );
        let unseen = w("d", None, true);
        assert!(
            matches!(verdict(&[unseen]), Verdict::Stalled(l) if l[0].1.contains("not observed"))
        );
        let failed = w("j", Some(Health::Failed("backoff".into())), false);
        assert!(matches!(verdict(&[slow, failed]), Verdict::Stalled(l) if l.len() == 1));
        let mut status = Status::default();
        let stalled = Verdict::Stalled(vec![("apps/Deployment t/web".into(), "0/1".into())]);
        set_conditions(&mut status, &stalled, "now");
        assert_eq!(
            status.condition(ConditionType::Stalled).map(|c| c.status),
            Some(ConditionStatus::True)
        );
        assert!(
            status
                .last_error
                .as_deref()
                .is_some_and(|e| e.contains("Deployment t/web"))
        );
    }
}
