//! Synthetic tenants repos for benchmarks and load tests.
//!
//! In: a tenant count. Out: the files of a repo (path → text) with three components
//! (web: 4 objects, postgres: 4, worker: 2) and dev/prod environment files, every tenant in
//! `prod` (every tenth also in `dev`), so each tenant renders about 24 objects with the
//! built-in baseline. No component is waited on for health (`health: {wait: false}`): the
//! test control plane runs no workload controllers, so their Deployments and StatefulSets
//! would never become healthy and the agent would hold each tenant `Reconciling`. Pure; [`write_repo`] puts the files on disk. Shared by the test
//! binaries (`common::synth`) and the benchmarks (`#[path]`); not library API.

use std::path::Path;

/// Files of a synthetic repo with `tenants` tenants named `tenant-NNNNN`.
pub fn repo_files(tenants: usize) -> Vec<(String, String)> {
    repo_files_named(tenants, "tenant")
}

/// Files of a synthetic repo with `tenants` tenants named `<prefix>-NNNNN`.
pub fn repo_files_named(tenants: usize, prefix: &str) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = vec![
        ("fief.yaml".into(), "baseDomain: bench.example\n".into()),
        (
            "environments/prod.yaml".into(),
            "values:\n  logLevel: info\ncomponents:\n  web:\n    replicas: 2\n".into(),
        ),
        (
            "environments/dev.yaml".into(),
            "values:\n  logLevel: debug\n".into(),
        ),
        (
            "components/web/varz.yaml".into(),
            "image: registry.example/web\nreplicas: 1\nport: 8080\nlogLevel: info\n".into(),
        ),
        (
            "components/web/component.yaml".into(),
            "version: \"1.0.0\"\ndependsOn: [postgres]\nhealth: {wait: false}\n".into(),
        ),
        ("components/web/templates/web.yaml".into(), WEB.into()),
        (
            "components/postgres/varz.yaml".into(),
            "image: docker.io/library/postgres\nstorage: 1Gi\n".into(),
        ),
        (
            "components/postgres/component.yaml".into(),
            "version: \"16.4\"\nhealth: {wait: false}\n".into(),
        ),
        ("components/postgres/templates/pg.yaml".into(), PG.into()),
        (
            "components/worker/varz.yaml".into(),
            "image: registry.example/worker\nqueues: [default, mail]\n".into(),
        ),
        (
            "components/worker/component.yaml".into(),
            "version: \"1.0.0\"\nhealth: {wait: false}\n".into(),
        ),
        (
            "components/worker/templates/worker.yaml".into(),
            WORKER.into(),
        ),
    ];
    for i in 0..tenants {
        let name = format!("{prefix}-{i:05}");
        let envs = if i % 10 == 0 { "[dev, prod]" } else { "[prod]" };
        files.push((
            format!("tenants/{name}.yaml"),
            format!(
                "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  environments: {envs}\n  quota: {{cpu: \"2\", memory: 4Gi, pods: \"20\"}}\n  access:\n    admins: [admin-{i}]\n    viewers: [viewer-{i}]\n  components:\n    - name: postgres\n    - name: web\n      values: {{replicas: {}}}\n    - name: worker\n",
                1 + i % 3
            ),
        ));
    }
    files
}

/// Name of the `i`th synthetic tenant.
pub fn tenant_name(i: usize) -> String {
    format!("tenant-{i:05}")
}

/// Files of a light repo of `tenants` tenants named `<prefix>-NNNN` whose inventories live in
/// `agent_ns`: a baseline of a Namespace, the `fief-tenant` ServiceAccount and its deployer
/// Role and RoleBinding (fief's own templates), one component `app` with a ConfigMap and a
/// Secret (whose value holds [`LIGHT_SECRET`]), labels `tier` (gold/free) and `ring` (the first
/// five `canary`), and fief.yaml `rollout.waves` canary then rest. Six objects a tenant, so a
/// large fleet applies quickly.
pub fn light_repo(agent_ns: &str, prefix: &str, tenants: usize) -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("templates");
    let mut files: Vec<(String, String)> = vec![(
        "fief.yaml".into(),
        format!(
            "agentNamespace: {agent_ns}\nrollout:\n  waves:\n    - {{name: canary, selector: {{ring: canary}}}}\n    - {{name: rest}}\n"
        ),
    )];
    for t in ["namespace.yaml", "serviceaccount.yaml", "deployer.yaml"] {
        let text = std::fs::read_to_string(root.join(t)).expect("fief's baseline template");
        files.push((format!("baseline/{t}"), text));
    }
    files.push((
        "components/app/varz.yaml".into(),
        "greeting: hello\n".into(),
    ));
    files.push((
        "components/app/component.yaml".into(),
        "version: \"2.1.0\"\n".into(),
    ));
    files.push((
        "components/app/templates/app.yaml".into(),
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  greeting: {{{{ values.greeting | quote }}}}\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: app-db\nstringData:\n  password: \"{LIGHT_SECRET}-{{{{ tenant.name }}}}\"\n"),
    ));
    for i in 0..tenants {
        files.push(light_tenant(prefix, i, "app"));
    }
    files
}

/// The plaintext every light tenant's Secret holds (followed by the tenant's name).
pub const LIGHT_SECRET: &str = "pw-never-shown";

/// The template whose render fails (an undefined value) and the line it fails at.
pub const FAILING_TEMPLATE: (&str, usize) = ("components/broken/templates/cm.yaml", 6);

/// The files that make light tenant `i` of `prefix` fail to render: it uses the component
/// `broken`, whose template reads a value no one sets at [`FAILING_TEMPLATE`].
pub fn light_failing(prefix: &str, i: usize) -> Vec<(String, String)> {
    vec![
        (
            FAILING_TEMPLATE.0.to_string(),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: broken\ndata:\n  k: {{ values.nothing.here }}\n".into(),
        ),
        ("components/broken/varz.yaml".into(), "{}\n".into()),
        light_tenant(prefix, i, "broken"),
    ]
}

/// The file of light tenant `i` of `prefix`, running `component`.
fn light_tenant(prefix: &str, i: usize, component: &str) -> (String, String) {
    let name = format!("{prefix}-{i:04}");
    let tier = if i.is_multiple_of(2) { "gold" } else { "free" };
    let ring = if i < 5 { "canary" } else { "main" };
    (
        format!("tenants/{name}.yaml"),
        format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\n  labels: {{tier: {tier}, ring: {ring}}}\nspec:\n  owner: {{email: ops@{name}.example, organization: Org {i}}}\n  components:\n    - name: {component}\n"
        ),
    )
}

/// The same files with the tenant files in folders of `per` under `tenants/`
/// (`tenants/g000/…`, `tenants/g001/…`, in tenant order): the layout the docs suggest for
/// thousands of tenants.
pub fn in_folders(files: Vec<(String, String)>, per: usize) -> Vec<(String, String)> {
    let mut k = 0;
    files
        .into_iter()
        .map(|(path, text)| match path.strip_prefix("tenants/") {
            Some(file) => {
                let moved = format!("tenants/g{:03}/{file}", k / per.max(1));
                k += 1;
                (moved, text)
            }
            None => (path, text),
        })
        .collect()
}

/// Where the tenant file of `name` is in the repo at `dir`: `tenants/<name>.yaml` or in a
/// folder under `tenants/`.
pub fn tenant_file(dir: &Path, name: &str) -> Option<std::path::PathBuf> {
    let file = format!("{name}.yaml");
    let flat = dir.join("tenants").join(&file);
    if flat.exists() {
        return Some(flat);
    }
    std::fs::read_dir(dir.join("tenants"))
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path().join(&file))
        .find(|p| p.exists())
}

/// Write a synthetic repo under `dir`.
pub fn write_repo(dir: &Path, tenants: usize) -> std::io::Result<()> {
    write_files(dir, &repo_files(tenants))
}

/// Write repo files under `dir`.
pub fn write_files(dir: &Path, files: &[(String, String)]) -> std::io::Result<()> {
    for (path, text) in files {
        let p = dir.join(path);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(p, text)?;
    }
    Ok(())
}

const WEB: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: {{ values.replicas }}
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: "{{ values.image }}:{{ component.version }}"
          ports: [{containerPort: {{ values.port }}}]
          envFrom: [{configMapRef: {name: web}}]
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: {{ values.port }}}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web
data:
  LOG_LEVEL: {{ values.logLevel | quote }}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
spec:
  rules:
    - host: "{{ env }}.{{ tenant.name }}.{{ fief.baseDomain }}"
      http:
        paths:
          - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
"#;

const PG: &str = r#"apiVersion: v1
kind: Secret
metadata:
  name: pg
data:
  password: {{ (tenant.name ~ namespace) | sha256 | b64encode }}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: pg-data
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: {{ values.storage | quote }}}}
---
apiVersion: v1
kind: Service
metadata:
  name: pg
spec:
  clusterIP: None
  selector: {app: pg}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: pg
spec:
  serviceName: pg
  replicas: 1
  selector:
    matchLabels: {app: pg}
  template:
    metadata:
      labels: {app: pg}
    spec:
      containers:
        - name: pg
          image: "{{ values.image }}:{{ component.version }}"
          volumeMounts: [{name: data, mountPath: /var/lib/postgresql/data}]
      volumes: [{name: data, persistentVolumeClaim: {claimName: pg-data}}]
"#;

const WORKER: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: worker
data:
  QUEUES: {{ values.queues | join(",") | quote }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: worker
spec:
  replicas: 1
  selector:
    matchLabels: {app: worker}
  template:
    metadata:
      labels: {app: worker}
    spec:
      containers:
        - name: worker
          image: "{{ values.image }}:{{ component.version }}"
          envFrom: [{configMapRef: {name: worker}}]
"#;
