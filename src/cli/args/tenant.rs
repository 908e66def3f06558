//! How a command names tenants and environments: `-t/--tenant` everywhere (a bare name is
//! still accepted where one tenant is meant), with the names completed from the tenants repo.
//!
//! In: `argv`. Out: [`OneTenant`], and the completers clap attaches to `--tenant` and `--env`.

use clap::Args;
use clap_complete::engine::ArgValueCompleter;

/// Exactly one tenant: `-t NAME`, `--tenant NAME`, or a bare `NAME` for scripts written
/// before `--tenant`.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct OneTenant {
    /// The tenant.
    #[arg(short = 't', long = "tenant", value_name = "NAME", add = tenants())]
    flag: Option<String>,
    /// The tenant, named without --tenant.
    #[arg(value_name = "TENANT", hide = true, add = tenants())]
    bare: Option<String>,
}

impl OneTenant {
    /// The tenant's name (clap requires exactly one of the two forms).
    pub fn name(&self) -> &str {
        self.flag
            .as_deref()
            .or(self.bare.as_deref())
            .unwrap_or_default()
    }
}

/// Completes `--tenant` with the tenant names of the repo in the current folder.
pub fn tenants() -> ArgValueCompleter {
    ArgValueCompleter::new(crate::cli::complete::tenant_names)
}

/// Completes `--env` with the environment names of the repo in the current folder.
pub fn environments() -> ArgValueCompleter {
    ArgValueCompleter::new(crate::cli::complete::environment_names)
}
