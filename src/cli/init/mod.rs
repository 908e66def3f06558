//! `fief init` and `fief schemas`: a new tenants repo that works at once, and the JSON Schemas
//! editors use to check its files as they are typed.
//!
//! In: a folder (and the first tenant's name). Out: the files of [`SKELETON`] with the tenant
//! named and the CI workflow pinned to this fief's release ([`workflow`]), the schemas of
//! [`RepoFile`] under `.fief/schemas/`, and the next steps on stdout. Nothing that exists is
//! overwritten: init names the files in the way and writes none.

pub mod workflow;

use std::fs;
use std::path::{Path, PathBuf};

use super::{CliError, EXIT_OK, InitArgs, SchemasArgs, write_err};
use crate::core::model::{RepoFile, is_dns_label};

/// Where `fief init` puts the schemas; the modelines of the files it writes point there.
pub const SCHEMA_DIR: &str = ".fief/schemas";

/// The placeholder for the tenant's name in the skeleton.
const TENANT: &str = "__TENANT__";

/// The files of a new tenants repo: (path in the repo, text), `__TENANT__` standing for the
/// first tenant's name and the CI workflow a template [`workflow::text`] fills in. The skeleton lives under `src/cli/init/skeleton/` as real files, so it
/// can be read and tested like any repo.
pub const SKELETON: [(&str, &str); 13] = [
    ("fief.yaml", include_str!("skeleton/fief.yaml")),
    (
        "environments/dev.yaml",
        include_str!("skeleton/environments/dev.yaml"),
    ),
    (
        "environments/prod.yaml",
        include_str!("skeleton/environments/prod.yaml"),
    ),
    (
        "tenants/__TENANT__.yaml",
        include_str!("skeleton/tenants/__TENANT__.yaml"),
    ),
    (
        "components/hello/component.yaml",
        include_str!("skeleton/components/hello/component.yaml"),
    ),
    (
        "components/hello/varz.yaml",
        include_str!("skeleton/components/hello/varz.yaml"),
    ),
    (
        "components/hello/values.schema.json",
        include_str!("skeleton/components/hello/values.schema.json"),
    ),
    (
        "components/hello/templates/configmap.yaml",
        include_str!("skeleton/components/hello/templates/configmap.yaml"),
    ),
    (
        "components/hello/templates/deployment.yaml",
        include_str!("skeleton/components/hello/templates/deployment.yaml"),
    ),
    (
        "components/hello/templates/service.yaml",
        include_str!("skeleton/components/hello/templates/service.yaml"),
    ),
    (".sops.yaml", include_str!("skeleton/.sops.yaml")),
    (workflow::PATH, workflow::TEMPLATE),
    (".gitignore", include_str!("skeleton/gitignore")),
];

/// The files `fief init` writes for a first tenant named `tenant`: the skeleton with the name
/// filled in and the workflow pinning `pins`, then the schemas.
pub fn repo_files(tenant: &str, pins: &workflow::Pins) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = SKELETON
        .iter()
        .map(|(path, text)| match *path {
            workflow::PATH => (path.to_string(), workflow::text(pins)),
            _ => (path.replace(TENANT, tenant), text.replace(TENANT, tenant)),
        })
        .collect();
    files.extend(
        RepoFile::ALL
            .iter()
            .map(|f| (format!("{SCHEMA_DIR}/{}", f.schema_file()), f.schema_text())),
    );
    files
}

/// `fief init [DIR] [--tenant NAME]`.
pub fn init_cmd(args: &InitArgs) -> Result<u8, CliError> {
    if !is_dns_label(&args.tenant) {
        return Err(CliError::Usage(format!(
            "--tenant `{}` is not a DNS-1123 label: use lower-case letters, digits and `-`, \
             at most 63 characters",
            args.tenant
        )));
    }
    let pins = workflow::Pins::of_this_fief();
    let files = repo_files(&args.tenant, pins);
    let in_the_way: Vec<String> = files
        .iter()
        .map(|(path, _)| args.dir.join(path))
        .filter(|p| p.exists())
        .map(|p| p.display().to_string())
        .collect();
    if !in_the_way.is_empty() {
        return Err(CliError::Usage(format!(
            "{} already holds {}; init overwrites nothing. Choose an empty folder \
             (`fief init my-tenants`) or move these away.",
            args.dir.display(),
            in_the_way.join(", ")
        )));
    }
    for (path, text) in &files {
        write_file(&args.dir.join(path), text)?;
    }
    println!(
        "Wrote a tenants repo with tenant `{}` to {}.\n\n{}\n\n{}",
        args.tenant,
        args.dir.display(),
        next_steps(&args.dir, &args.tenant),
        workflow::summary(pins).trim_end()
    );
    Ok(EXIT_OK)
}

fn next_steps(dir: &Path, tenant: &str) -> String {
    let dir = dir.display();
    format!(
        "Next:\n  \
         fief validate {dir}\n  \
         fief render {dir} --tenant {tenant}\n  \
         git -C {dir} init -b main && git -C {dir} add -A && git -C {dir} commit -m 'tenants repo'\n\
         Then push it and install the agent: fief install --image IMAGE --repo URL\n\
         (fief init wrote the JSON Schemas to {SCHEMA_DIR}/; editors with the YAML language \
         server check the files as you type.)"
    )
}

/// `fief schemas [DIR]`.
pub fn schemas_cmd(args: &SchemasArgs) -> Result<u8, CliError> {
    for file in RepoFile::ALL {
        let path = args.dir.join(file.schema_file());
        write_file(&path, &file.schema_text())?;
        println!("{}  ({})", path.display(), file.repo_path());
    }
    Ok(EXIT_OK)
}

fn write_file(path: &PathBuf, text: &str) -> Result<(), CliError> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(write_err(parent))?;
    }
    fs::write(path, text).map_err(write_err(path))
}
