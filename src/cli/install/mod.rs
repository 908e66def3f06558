//! `fief install` and `fief uninstall`: the agent put in a cluster (or taken out) in one
//! command, from the manifests built into the binary.
//!
//! In: [`InstallArgs`] / [`UninstallArgs`] and the credential files they name. Out: for
//! `install`, the agent's objects server-side-applied in order (Namespace, the Secrets made
//! from the credential files, RBAC, the admission policy, Deployment, Service, and the
//! NetworkPolicy, ServiceMonitor, PrometheusRule and dashboard ConfigMap when asked for), once
//! discovery has shown the cluster serves every kind among them (nothing is written
//! otherwise), then a wait for the Deployment's rollout and what to do next; with `--export`,
//! the same objects as YAML
//! on stdout without the Secrets (their values are never printed: a comment says how to make
//! them). Exit 0 once rolled out, 5 when the rollout did not finish within `--timeout`, 2 for
//! bad options or credential files or a kind the cluster does not serve (such as a
//! ServiceMonitor without the prometheus-operator's CRDs), 3 when the cluster cannot be used.
//! `uninstall` deletes the agent's objects (the optional ones too, where present) and keeps
//! its namespace, the inventories in it and every tenant object.

pub mod check;
pub mod manifests;
pub mod options;

use std::fmt::Write as _;
use std::io::Write as _;
use std::time::{Duration, Instant};

use kube::api::DeleteParams;
use serde_json::Value;

use super::{CliError, EXIT_OK, EXIT_UNHEALTHY, InstallArgs, UninstallArgs, runtime, write_err};
use crate::kube::Resources;
use manifests::{Credentials, Settings};
use options::Optional;

/// Field manager of the install's applies.
const MANAGER: &str = "fief-install";

/// Read a credential file; a missing or unreadable one is a usage error naming it.
fn read(path: &Option<std::path::PathBuf>, what: &str) -> Result<Option<String>, CliError> {
    let Some(path) = path else { return Ok(None) };
    std::fs::read_to_string(path)
        .map(Some)
        .map_err(|e| CliError::Usage(format!("{}: cannot read the {what}: {e}", path.display())))
}

fn credentials(args: &InstallArgs) -> Result<Credentials, CliError> {
    let ssh = match (
        read(&args.ssh_key_file, "SSH key")?,
        read(&args.known_hosts_file, "known_hosts file")?,
    ) {
        (Some(key), Some(hosts)) => Some((key, hosts)),
        (None, None) => None,
        _ => {
            return Err(CliError::Usage(
                "--ssh-key-file and --known-hosts-file go together: the agent checks the git host's key against known_hosts".into(),
            ));
        }
    };
    Ok(Credentials {
        git_token: read(&args.git_token_file, "git token")?.map(|t| t.trim().to_string()),
        ssh,
        webhook_secret: read(&args.webhook_secret_file, "webhook secret")?
            .map(|t| t.trim().to_string()),
        age_key: read(&args.age_key_file, "age key")?,
        helm_repositories: read(&args.helm_repositories_file, "Helm repository config")?,
        helm_registry: read(&args.helm_registry_config_file, "Helm registry config")?,
        web_token: read(&args.web_token_file, "web view token")?.map(|t| t.trim().to_string()),
    })
}

fn settings(args: &InstallArgs) -> Result<Settings, CliError> {
    super::parse_duration(&args.interval).map_err(CliError::Usage)?;
    if !crate::core::model::is_dns_label(&args.namespace) {
        return Err(CliError::Usage(format!(
            "--namespace {}: not a DNS-1123 label (lowercase letters, digits and '-')",
            args.namespace
        )));
    }
    Ok(Settings {
        namespace: args.namespace.clone(),
        image: args.image.clone(),
        repo: args.repo.clone(),
        branch: args.branch.clone(),
        interval: args.interval.clone(),
        replicas: args.replicas,
        shards: args.shards,
        fleet_durations: args.sync_durations == crate::cli::SyncDurations::Fleet,
        cluster: args.cluster_name.clone(),
        resources: resources(args)?,
        optional: options::from_args(args)?,
        web: args.web,
    })
}

/// The container's requests and limits from the four options.
fn resources(args: &InstallArgs) -> Result<options::Resources, CliError> {
    let quantity =
        |text: &str, option: &str| options::parse_quantity(text, option).map_err(CliError::Usage);
    Ok(options::Resources {
        cpu_request: quantity(&args.cpu_request, "cpu-request")?,
        memory_request: quantity(&args.memory_request, "memory-request")?,
        cpu_limit: quantity(&args.cpu_limit, "cpu-limit")?,
        memory_limit: quantity(&args.memory_limit, "memory-limit")?,
    })
}

/// `fief install`.
pub fn install_cmd(args: &InstallArgs) -> Result<u8, CliError> {
    let settings = settings(args)?;
    let credentials = credentials(args)?;
    let objects = manifests::objects(&settings, &credentials).map_err(CliError::Serialize)?;
    if args.export {
        return export(&objects);
    }
    runtime()?.block_on(async {
        let (resources, _) = super::resources(&args.cluster).await?;
        served(&resources, &objects).await?;
        for object in &objects {
            apply(&resources, object).await?;
            println!("applied {}", describe(object));
        }
        if !args.no_wait
            && let Err(why) =
                wait_rolled_out(&resources, &settings.namespace, args.replicas, args.timeout)
                    .await?
        {
            eprintln!("{} {why}", super::colour::error_prefix());
            return Ok(EXIT_UNHEALTHY);
        }
        println!("{}", next_steps(&settings, &credentials));
        Ok(EXIT_OK)
    })
}

/// `Kind/namespace/name` of an object.
fn describe(object: &Value) -> String {
    let (kind, ns) = (field(object, "/kind"), field(object, "/metadata/namespace"));
    let name = field(object, "/metadata/name");
    if ns.is_empty() {
        format!("{kind}/{name}")
    } else {
        format!("{kind}/{ns}/{name}")
    }
}

/// The objects as YAML, the Secrets left out (named in a comment, with how to make them).
fn export(objects: &[Value]) -> Result<u8, CliError> {
    let mut out = String::from(
        "# The fief agent, as `fief install --export` writes it. Secret values are not printed;\n",
    );
    let secrets: Vec<&Value> = objects.iter().filter(|o| o["kind"] == "Secret").collect();
    if secrets.is_empty() {
        out.push_str("# no credential was given, so no Secret is needed.\n");
    }
    for s in secrets {
        let keys: Vec<&String> = s["data"]
            .as_object()
            .map(|d| d.keys().collect())
            .unwrap_or_default();
        let from: Vec<String> = keys
            .iter()
            .map(|k| format!("--from-file={k}=FILE"))
            .collect();
        let _ = writeln!(
            out,
            "# create it first: kubectl -n {} create secret generic {} {}",
            s["metadata"]["namespace"].as_str().unwrap_or_default(),
            s["metadata"]["name"].as_str().unwrap_or_default(),
            from.join(" ")
        );
    }
    for object in objects.iter().filter(|o| o["kind"] != "Secret") {
        out.push_str("---\n");
        crate::core::yaml::write_value(&mut out, object).map_err(CliError::Serialize)?;
    }
    std::io::stdout()
        .lock()
        .write_all(out.as_bytes())
        .map_err(write_err(std::path::Path::new("<stdout>")))?;
    Ok(EXIT_OK)
}

/// A string field of an object (empty when absent).
fn field(object: &Value, pointer: &str) -> String {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The API an object is written through, and its name; `None` when the cluster does not
/// serve its kind.
async fn api_of(
    resources: &Resources,
    object: &Value,
) -> Option<(kube::Api<kube::api::DynamicObject>, String)> {
    let resource = resources
        .resolve(&field(object, "/apiVersion"), &field(object, "/kind"))
        .await?;
    let namespace = if resource.namespaced {
        field(object, "/metadata/namespace")
    } else {
        String::new()
    };
    Some((
        resources.api(&resource, &namespace),
        field(object, "/metadata/name"),
    ))
}

/// Every object's kind served by the cluster, asked of discovery before anything is written;
/// else a usage error naming each kind that is not.
async fn served(resources: &Resources, objects: &[Value]) -> Result<(), CliError> {
    let mut missing = Vec::new();
    for object in objects {
        if api_of(resources, object).await.is_none() {
            missing.push(object);
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(CliError::Usage(not_served(&missing)))
    }
}

/// Why the install stops: one line per object whose kind the cluster does not serve.
fn not_served(missing: &[&Value]) -> String {
    let mut out = String::from(
        "nothing was written: the cluster does not serve every kind the install needs",
    );
    for object in missing {
        let (api_version, kind) = (field(object, "/apiVersion"), field(object, "/kind"));
        let group = api_version.split('/').next().unwrap_or_default();
        if group == options::MONITORING_GROUP {
            let flag = match kind.as_str() {
                "ServiceMonitor" => "--service-monitor",
                _ => "--prometheus-rule",
            };
            let _ = write!(
                out,
                "\n  {kind} ({api_version}): the CRD {}s.{group} is not installed (it comes with the prometheus-operator); install it, or leave out {flag}. `fief install --export {flag}` writes the {kind} to apply once the CRD is there",
                kind.to_lowercase()
            );
        } else {
            let _ = write!(
                out,
                "\n  {} ({api_version}): fief needs Kubernetes 1.30 or later (ValidatingAdmissionPolicy); see `fief check`",
                describe(object)
            );
        }
    }
    out
}

async fn apply(resources: &Resources, object: &Value) -> Result<(), CliError> {
    let Some((api, name)) = api_of(resources, object).await else {
        return Err(CliError::Usage(not_served(&[object])));
    };
    api.patch(
        &name,
        &crate::kube::forced_apply(MANAGER),
        &kube::api::Patch::Apply(object),
    )
    .await
    .map_err(|e| crate::kube::ClusterError::request(format!("apply {}", describe(object)), e))?;
    Ok(())
}

/// Wait until the agent's Deployment has rolled out: every replica updated and available.
/// `Ok(Err(why))` when it has not within `timeout`.
async fn wait_rolled_out(
    resources: &Resources,
    namespace: &str,
    replicas: u32,
    timeout: Duration,
) -> Result<Result<(), String>, CliError> {
    use k8s_openapi::api::apps::v1::Deployment;
    let api: kube::Api<Deployment> = kube::Api::namespaced(resources.client().clone(), namespace);
    let deadline = Instant::now() + timeout;
    println!("waiting for the Deployment {namespace}/fief-agent to roll out ({replicas} replicas)");
    loop {
        let d = api
            .get("fief-agent")
            .await
            .map_err(|e| crate::kube::ClusterError::request("read Deployment fief-agent", e))?;
        let generation = d.metadata.generation.unwrap_or(0);
        let st = d.status.unwrap_or_default();
        let want = i32::try_from(replicas).unwrap_or(i32::MAX);
        if st.observed_generation.unwrap_or(0) >= generation
            && st.updated_replicas.unwrap_or(0) >= want
            && st.available_replicas.unwrap_or(0) >= want
        {
            return Ok(Ok(()));
        }
        if Instant::now() > deadline {
            return Ok(Err(format!(
                "the agent did not roll out within {timeout:?} ({} of {replicas} available); see `kubectl -n {namespace} describe deployment fief-agent` and its Pods' events",
                st.available_replicas.unwrap_or(0)
            )));
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

fn next_steps(s: &Settings, c: &Credentials) -> String {
    let mut out = format!(
        "fief agent installed in namespace {ns} (image {image}), following {repo} branch {branch}.\nNext:\n  fief status --namespace {ns}                      # every tenant's status\n  kubectl -n {ns} logs deploy/fief-agent            # the agent's log\n",
        ns = s.namespace,
        image = s.image,
        repo = s.repo,
        branch = s.branch
    );
    if s.namespace != manifests::DEFAULT_NAMESPACE {
        let _ = writeln!(
            out,
            "  the tenants repo's fief.yaml must say `agentNamespace: {}` (the inventories live there)",
            s.namespace
        );
    }
    if s.web {
        let _ = writeln!(
            out,
            "  kubectl -n {} port-forward svc/fief-agent 8080   # then open http://localhost:8080/ui/",
            s.namespace
        );
    }
    if c.webhook_secret.is_some() {
        let _ = writeln!(
            out,
            "  point your git host's push webhook at the Service {}/fief-agent, path /hooks/git (through your ingress)",
            s.namespace
        );
    }
    out
}

/// `fief uninstall`: the agent's objects deleted; its namespace, inventories and every
/// tenant object kept.
pub fn uninstall_cmd(args: &UninstallArgs) -> Result<u8, CliError> {
    let settings = Settings {
        namespace: args.namespace.clone(),
        image: String::new(),
        repo: String::new(),
        branch: String::new(),
        interval: "30s".into(),
        replicas: 0,
        shards: 0,
        fleet_durations: false,
        cluster: String::new(),
        resources: options::Resources::default(),
        optional: Optional::all(),
        web: false,
    };
    let mut objects =
        manifests::objects(&settings, &Credentials::default()).map_err(CliError::Serialize)?;
    objects.retain(|o| o["kind"] != "Namespace");
    for secret in [
        "fief-git",
        "fief-webhook",
        "fief-age-key",
        "fief-web",
        "fief-helm",
    ] {
        objects.push(serde_json::json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": secret, "namespace": args.namespace}}));
    }
    runtime()?.block_on(async {
        let (resources, _) = super::resources(&args.cluster).await?;
        for object in objects.iter().rev() {
            delete(&resources, object).await?;
        }
        println!(
            "fief agent removed from namespace {ns}. Kept: the namespace, the tenants' inventories in it (ConfigMaps fief-tenant-*) and every tenant's objects, which go on running unmanaged. To remove a tenant's objects, set its `state: purged` and let an agent (or `fief apply`) sync it before uninstalling, or delete its namespaces.",
            ns = args.namespace
        );
        Ok(EXIT_OK)
    })
}

async fn delete(resources: &Resources, object: &Value) -> Result<(), CliError> {
    let Some((api, name)) = api_of(resources, object).await else {
        return Ok(());
    };
    match api.delete(&name, &DeleteParams::default()).await {
        Ok(_) => {
            println!("deleted {}", describe(object));
            Ok(())
        }
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(crate::kube::ClusterError::request(
            format!("delete {}", describe(object)),
            e,
        )
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unserved_monitoring_kind_names_its_crd_the_flag_and_export() {
        let objects = manifests::objects(
            &Settings {
                namespace: "gitops".into(),
                image: "i".into(),
                repo: "r".into(),
                branch: "main".into(),
                interval: "30s".into(),
                replicas: 1,
                shards: 0,
                fleet_durations: false,
                cluster: "default".into(),
                resources: options::Resources::default(),
                optional: Optional::all(),
                web: false,
            },
            &Credentials::default(),
        )
        .unwrap();
        let missing: Vec<&Value> = objects
            .iter()
            .filter(|o| {
                o["apiVersion"]
                    .as_str()
                    .is_some_and(|v| v.starts_with("monitoring.coreos.com/"))
            })
            .collect();
        assert_eq!(missing.len(), 2);
        let message = not_served(&missing);
        assert!(message.starts_with("nothing was written"), "{message}");
        for expected in [
            "ServiceMonitor (monitoring.coreos.com/v1): the CRD servicemonitors.monitoring.coreos.com is not installed",
            "leave out --service-monitor",
            "`fief install --export --service-monitor`",
            "PrometheusRule (monitoring.coreos.com/v1): the CRD prometheusrules.monitoring.coreos.com is not installed",
            "`fief install --export --prometheus-rule`",
        ] {
            assert!(message.contains(expected), "{expected} in {message}");
        }
        let policy = objects
            .iter()
            .find(|o| o["kind"] == "ValidatingAdmissionPolicy")
            .unwrap();
        assert!(not_served(&[policy]).contains("Kubernetes 1.30 or later"));
    }
}
