//! The cluster commands' connection: their async runtime and the API server's client.
//!
//! In: a command's [`ClusterArgs`] (kubeconfig, context, request rate). Out: a tokio runtime,
//! and the discovered [`Resources`] with the counter of the requests sent.

use super::{CliError, ClusterArgs};
use crate::kube::Resources;
use crate::kube::counter::RequestCounter;

/// A tokio runtime for the cluster commands.
pub(super) fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Usage(format!("cannot start the async runtime: {e}")))
}

/// The cluster of `args`: a client and the API resources it serves, with the counter of its
/// requests.
pub(super) async fn resources(args: &ClusterArgs) -> Result<(Resources, RequestCounter), CliError> {
    Ok(crate::kube::connect_resources(
        args.kubeconfig.as_deref(),
        args.context.as_deref(),
        args.api_qps,
    )
    .await?)
}
