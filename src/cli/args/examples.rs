//! The `Examples:` section under each command's `--help` (and in the CLI reference and the
//! man page, which are generated from the same definitions).
//!
//! In: nothing. Out: one text per command. Pure.

/// `fief init`.
pub const INIT: &str = "Examples:
  fief init my-tenants --tenant stark     # a new repo with tenant `stark`
  fief init .                             # into the current folder (nothing is overwritten)";

/// `fief schemas`.
pub const SCHEMAS: &str = "Examples:
  fief schemas                            # into .fief/schemas
  fief schemas /tmp/schemas";

/// `fief render`.
pub const RENDER: &str = "Examples:
  fief render . -t stark                  # every object of one tenant, as YAML
  fief render . -t stark --values         # the merged values, each with the file and line that set it
  fief render . -l tier=free --out /tmp/rendered
  fief render . --env prod -o json";

/// `fief validate`.
pub const VALIDATE: &str = "Examples:
  fief validate .                         # every tenant: a summary line each
  fief validate . -t stark -t wayne
  fief validate . -l tier=free -o json";

/// `fief apply`.
pub const APPLY: &str = "Examples:
  fief apply .                            # every tenant of this cluster
  fief apply . -t stark --wait            # one tenant, then wait until it is healthy
  fief apply . --env dev                  # only dev's objects and prunes
  fief apply . -l tier=free --allow-mass-prune
  fief diff . --adopt && fief apply . --adopt   # take over what Flux or Argo CD made";

/// `fief diff`.
pub const DIFF: &str = "Examples:
  fief diff .                             # what `fief apply .` would change in the cluster
  fief diff . -t stark --env prod
  fief diff . --from origin/main -o markdown   # a pull request's change, no cluster needed
  fief diff . --adopt                     # what `fief apply --adopt` would take";

/// `fief agent`.
pub const AGENT: &str = "Examples:
  fief agent --repo https://git.example.com/platform/tenants.git --interval 1m
  fief agent --repo . --no-leader-election --web --listen 127.0.0.1:8080   # on your machine";

/// `fief status`.
pub const STATUS: &str = "Examples:
  fief status                             # every tenant, from the agent in fief-system
  fief status -t stark -o json
  fief status --not-ready                 # only what is broken
  fief status -l tier=free --repo .       # tenants chosen by their files' labels";

/// `fief bump`.
pub const BUMP: &str = "Examples:
  fief bump . web --version 2.4 -t stark  # one tenant
  fief bump . web --version 2.4 -l tier=free --commit
  fief bump . web --version 2.4 --percent 10   # a stable tenth of the tenants using web
  fief bump . web --ref web-2.4 --all";

/// `fief spares`.
pub const SPARES: &str = "Examples:
  fief spares . --dry-run                 # what would be added
  fief spares . --commit --push";

/// `fief allocate`.
pub const ALLOCATE: &str = "Examples:
  fief allocate . --owner-email ops@wayne.example.com --organization wayne --label tier=free --commit --push
  fief allocate . --set web.greeting='Hello, Wayne' --offline";

/// `fief completion`.
pub const COMPLETION: &str = "Examples:
  source <(fief completion bash)          # completes commands, flags, tenant and environment names
  fief completion zsh > \"${fpath[1]}/_fief\"
  fief completion fish > ~/.config/fish/completions/fief.fish";

/// `fief man`.
pub const MAN: &str = "Examples:
  fief man > /usr/local/share/man/man1/fief.1 && man fief";

/// `fief install`.
pub const INSTALL: &str = "Examples:
  fief check && fief install --image registry.example.com/fief:0.1.0 \\
    --repo https://git.example.com/platform/tenants.git --git-token-file token.txt
  fief install --image registry.example.com/fief:0.1.0 --repo URL --export > agent.yaml";

/// `fief check`.
pub const CHECK: &str = "Examples:
  fief check                              # may this kubeconfig's user install fief?
  fief check --context prod -n fief-system";

/// `fief uninstall`.
pub const UNINSTALL: &str = "Examples:
  fief uninstall                          # the agent goes; tenants and inventories stay";

/// `fief version`.
pub const VERSION: &str = "Examples:
  fief version
  fief version -o json";

/// `fief suspend`.
pub const SUSPEND: &str = "Examples:
  fief suspend -t stark --reason 'incident 42: hands off'
  fief suspend -t stark -n fief-system --context prod";

/// `fief resume`.
pub const RESUME: &str = "Examples:
  fief resume -t stark";

/// `fief reconcile`.
pub const RECONCILE: &str = "Examples:
  fief reconcile                          # every tenant, now; wait until all are Ready
  fief reconcile -t stark --timeout 5m
  fief reconcile -t stark --allow-mass-prune";

/// `fief retire`.
pub const RETIRE: &str = "Examples:
  fief retire . -t stark --cluster eu-1 --context eu-1 --new-context eu-2";

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every command and subcommand, with its path.
    fn commands(cmd: &clap::Command, path: String, out: &mut Vec<(String, clap::Command)>) {
        for sub in cmd.get_subcommands() {
            let here = format!("{path} {}", sub.get_name());
            out.push((here.clone(), sub.clone()));
            commands(sub, here, out);
        }
    }

    #[test]
    fn every_command_shows_examples_of_fief_commands() {
        let mut all = Vec::new();
        commands(&super::super::Cli::command(), "fief".into(), &mut all);
        for (path, cmd) in all {
            if cmd.get_name() == "help" || cmd.has_subcommands() {
                continue;
            }
            let help = cmd
                .get_after_help()
                .map(ToString::to_string)
                .unwrap_or_default();
            assert!(help.starts_with("Examples:\n"), "{path} has no examples");
            assert!(
                help.lines()
                    .skip(1)
                    .any(|l| l.trim_start().starts_with("fief ")),
                "{path}: {help}"
            );
        }
    }
}
