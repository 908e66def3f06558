//! The Go helpers' own unit tests (tools/render-helper: the manifest sort, binary chart
//! files, the serve loop) run with the rest: `go vet` and `go test` over the module, with
//! the module's pinned dependencies (`-mod=readonly`, checked against its go.sum).
//!
//! Needs `go` (tools/test.sh builds the helpers with it first, so its caches are warm).

use std::path::Path;
use std::process::Command;

/// Runs `go ARGS` in tools/render-helper and fails with its output when it fails.
fn go_in_helper(args: &[&str]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/render-helper");
    let out = Command::new("go")
        .args(args)
        .current_dir(&dir)
        .env("GOFLAGS", "-mod=readonly")
        .env("CGO_ENABLED", "0")
        .output()
        .unwrap_or_else(|e| panic!("cannot run go (tools/test.sh needs Go 1.26): {e}"));
    assert!(
        out.status.success(),
        "go {} in {} failed:\n{}{}",
        args.join(" "),
        dir.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_go_helpers_pass_go_vet_and_their_unit_tests() {
    go_in_helper(&["vet", "./..."]);
    go_in_helper(&["test", "-count=1", "./..."]);
}
