//! `fief completion SHELL` and `fief man`: shell completions and a man page generated from
//! the same clap definitions the parser uses, so they never drift from `--help`.
//!
//! In: a shell name. Out: a script or roff on stdout. The script registers `fief` itself as
//! the completer (clap's dynamic completion, answered in `main`), so tenant and environment
//! names come from the repo in the current folder ([`super::complete`]).

use std::io::Write;

use clap::CommandFactory;

use super::{Cli, CliError, CompletionArgs, EXIT_OK, write_err};

/// `fief completion SHELL`.
pub fn completion_cmd(args: &CompletionArgs) -> Result<u8, CliError> {
    let mut out = Vec::new();
    let shell = args.shell.to_string();
    let shells = clap_complete::env::Shells::builtins();
    let Some(completer) = shells.completer(&shell) else {
        return Err(CliError::Usage(format!(
            "no completion for the shell {shell}"
        )));
    };
    completer
        .write_registration("COMPLETE", "fief", "fief", "fief", &mut out)
        .map_err(write_err(std::path::Path::new("<stdout>")))?;
    std::io::stdout()
        .lock()
        .write_all(&out)
        .map_err(write_err(std::path::Path::new("<stdout>")))?;
    Ok(EXIT_OK)
}

/// `fief man`: the top-level page followed by one section per command.
pub fn man_cmd() -> Result<u8, CliError> {
    let command = Cli::command();
    let mut out = Vec::new();
    let stdout = std::path::Path::new("<stdout>");
    clap_mangen::Man::new(command.clone())
        .render(&mut out)
        .map_err(write_err(stdout))?;
    for sub in command.get_subcommands() {
        let title = format!("fief-{}", sub.get_name());
        clap_mangen::Man::new(sub.clone())
            .title(title)
            .render(&mut out)
            .map_err(write_err(stdout))?;
    }
    std::io::stdout()
        .lock()
        .write_all(&out)
        .map_err(write_err(stdout))?;
    Ok(EXIT_OK)
}
