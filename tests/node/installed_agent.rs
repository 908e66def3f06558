//! The agent installed by the install guide, on the node: both replicas under `restricted`
//! with only their ServiceAccount, `kubectl rollout status` and an image update, a signed push
//! webhook through the Service, and the loss of the leader's Pod.

use super::*;

#[test]
fn install_guide_runs_both_replicas_under_restricted_with_only_their_service_account() {
    let _guard = agent_lock();
    let install = installed();
    let cluster = node_cluster();
    let times = cluster.start_times();
    eprintln!(
        "node cluster: images {:.1}s, control plane {:.1}s, node {:.1}s (Ready {:.2}s after \
         kubelet started); install guide {:.1}s",
        times.images.as_secs_f64(),
        times.control_plane.as_secs_f64(),
        times.node.as_secs_f64(),
        times.node_ready.as_secs_f64(),
        install.took.as_secs_f64()
    );

    let (pods, _) = wait_for("two agent pods Running", Duration::from_secs(120), || {
        let pods = running_agent_pods();
        (pods.len() == 2)
            .then_some(pods)
            .ok_or_else(agent_diagnostics)
    });
    the_agent_namespace_enforces_restricted_and_its_pods_pass();
    each_pod_runs_on_the_node_with_only_its_service_account(&pods);
    // The Lease is held by one of the pods: the in-cluster identity may write it (rbac.yaml).
    let (holder, _) = wait_for("a leader", Duration::from_secs(60), || {
        leader().ok_or_else(agent_diagnostics)
    });
    assert!(
        pods.iter().any(|p| pod_name(p) == holder),
        "the Lease holder {holder} is none of the running pods"
    );
    the_tenants_are_applied_and_ready_in_their_inventories(&install.tenants);
}

/// The agent namespace enforces `restricted`, and the running agent Pods pass it (a new
/// enforce version makes the API server check them again and warn of any violation).
fn the_agent_namespace_enforces_restricted_and_its_pods_pass() {
    let ns = kubectl_json(&["get", "namespace", NS]).expect("namespace fief-system");
    assert_eq!(
        ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"], "restricted",
        "{NS} does not enforce restricted"
    );
    // A new enforce version makes the API server check the running pods against
    // `restricted` again: it warns about every pod that violates it.
    let out = kubectl(
        &[
            "label",
            "--dry-run=server",
            "--overwrite",
            "namespace",
            NS,
            "pod-security.kubernetes.io/enforce-version=v1.36",
        ],
        None,
    );
    let warnings = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kubectl label failed: {warnings}");
    assert!(
        !warnings.contains("violate"),
        "running agent pods violate restricted: {warnings}"
    );
}

/// Each agent Pod runs on the node, unrestarted, and its only credentials are the
/// ServiceAccount token the kubelet mounts: no kubeconfig flag, variable or file.
fn each_pod_runs_on_the_node_with_only_its_service_account(pods: &[Value]) {
    for pod in pods {
        let name = pod_name(pod);
        assert_eq!(
            pod["spec"]["nodeName"], NODE_NAME,
            "{name} is not on the node"
        );
        let container = &pod["spec"]["containers"][0];
        // The only credentials are the ServiceAccount token the kubelet mounts: no kubeconfig
        // flag, variable or file.
        assert_eq!(pod["spec"]["serviceAccountName"], "fief-agent");
        let args: Vec<&str> = container["args"]
            .as_array()
            .expect("args")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            !args
                .iter()
                .any(|a| a.contains("kubeconfig") || a.contains("--context")),
            "{name} runs with {args:?}"
        );
        let env = container["env"].as_array().cloned().unwrap_or_default();
        assert!(
            !env.iter().any(|e| e["name"] == "KUBECONFIG"),
            "{name} has KUBECONFIG set"
        );
        let token_mount = container["volumeMounts"]
            .as_array()
            .expect("mounts")
            .iter()
            .any(|m| m["mountPath"] == "/var/run/secrets/kubernetes.io/serviceaccount");
        assert!(token_mount, "{name} has no ServiceAccount token mounted");
        assert_eq!(
            pod["status"]["containerStatuses"][0]["restartCount"],
            0,
            "{name} restarted: {}",
            agent_diagnostics()
        );
    }
}

/// The tenants are applied, and recorded as Ready in their inventories in fief-system. (The
/// webhook test changes the second tenant, the failover tests delete and repair the first
/// one's ConfigMap.)
fn the_tenants_are_applied_and_ready_in_their_inventories(tenants: &[String]) {
    // Applied, and recorded as Ready in the tenants' inventories in fief-system. (The
    // webhook test changes the second tenant, the failover tests delete and repair the
    // first one's ConfigMap.)
    wait_for(
        "the first tenant's ConfigMap as the repo says",
        Duration::from_secs(60),
        || {
            let t = &tenants[0];
            let greeting = configmap_value(&format!("{t}-prod"), "app-config", "greeting");
            (greeting.as_deref() == Some("hello"))
                .then_some(())
                .ok_or_else(|| format!("{t}: greeting {greeting:?}"))
        },
    );
    for t in tenants {
        let (_, _) = wait_for(
            &format!("tenant {t} Ready in its inventory"),
            Duration::from_secs(60),
            || {
                let status = configmap_value(NS, &format!("fief-tenant-{t}"), "status")
                    .ok_or("no inventory")?;
                let status: Value = serde_json::from_str(&status).map_err(|e| e.to_string())?;
                let ready = status["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True");
                ready.then_some(()).ok_or_else(|| status.to_string())
            },
        );
    }
}

#[test]
fn rollout_status_succeeds_and_an_image_update_rolls_through() {
    let _guard = agent_lock();
    let install = installed();

    // Section 3's last line, as written (bounded here so a stuck rollout fails).
    let rollout = guide_install_lines()
        .into_iter()
        .find(|l| l.contains("rollout status"))
        .expect("rollout status in the guide");
    let bounded = format!("{rollout} --timeout=120s");
    let out = run_guide_line(install.base.path(), &bounded);
    assert!(
        out.status.success(),
        "`{rollout}` did not succeed ({NEEDS_READY_REPLICAS}):\n{}{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        agent_diagnostics()
    );

    // An upgrade as the guide says: a new tag in the overlay, apply again.
    let kustomization_path = install.overlay().join("kustomization.yaml");
    let kustomization = fs::read_to_string(&kustomization_path).expect("overlay");
    let (_, old_tag) = FIEF_IMAGE.split_once(':').expect("tag");
    let (_, new_tag) = FIEF_IMAGE_NEXT.split_once(':').expect("tag");
    fs::write(
        &kustomization_path,
        substitute(
            &kustomization,
            &format!("newTag: {old_tag}"),
            &format!("newTag: {new_tag}"),
        ),
    )
    .expect("write overlay");
    let started = Instant::now();
    let apply = run_guide_line(install.base.path(), "kubectl apply -k fief-install/");
    assert!(
        apply.status.success(),
        "apply -k failed: {}",
        String::from_utf8_lossy(&apply.stderr)
    );
    let out = run_guide_line(install.base.path(), &bounded);
    let took = started.elapsed();
    // Put the overlay back for the other tests, whatever happened; a stuck update is rolled
    // back, so the other tests find two pods of one ReplicaSet.
    fs::write(&kustomization_path, &kustomization).expect("restore overlay");
    if !out.status.success() {
        let _ = run_guide_line(install.base.path(), "kubectl apply -k fief-install/");
    }
    assert!(
        out.status.success(),
        "the rolling update to {FIEF_IMAGE_NEXT} did not complete ({NEEDS_READY_REPLICAS}):\n{}{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        agent_diagnostics()
    );
    eprintln!(
        "rolling update to {FIEF_IMAGE_NEXT}: complete in {:.1}s",
        took.as_secs_f64()
    );
    the_updated_pods_lead_and_repair_drift(&install.tenants[0]);
}

/// Both agent Pods run the new image and are Ready; one of them leads, and repairs a
/// hand-deleted object of tenant `t` (drift repair).
fn the_updated_pods_lead_and_repair_drift(t: &str) {
    let pods = running_agent_pods();
    assert_eq!(pods.len(), 2, "{}", agent_diagnostics());
    for pod in &pods {
        assert_eq!(pod["spec"]["containers"][0]["image"], FIEF_IMAGE_NEXT);
        assert!(is_ready(pod), "{} is not Ready", pod_name(pod));
    }
    let (holder, _) = wait_for(
        "a leader among the new pods",
        Duration::from_secs(60),
        || {
            leader()
                .filter(|h| pods.iter().any(|p| &pod_name(p) == h))
                .ok_or_else(agent_diagnostics)
        },
    );
    // The new leader reconciles: a hand-deleted object comes back (drift repair).
    kubectl_ok(&[
        "delete",
        "configmap",
        "-n",
        &format!("{t}-prod"),
        "app-config",
    ]);
    wait_for(
        &format!("the new leader {holder} to repair {t}'s ConfigMap"),
        Duration::from_secs(60),
        || {
            configmap_value(&format!("{t}-prod"), "app-config", "greeting")
                .map(|_| ())
                .ok_or_else(agent_diagnostics)
        },
    );
}

#[test]
fn a_signed_push_webhook_sent_to_the_service_is_applied() {
    let _guard = agent_lock();
    let install = installed();
    let t = &install.tenants[1];
    install.git.commit(
        &[tenant_file(t, "pushed")],
        "a change the webhook announces",
    );

    let proxy = ApiProxy::start();
    // The Service through the API server's service proxy: its endpoints are the Pods its
    // selector picks, the leader alone.
    let path = format!("/api/v1/namespaces/{NS}/services/fief-agent:http/proxy/hooks/git");
    the_service_selects_the_leader_alone();
    let body = r#"{"ref":"refs/heads/main"}"#;
    let json = ("Content-Type", "application/json".to_string());
    let unsigned = proxy.request("POST", &path, std::slice::from_ref(&json), body);
    assert_eq!(
        unsigned.as_ref().map(|(code, _)| *code),
        Some(401),
        "an unsigned webhook through the Service: {unsigned:?}"
    );
    let started = Instant::now();
    let signed = proxy.request(
        "POST",
        &path,
        &[
            json,
            (
                "X-Hub-Signature-256",
                signature(&install.webhook_secret, body),
            ),
        ],
        body,
    );
    assert_eq!(
        signed.as_ref().map(|(code, _)| *code),
        Some(202),
        "a signed webhook through the Service: {signed:?}"
    );
    let (_, _) = wait_for("the pushed change applied", Duration::from_secs(20), || {
        let greeting = configmap_value(&format!("{t}-prod"), "app-config", "greeting");
        (greeting.as_deref() == Some("pushed"))
            .then_some(())
            .ok_or_else(|| format!("greeting {greeting:?}"))
    });
    eprintln!(
        "webhook through the Service: change applied {:.1}s after the push",
        started.elapsed().as_secs_f64()
    );
}

/// Service fief-agent has an endpoint, and it is the leader's Pod alone.
fn the_service_selects_the_leader_alone() {
    let (endpoints, _) = wait_for(
        &format!("an endpoint of Service fief-agent ({NEEDS_LEADER_LABEL})"),
        Duration::from_secs(45),
        || {
            let ep = kubectl_json(&["get", "endpoints", "-n", NS, "fief-agent"])
                .ok_or("no Endpoints object")?;
            let ips: Vec<String> = ep["subsets"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|s| s["addresses"].as_array().cloned().unwrap_or_default())
                .filter_map(|a| a["ip"].as_str().map(str::to_string))
                .collect();
            if ips.is_empty() {
                Err(format!("no ready address; {}", agent_diagnostics()))
            } else {
                Ok(ips)
            }
        },
    );
    // The endpoint is the leader's pod.
    let holder = leader().expect("a leader");
    let leader_pod = kubectl_json(&["get", "pod", "-n", NS, &holder]).expect("leader pod");
    assert_eq!(
        endpoints,
        vec![
            leader_pod["status"]["podIP"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        ],
        "Service fief-agent does not select the leader {holder} alone"
    );
}

#[test]
fn a_deleted_leader_pod_is_replaced_and_the_other_replica_takes_over() {
    let _guard = agent_lock();
    let install = installed();
    let (pods, _) = wait_for("two agent pods Running", Duration::from_secs(120), || {
        let pods = running_agent_pods();
        (pods.len() >= 2)
            .then_some(pods)
            .ok_or_else(agent_diagnostics)
    });
    let (old_leader, _) = wait_for("a leader", Duration::from_secs(60), || {
        leader()
            .filter(|h| pods.iter().any(|p| &pod_name(p) == h))
            .ok_or_else(agent_diagnostics)
    });
    let standby = pods
        .iter()
        .map(pod_name)
        .find(|n| n != &old_leader)
        .expect("a second pod");

    let started = Instant::now();
    kubectl_ok(&["delete", "pod", "-n", NS, &old_leader, "--wait=false"]);
    // Another replica takes the Lease over: the standby, or the replacement pod when it
    // starts before the old Lease has expired and wins the race for it.
    let (new_leader, takeover) = wait_for(
        &format!("another replica to take the Lease over from {old_leader}"),
        Duration::from_secs(90),
        || match leader() {
            Some(h) if h != old_leader => Ok(h),
            other => Err(format!("holder {other:?}")),
        },
    );
    let which = if new_leader == standby {
        "the standby"
    } else {
        "the replacement pod"
    };
    eprintln!(
        "leader failover: {which} {new_leader} holds the Lease {:.1}s after {old_leader} was \
         deleted",
        takeover.as_secs_f64()
    );

    the_new_leader_repairs_a_deleted_object(&new_leader, &install.tenants[0]);
    // The ReplicaSet replaces the deleted pod.
    wait_for(
        "a replacement pod Running",
        Duration::from_secs(120),
        || {
            let names: Vec<String> = running_agent_pods().iter().map(pod_name).collect();
            (names.len() == 2 && !names.contains(&old_leader))
                .then_some(())
                .ok_or_else(|| format!("running {names:?}"))
        },
    );
    eprintln!(
        "leader failover: a replacement pod Running {:.1}s after the delete",
        started.elapsed().as_secs_f64()
    );

    only_the_new_leader_carries_the_leader_label(&new_leader);
}

/// The new leader reconciles: tenant `t`'s hand-deleted ConfigMap comes back.
fn the_new_leader_repairs_a_deleted_object(new_leader: &str, t: &str) {
    // The new leader reconciles: a hand-deleted object comes back.
    kubectl_ok(&[
        "delete",
        "configmap",
        "-n",
        &format!("{t}-prod"),
        "app-config",
    ]);
    let (_, repaired) = wait_for(
        &format!("the new leader {new_leader} to repair {t}'s ConfigMap"),
        Duration::from_secs(60),
        || {
            configmap_value(&format!("{t}-prod"), "app-config", "greeting")
                .map(|_| ())
                .ok_or_else(agent_diagnostics)
        },
    );
    eprintln!(
        "leader failover: the new leader repaired a deleted object in {:.1}s",
        repaired.as_secs_f64()
    );
}

/// The Service follows the leader: only the new leader's Pod carries the label.
fn only_the_new_leader_carries_the_leader_label(new_leader: &str) {
    // The Service follows the leader: only the new leader's Pod carries the label.
    wait_for(
        &format!(
            "{new_leader} labelled fief.dev/leader=true, and no other pod ({NEEDS_LEADER_LABEL})"
        ),
        Duration::from_secs(30),
        || {
            let labelled: Vec<String> = agent_pods()
                .iter()
                .filter(|p| p["metadata"]["labels"]["fief.dev/leader"] == "true")
                .map(pod_name)
                .collect();
            (labelled == vec![new_leader.to_string()])
                .then_some(())
                .ok_or_else(|| format!("labelled: {labelled:?}"))
        },
    );
}
