//! `fief render`: the repo's objects as one YAML stream, or a tree of files with `--out`.
//!
//! In: [`RenderArgs`]. Out: YAML on stdout or files; diagnostics on stderr; exit code 0 or 1.

use std::io::Write;
use std::path::Path;

use super::secrets::WithoutKey;
use super::{
    CliError, EXIT_INVALID, EXIT_OK, RenderArgs, load_and_render_with, output, report_errors,
    write_err,
};

/// `fief render`.
pub fn render_cmd(args: &RenderArgs) -> Result<u8, CliError> {
    let without_key = if args.show_secrets {
        WithoutKey::Refuse
    } else {
        WithoutKey::Never
    };
    let (_, renders) = load_and_render_with(&args.repo, without_key)?;
    match &args.out {
        None => {
            let text = output::stream(&renders, args.show_secrets).map_err(CliError::Serialize)?;
            std::io::stdout()
                .lock()
                .write_all(text.as_bytes())
                .map_err(write_err(Path::new("<stdout>")))?;
        }
        Some(dir) => {
            for r in renders.iter().filter(|r| r.is_ok()) {
                for o in &r.objects {
                    let path = dir.join(output::out_path(&r.tenant, o));
                    if let Some(parent) = path.parent() {
                        std::fs::create_dir_all(parent).map_err(write_err(parent))?;
                    }
                    let text = output::document(&r.tenant, o, args.show_secrets)
                        .map_err(CliError::Serialize)?;
                    std::fs::write(&path, text).map_err(write_err(&path))?;
                }
            }
        }
    }
    Ok(if report_errors(&renders) {
        EXIT_INVALID
    } else {
        EXIT_OK
    })
}
