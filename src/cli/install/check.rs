//! `fief check`: a preflight before `fief install`.
//!
//! In: [`CheckArgs`] (the cluster and the namespace to install in). Out: one line per check on
//! stdout: the API server's version (1.30 or later, for ValidatingAdmissionPolicy), whether it
//! serves the admission-policy API, and whether the current user may create and patch every
//! kind `fief install` writes (asked of the API server with SelfSubjectAccessReviews). Exit 0
//! when all pass, 1 when one fails (each failure says what to do), 3 when the cluster cannot
//! be used.

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::api::PostParams;

use super::super::{CheckArgs, CliError, EXIT_INVALID, EXIT_OK, runtime};

/// The oldest Kubernetes minor version with ValidatingAdmissionPolicy in `v1`.
const MIN_MINOR: u32 = 30;

/// What `fief install` writes: (API group, resource, namespaced).
const WRITES: [(&str, &str, bool); 12] = [
    ("", "namespaces", false),
    ("", "secrets", true),
    ("", "serviceaccounts", true),
    ("", "services", true),
    ("apps", "deployments", true),
    ("rbac.authorization.k8s.io", "clusterroles", false),
    ("rbac.authorization.k8s.io", "clusterrolebindings", false),
    ("rbac.authorization.k8s.io", "roles", true),
    ("rbac.authorization.k8s.io", "rolebindings", true),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicybindings",
        false,
    ),
    ("coordination.k8s.io", "leases", true),
];

/// One check's result: passed, and the line to print.
struct Line(bool, String);

/// `fief check`.
pub fn check_cmd(args: &CheckArgs) -> Result<u8, CliError> {
    let lines = runtime()?.block_on(async {
        let (resources, _) = super::super::resources(&args.cluster).await?;
        let client = resources.client().clone();
        let mut lines = vec![version(&client).await?];
        let served = resources
            .resolve("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy")
            .await
            .is_some();
        lines.push(Line(
            served,
            if served {
                "admission policies: served (admissionregistration.k8s.io/v1)".into()
            } else {
                "admission policies: not served; fief's agent needs ValidatingAdmissionPolicy (Kubernetes 1.30 or later, the API enabled)".into()
            },
        ));
        for (group, resource, namespaced) in WRITES {
            lines.push(allowed(&client, group, resource, namespaced.then_some(args.namespace.as_str())).await?);
        }
        Ok::<_, CliError>(lines)
    })?;
    let mut ok = true;
    for Line(passed, text) in &lines {
        ok &= passed;
        println!("{} {text}", if *passed { "ok  " } else { "FAIL" });
    }
    Ok(if ok { EXIT_OK } else { EXIT_INVALID })
}

async fn version(client: &kube::Client) -> Result<Line, CliError> {
    let info = client
        .apiserver_version()
        .await
        .map_err(|e| crate::kube::ClusterError::request("read the API server's version", e))?;
    let minor: u32 = info
        .minor
        .trim_end_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .unwrap_or(0);
    let passed = info.major == "1" && minor >= MIN_MINOR;
    let text = if passed {
        format!("Kubernetes {}", info.git_version)
    } else {
        format!(
            "Kubernetes {}: fief needs 1.{MIN_MINOR} or later (ValidatingAdmissionPolicy v1)",
            info.git_version
        )
    };
    Ok(Line(passed, text))
}

/// Whether the current user may create and patch `resource` (in `namespace`, if namespaced).
async fn allowed(
    client: &kube::Client,
    group: &str,
    resource: &str,
    namespace: Option<&str>,
) -> Result<Line, CliError> {
    let api: kube::Api<SelfSubjectAccessReview> = kube::Api::all(client.clone());
    let mut denied = Vec::new();
    for verb in ["create", "patch"] {
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    group: Some(group.to_string()),
                    resource: Some(resource.to_string()),
                    verb: Some(verb.to_string()),
                    namespace: namespace.map(str::to_string),
                    ..ResourceAttributes::default()
                }),
                ..SelfSubjectAccessReviewSpec::default()
            },
            ..SelfSubjectAccessReview::default()
        };
        let answer = api
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| {
                crate::kube::ClusterError::request("ask the API server about rights", e)
            })?;
        if !answer.status.is_some_and(|s| s.allowed) {
            denied.push(verb);
        }
    }
    let what = match (group, namespace) {
        ("", Some(ns)) => format!("{resource} in {ns}"),
        ("", None) => resource.to_string(),
        (g, Some(ns)) => format!("{resource}.{g} in {ns}"),
        (g, None) => format!("{resource}.{g}"),
    };
    Ok(if denied.is_empty() {
        Line(true, format!("may create and patch {what}"))
    } else {
        Line(
            false,
            format!(
                "may not {} {what}: `fief install` needs it; run it as a cluster admin",
                denied.join(" or ")
            ),
        )
    })
}
