//! The CLI's rows of the cluster benchmark, run by run: the cold apply and the no-op pass
//! of fief at N tenants, fief and kubectl side by side at the small size, and their report.

use super::*;

/// 2 + 3. Every run's measurements: cold apply and no-op pass, fief at N; fief and kubectl
/// at the small size.
#[derive(Default)]
pub struct Measured {
    cold: Vec<f64>,
    cold_rate: Vec<f64>,
    noop: Vec<f64>,
    noop_mut: Vec<f64>,
    noop_reads: Vec<f64>,
    fs_cold: Vec<f64>,
    fs_noop: Vec<f64>,
    k_cold: Vec<f64>,
    k_noop: Vec<f64>,
    fs_change: Vec<f64>,
    k_change: Vec<f64>,
    raw_same: Vec<f64>,
    alt_rate: Vec<f64>,
    fief_sent: Vec<f64>,
    cold_rss: Vec<f64>,
    noop_rss: Vec<f64>,
    /// The N-tenant repo of the last run.
    pub last_big: PathBuf,
}

impl Measured {
    /// Run `r` at N tenants: cold apply and no-op pass (with the API server's own request
    /// counts), and the alternative and plain-client applies when asked for.
    pub fn big_run(&mut self, b: &Bench, r: usize) {
        let (tenants, kubeconfig) = (b.tenants, &b.kubeconfig);
        let dir = b.work.path().join(format!("big{r}"));
        // Each run's tenants in their own agent namespace: a run does not see the earlier
        // runs' 1,000s of inventories (as orphans), as one repo's apply would not.
        let mut files = synth::repo_files_named(tenants, &format!("big{r}"));
        files.push((
            "fief.yaml".into(),
            format!("baseDomain: bench.example\nagentNamespace: fief-bench-big{r}\n"),
        ));
        synth::write_files(&dir, &files).unwrap();
        let (secs, objects, _, rss) = fief_apply_rss(&dir, kubeconfig);
        self.cold.push(secs);
        self.cold_rate.push(objects as f64 / secs);
        self.cold_rss.push(rss);
        // The no-op pass is the steady state: the controller-manager's work on the objects
        // just created (quotas, tokens) is let finish first.
        std::thread::sleep(Duration::from_secs(10));
        let before = b.rt.block_on(apiserver_requests(&b.client));
        let (secs, objects, sent, rss) = fief_apply_rss(&dir, kubeconfig);
        self.noop_rss.push(rss);
        self.fief_sent.push(sent as f64);
        let d = delta(&before, &b.rt.block_on(apiserver_requests(&b.client)));
        assert_eq!(objects, 0);
        self.noop.push(secs);
        self.noop_mut.push(mutating(&d));
        self.noop_reads
            .push(d.get("LIST").copied().unwrap_or(0.0) + d.get("GET").copied().unwrap_or(0.0));
        self.last_big = dir;
        if raw_same_on() {
            let dir = b.work.path().join(format!("rawsame{r}"));
            synth::write_files(&dir, &synth::repo_files_named(tenants, &format!("rs{r}"))).unwrap();
            let (rate, refused) = b.rt.block_on(raw_same_objects_rate(&b.client, &dir));
            assert_eq!(refused, 0, "the plain client was refused objects");
            self.raw_same.push(rate);
        }
        // `FIEF_BENCH_ALT_QPS=N`: the same cold apply with `--api-qps N`, on its own tenants,
        // in the same run (the client-side limit against the default).
        if let Some(args) = alt_args() {
            let dir = b.work.path().join(format!("alt{r}"));
            let mut files = synth::repo_files_named(tenants, &format!("alt{r}"));
            files.push((
                "fief.yaml".into(),
                format!("baseDomain: bench.example\nagentNamespace: fief-bench-alt{r}\n"),
            ));
            synth::write_files(&dir, &files).unwrap();
            let args: Vec<&str> = args.split_whitespace().collect();
            let (secs, objects, _, _) = fief_apply_rss_with(&dir, kubeconfig, &args);
            self.alt_rate.push(objects as f64 / secs);
        }
    }

    /// Run `r` side by side at the small size: fief apply vs kubectl, same manifests; cold,
    /// no-op, and (5) a shared component change for every tenant.
    pub fn side_by_side(&mut self, b: &Bench, r: usize) {
        let (small, kubeconfig, kubectl) = (b.small, &b.kubeconfig, &b.kubectl);
        let fdir = b.work.path().join(format!("fs{r}"));
        let kfiles = synth::repo_files_named(small, &format!("fs{r}"));
        synth::write_files(&fdir, &kfiles).unwrap();
        self.fs_cold.push(fief_apply(&fdir, kubeconfig).0);
        self.fs_noop.push(fief_apply(&fdir, kubeconfig).0);
        let kdir = b.work.path().join(format!("ks{r}"));
        let kfiles = synth::repo_files_named(small, &format!("ks{r}"));
        synth::write_files(&kdir, &kfiles).unwrap();
        let out = b.work.path().join(format!("ks{r}-out"));
        render_out(&kdir, &out);
        let names: Vec<String> = (0..small).map(|i| format!("ks{r}-{i:05}")).collect();
        self.k_cold
            .push(kubectl_apply(&out, &names, kubectl, kubeconfig));
        self.k_noop
            .push(kubectl_apply(&out, &names, kubectl, kubeconfig));
        let change = (
            "components/worker/varz.yaml".to_string(),
            format!("image: registry.example/worker\nqueues: [default, mail, run{r}]\n"),
        );
        synth::write_files(&fdir, std::slice::from_ref(&change)).unwrap();
        self.fs_change.push(fief_apply(&fdir, kubeconfig).0);
        synth::write_files(&kdir, std::slice::from_ref(&change)).unwrap();
        render_out(&kdir, &out);
        self.k_change
            .push(kubectl_apply(&out, &names, kubectl, kubeconfig));
    }

    /// The rows of 2 and 3 at N tenants (`raw`: the API server's raw write rate).
    pub fn report_big(&self, b: &Bench, raw: f64) {
        let tenants = b.tenants;
        let cold_rate = median(self.cold_rate.clone());
        row(
            &format!("2. cold apply, {tenants} tenants (fief apply)"),
            format!(
                "{:.1} s, {cold_rate:.0} objects/s",
                median(self.cold.clone())
            ),
        );
        row(
            "   fief cold-apply rate / API server raw rate",
            format!("{:.0} %", 100.0 * cold_rate / raw),
        );
        self.report_alternatives(cold_rate, raw);
        row(
            &format!("3. no-op pass, {tenants} unchanged tenants"),
            format!("{:.0} ms", median(self.noop.clone()) * 1000.0),
        );
        row(
            "   mutating requests fief sent in the no-op pass",
            format!("{:.0}", median(self.fief_sent.clone())),
        );
        row(
            "   all API requests meanwhile (apiserver_request_total)",
            format!(
                "{:.0} mutating, {:.0} reads (controller-manager included)",
                median(self.noop_mut.clone()),
                median(self.noop_reads.clone())
            ),
        );
        row(
            &format!("   fief apply peak RSS, {tenants} tenants: cold / no-op"),
            format!(
                "{:.0} MiB / {:.0} MiB",
                median(self.cold_rss.clone()),
                median(self.noop_rss.clone())
            ),
        );
    }

    /// The rows of the plain client on the same objects and of the alternative cold apply,
    /// when measured.
    fn report_alternatives(&self, cold_rate: f64, raw: f64) {
        let raw_same_on = raw_same_on();
        if raw_same_on {
            row(
                "   plain parallel SSA of the same objects (64 in flight, admin)",
                format!(
                    "{:.0} objects/s; fief cold apply is {:.0} % of it",
                    median(self.raw_same.clone()),
                    100.0 * cold_rate / median(self.raw_same.clone())
                ),
            );
        }
        if let Some(args) = alt_args() {
            let same = if raw_same_on {
                format!(
                    "; {:.0} % of the plain client on the same objects",
                    100.0 * median(self.alt_rate.clone()) / median(self.raw_same.clone())
                )
            } else {
                String::new()
            };
            row(
                &format!("   cold apply rate with {args} / API server raw rate"),
                format!(
                    "{:.0} objects/s, {:.0} %{same}",
                    median(self.alt_rate.clone()),
                    100.0 * median(self.alt_rate.clone()) / raw
                ),
            );
        }
    }

    /// The rows 2', 3' and 5': fief against kubectl at `small` tenants.
    pub fn report_side_by_side(&self, small: usize) {
        let objects_per_tenant = 26.4;
        let ratio = |f: &Vec<f64>, k: &Vec<f64>| median(k.clone()) / median(f.clone());
        row(
            &format!("2'. cold apply, {small} tenants: fief / kubectl"),
            format!(
                "{:.1} s / {:.1} s = {:.1}x faster ({:.0} vs {:.0} objects/s)",
                median(self.fs_cold.clone()),
                median(self.k_cold.clone()),
                ratio(&self.fs_cold, &self.k_cold),
                small as f64 * objects_per_tenant / median(self.fs_cold.clone()),
                small as f64 * objects_per_tenant / median(self.k_cold.clone())
            ),
        );
        row(
            &format!("3'. no-op pass, {small} tenants: fief / kubectl"),
            format!(
                "{:.2} s / {:.1} s = {:.0}x faster",
                median(self.fs_noop.clone()),
                median(self.k_noop.clone()),
                ratio(&self.fs_noop, &self.k_noop)
            ),
        );
        row(
            &format!("5'. shared component change, {small} tenants: fief / kubectl"),
            format!(
                "{:.2} s / {:.1} s = {:.1}x faster",
                median(self.fs_change.clone()),
                median(self.k_change.clone()),
                ratio(&self.fs_change, &self.k_change)
            ),
        );
    }
}
