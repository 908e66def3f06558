//! Where the cluster is: the kubeconfig (`--kubeconfig` / `--context`, `KUBECONFIG`,
//! `~/.kube/config`) or the in-cluster ServiceAccount, as kubectl finds it.
//!
//! In: the command's kubeconfig path and context. Out: a kube [`Config`] (its server address
//! remembered for error messages), or a [`ClusterError`]: one plain line when the file is
//! not there.

use std::path::Path;

use kube::Config;
use kube::config::{KubeConfigOptions, Kubeconfig};

use super::{ClusterError, SERVER_URL};

/// Resolve the cluster's address and credentials from `--kubeconfig` / `--context`,
/// `KUBECONFIG`, `~/.kube/config` or the in-cluster service account, as kubectl does.
pub async fn load_config(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Result<Config, ClusterError> {
    if let Some(missing) = missing_kubeconfig(kubeconfig) {
        return Err(missing);
    }
    let options = KubeConfigOptions {
        context: context.map(str::to_string),
        ..Default::default()
    };
    let config = match kubeconfig {
        Some(path) => {
            let kc =
                Kubeconfig::read_from(path).map_err(|e| ClusterError::Kubeconfig(e.to_string()))?;
            Config::from_custom_kubeconfig(kc, &options)
                .await
                .map_err(|e| ClusterError::Kubeconfig(e.to_string()))?
        }
        None if context.is_some() => Config::from_kubeconfig(&options)
            .await
            .map_err(|e| ClusterError::Kubeconfig(e.to_string()))?,
        None => Config::infer()
            .await
            .map_err(|e| ClusterError::Kubeconfig(e.to_string()))?,
    };
    let server = config.cluster_url.to_string();
    let _ = SERVER_URL.set(server.trim_end_matches('/').to_string());
    Ok(config)
}

/// The one-line error for a kubeconfig file that is not there: `--kubeconfig`'s, else the
/// first of `KUBECONFIG`, else `~/.kube/config` — unless in a Pod, where the ServiceAccount
/// stands in for a missing default.
fn missing_kubeconfig(kubeconfig: Option<&Path>) -> Option<ClusterError> {
    let in_pod = std::env::var_os("KUBERNETES_SERVICE_HOST").is_some();
    let (path, from) = match (kubeconfig, std::env::var_os("KUBECONFIG")) {
        (Some(path), _) => (path.to_path_buf(), "--kubeconfig"),
        (None, Some(list)) if !list.is_empty() => {
            // kubectl merges the files of the list and skips those that are missing.
            let paths: Vec<_> = std::env::split_paths(&list).collect();
            if paths.iter().any(|p| p.exists()) {
                return None;
            }
            (paths.into_iter().next()?, "KUBECONFIG")
        }
        _ if in_pod => return None,
        _ => {
            let home = std::env::var_os("HOME")?;
            (
                Path::new(&home).join(".kube").join("config"),
                "the default, as no --kubeconfig or KUBECONFIG is given",
            )
        }
    };
    (!path.exists()).then_some(ClusterError::NoKubeconfig { path, from })
}
