//! The `fief` binary: parse arguments, run the command, map errors to exit codes.

use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use fief::cli::{self, Cli};

fn main() -> ExitCode {
    // A shell asking for completions (`COMPLETE=bash fief -- …`, from the script
    // `fief completion` prints) is answered here, and the process exits.
    clap_complete::CompleteEnv::with_factory(Cli::command).complete();
    let args = Cli::parse();
    // `helm` and `kustomize` components render through fief-render-helper, started on the
    // first such component (the CLI's commands and the agent alike).
    fief_core::render::package::install(std::sync::Arc::new(
        fief_source::render_helper::HelperRenderer::default(),
    ));
    match cli::run(args) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            let code = err.exit_code();
            eprintln!(
                "{} {:#}",
                cli::colour::error_prefix(),
                anyhow::Error::from(err)
            );
            ExitCode::from(code)
        }
    }
}
