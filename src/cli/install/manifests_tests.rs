//! Unit tests of the manifests `fief install` builds: objects, options and credentials.

use super::*;

fn settings(namespace: &str) -> Settings {
    Settings {
        namespace: namespace.to_string(),
        image: "example.test/fief:1.2.3".into(),
        repo: "https://git.example.test/org/tenants.git".into(),
        branch: "live".into(),
        interval: "1m".into(),
        replicas: 3,
        shards: 0,
        fleet_durations: false,
        cluster: "eu-1".into(),
        resources: Resources::default(),
        optional: Optional::default(),
        web: false,
    }
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind}/{name}"))
}

#[test]
fn one_namespace_setting_reaches_every_object_the_policy_and_the_lease() {
    let objects = objects(&settings("platform-gitops"), &Credentials::default()).unwrap();
    let text = serde_json::to_string(&objects).unwrap();
    assert!(!text.contains("fief-system"), "{text}");
    assert_eq!(objects[0]["kind"], "Namespace");
    assert_eq!(objects[0]["metadata"]["name"], "platform-gitops");
    let policy = find(
        &objects,
        "ValidatingAdmissionPolicy",
        "fief-agent-scope-platform-gitops",
    );
    assert!(
        policy
            .to_string()
            .contains("system:serviceaccount:platform-gitops:fief-agent")
    );
    let binding = find(&objects, "ClusterRoleBinding", "fief-agent-platform-gitops");
    assert_eq!(binding["roleRef"]["name"], "fief-agent-platform-gitops");
    assert_eq!(binding["subjects"][0]["namespace"], "platform-gitops");
    let vapb = find(
        &objects,
        "ValidatingAdmissionPolicyBinding",
        "fief-agent-scope-platform-gitops",
    );
    assert_eq!(
        vapb["spec"]["policyName"],
        "fief-agent-scope-platform-gitops"
    );
    let deployment = find(&objects, "Deployment", "fief-agent");
    let args = deployment["spec"]["template"]["spec"]["containers"][0]["args"].to_string();
    assert!(args.contains("--lease-namespace=platform-gitops"), "{args}");
}

#[test]
fn the_deployment_takes_the_options_and_only_the_credential_flags_given() {
    let none = objects(&settings(DEFAULT_NAMESPACE), &Credentials::default()).unwrap();
    let d = find(&none, "Deployment", "fief-agent");
    let c = &d["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(d["spec"]["replicas"], 3);
    assert_eq!(c["image"], "example.test/fief:1.2.3");
    let args = c["args"].to_string();
    assert!(
        args.contains("--interval=1m") && args.contains("--cluster=eu-1"),
        "{args}"
    );
    assert!(!args.contains("--webhook-secret-file") && !args.contains("--age-key-file"));
    assert!(
        c["env"]
            .to_string()
            .contains("git.example.test/org/tenants.git")
    );
    assert!(c["env"].to_string().contains("\"live\""));
    assert!(none.iter().all(|o| o["kind"] != "Secret"));
    assert_eq!(
        find(&none, "ClusterRole", "fief-agent")["kind"],
        "ClusterRole"
    );

    let given = Credentials {
        git_token: Some("tok".into()),
        webhook_secret: Some("hook".into()),
        age_key: Some("AGE-SECRET-KEY-1".into()),
        helm_registry: Some("{}".into()),
        ..Credentials::default()
    };
    let all = objects(&settings(DEFAULT_NAMESPACE), &given).unwrap();
    assert_eq!(
        all[1]["kind"], "Secret",
        "Secrets right after the Namespace"
    );
    let args = find(&all, "Deployment", "fief-agent")["spec"]["template"]["spec"]["containers"][0]
        ["args"]
        .to_string();
    for flag in [
        "--git-token-file=",
        "--webhook-secret-file=",
        "--age-key-file=",
    ] {
        assert!(args.contains(flag), "{flag} in {args}");
    }
    let age = find(&all, "Secret", "fief-age-key");
    assert_eq!(age["data"]["keys.txt"], "QUdFLVNFQ1JFVC1LRVktMQ==");
    let helm = &find(&all, "Secret", "fief-helm")["data"];
    assert_eq!(
        (helm["config.json"].as_str(), helm.get("repositories.yaml")),
        (Some("e30="), None)
    );
    assert!(
        format!("{given:?}").contains("age_key: true"),
        "Debug shows no value"
    );
}

fn container(objects: &[Value]) -> &Value {
    &find(objects, "Deployment", "fief-agent")["spec"]["template"]["spec"]["containers"][0]
}

#[test]
fn default_resources_are_deploys_and_each_one_can_be_changed_or_left_out() {
    let deploy = crate::core::yaml::split_documents(FILES[3].1)
        .iter()
        .filter_map(|d| crate::core::yaml::parse_value(d).unwrap())
        .find(|o| o["kind"] == "Deployment")
        .unwrap();
    let built = objects(&settings(DEFAULT_NAMESPACE), &Credentials::default()).unwrap();
    assert_eq!(
        container(&built)["resources"],
        deploy["spec"]["template"]["spec"]["containers"][0]["resources"]
    );
    assert!(built.iter().all(|o| o["kind"] != "NetworkPolicy"));

    let mut s = settings(DEFAULT_NAMESPACE);
    s.resources = Resources {
        cpu_request: Some("250m".into()),
        cpu_limit: None,
        ..Resources::default()
    };
    let built = objects(&s, &Credentials::default()).unwrap();
    assert_eq!(
        container(&built)["resources"],
        json!({"requests": {"cpu": "250m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}})
    );
    s.resources = Resources {
        cpu_request: None,
        memory_request: None,
        cpu_limit: None,
        memory_limit: None,
    };
    s.optional = Optional::all();
    let built = objects(&s, &Credentials::default()).unwrap();
    assert!(container(&built).get("resources").is_none());
    let kinds: Vec<&str> = built.iter().filter_map(|o| o["kind"].as_str()).collect();
    assert_eq!(
        kinds[kinds.len() - 5..],
        [
            "Service",
            "NetworkPolicy",
            "ServiceMonitor",
            "PrometheusRule",
            "ConfigMap"
        ]
    );
}
