//! The agent as a process for the cluster benchmark: started against a served repo and
//! waited on until ready, its metrics and peak RSS read, pushes sent to its webhook with a
//! signature (the test kit's HTTP client and webhook signature), and a wait for a ConfigMap
//! value.

use super::*;

pub struct AgentProc {
    pub child: Child,
    pub port: u16,
}
impl Drop for AgentProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: &str,
) -> (u16, String) {
    common::util::http_request(("127.0.0.1", port), method, path, headers, body).unwrap_or_default()
}

impl AgentProc {
    pub fn start(url: &str, kubeconfig: &Path, cache: &Path, secret: &Path) -> AgentProc {
        let port = free_port();
        let child = fief()
            .args([
                "agent",
                "--repo",
                url,
                "--no-leader-election",
                "--interval",
                "600s",
                "--concurrency",
                CONCURRENCY,
            ])
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--cache-dir")
            .arg(cache)
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--webhook-secret-file")
            .arg(secret)
            .env("RUST_LOG", "warn")
            // As deploy/agent.yaml runs it: the allocator's settings for a compact heap, and
            // the render helper's collector at its Go default.
            .env("MIMALLOC_PURGE_DELAY", "0")
            .env("MIMALLOC_ARENA_EAGER_COMMIT", "0")
            .env("GOGC", "100")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let agent = AgentProc { child, port };
        let start = Instant::now();
        while http(port, "GET", "/readyz", &[], "").0 != 200 {
            assert!(
                start.elapsed() < Duration::from_secs(900),
                "agent not ready"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        agent
    }

    pub fn metric(&self, name: &str) -> f64 {
        let (_, text) = http(self.port, "GET", "/metrics", &[], "");
        text.lines()
            .filter(|l| l.starts_with(name))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    pub fn requests(&self) -> BTreeMap<String, f64> {
        let (_, text) = http(self.port, "GET", "/metrics", &[], "");
        text.lines()
            .filter(|l| l.starts_with("fief_api_requests_total{"))
            .filter_map(|l| {
                let verb = l.split("verb=\"").nth(1)?.split('"').next()?.to_string();
                Some((verb, l.rsplit(' ').next()?.parse().ok()?))
            })
            .collect()
    }

    pub fn push(&self) {
        let body = r#"{"ref":"refs/heads/main"}"#;
        let (code, _) = http(
            self.port,
            "POST",
            "/hooks/git",
            &[(
                "X-Hub-Signature-256",
                common::agent::hub_signature(SECRET, body),
            )],
            body,
        );
        assert_eq!(code, 202);
    }

    /// A field of /proc/<pid>/status given in kB, in MiB.
    pub fn status_mib(&self, field: &str) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
            .map(|kb| kb / 1024.0)
            .unwrap_or(0.0)
    }

    /// Peak resident set size (VmHWM), MiB.
    pub fn peak_rss_mib(&self) -> f64 {
        self.status_mib("VmHWM:")
    }

    /// The peak RSS with what is resident now, split: anonymous (the heap, stacks) and
    /// file-backed (the mapped binary and shared libraries), MiB.
    pub fn rss_report(&self) -> String {
        format!(
            "{:.0} MiB (now: {:.0} MiB anonymous + {:.0} MiB file-backed)",
            self.peak_rss_mib(),
            self.status_mib("RssAnon:"),
            self.status_mib("RssFile:")
        )
    }
}

pub async fn wait_value(
    api: &Api<k8s_openapi::api::core::v1::ConfigMap>,
    name: &str,
    key: &str,
    want: &str,
) {
    loop {
        if let Ok(cm) = api.get(name).await
            && cm
                .data
                .as_ref()
                .and_then(|d| d.get(key))
                .map(String::as_str)
                == Some(want)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
