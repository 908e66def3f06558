//! The chart fleet the chart benchmarks share (benches/charts.rs offline, the cluster
//! benchmark's agent phases): N tenants, each with one `kind: helm` component of the
//! metrics-server chart, the replicas varying per tenant; and the /proc readings of a
//! process's children (the render helpers).

use std::path::Path;

/// The component's defaults: what a tenant may run of the chart (fief refuses cluster-scoped
/// objects and bindings in other namespaces), with the PodDisruptionBudget and the resizer's
/// ConfigMap on.
pub const VARZ: &str = "rbac: {create: false}\napiService: {create: false}\n\
                    podDisruptionBudget: {enabled: true, minAvailable: 1}\n\
                    addonResizer: {enabled: true}\n";

/// The replicas tenant `i` sets.
pub fn replicas(i: usize) -> usize {
    1 + i % 3
}

/// Write the chart fleet: `tenants` tenants using component `metrics` (the chart in
/// components/metrics/chart).
pub fn write_chart_repo(dir: &Path, chart: &Path, tenants: usize, name: fn(usize) -> String) {
    crate::offline::write_file(dir, "fief.yaml", "baseDomain: bench.example\n");
    crate::offline::write_file(
        dir,
        "components/metrics/component.yaml",
        "kind: helm\nchart: chart\nhealth: {wait: false}\n",
    );
    crate::offline::write_file(dir, "components/metrics/varz.yaml", VARZ);
    copy_dir(chart, &dir.join("components/metrics/chart"));
    for i in 0..tenants {
        let name = name(i);
        let text = format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  \
             environments: [prod]\n  components:\n    - name: metrics\n      values: \
             {{replicas: {}}}\n",
            replicas(i)
        );
        crate::offline::write_file(dir, &format!("tenants/{name}.yaml"), &text);
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create chart folder");
    for entry in std::fs::read_dir(from).expect("read chart").flatten() {
        let path = entry.path();
        if path.is_dir() {
            copy_dir(&path, &to.join(entry.file_name()));
        } else {
            let text = std::fs::read_to_string(&path).expect("a text file");
            std::fs::write(to.join(entry.file_name()), text).expect("write chart file");
        }
    }
}

/// The processes whose parent is `parent` (fief's render helpers, for one).
pub fn children(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    let rest = s[s.rfind(')')? + 2..].to_string();
                    rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(parent)
        })
        .collect()
}

/// A field of /proc/<pid>/status given in kB (`VmRSS:`, `VmHWM:`), in KiB; 0 when unknown.
pub fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}
