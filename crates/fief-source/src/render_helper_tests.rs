//! The pipe protocol against scripted helpers: files sent once per key and again when the
//! helper lost them, a chart's binary files as base64 beside its text files, a helper that
//! stopped started again, errors passed through.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fief_core::model::RenderKind;
use fief_core::render::package::{Package, PackageError, PackageRenderer, PackageRequest};
use serde_json::json;

use super::HelperRenderer;

/// A shell script standing in for the helper.
fn script(dir: &Path, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("helper.sh");
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).expect("write the script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

fn package() -> Package {
    let files = BTreeMap::from([("Chart.yaml".to_string(), Arc::from("name: c\n"))]);
    Package {
        kind: RenderKind::Helm,
        dir: "components/c/chart".into(),
        root: String::new(),
        files: Arc::new(files),
        binary: Arc::default(),
        key: "k1".into(),
        defaults: json!({}),
    }
}

fn render(helper: &HelperRenderer) -> Result<Vec<String>, PackageError> {
    render_package(helper, &package())
}

fn render_package(helper: &HelperRenderer, p: &Package) -> Result<Vec<String>, PackageError> {
    let values = json!({"a": 1});
    let request = PackageRequest {
        package: p,
        values: &values,
        release: "c",
        namespace: "t-dev",
        capabilities: Default::default(),
        include_crds: false,
        kustomize: None,
    };
    helper.render(&request).map(|docs| {
        docs.into_iter()
            .map(|d| format!("{}={}", d.source, d.text))
            .collect()
    })
}

const DOC: &str = r#"{"id":ID,"documents":[{"source":"c/templates/a.yaml","text":"kind: A"}]}"#;

#[test]
fn files_go_once_per_key_and_again_when_the_helper_lost_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    // 1: files present, answered; 2: no files (the key is known), said missing; 3: the
    // files again, answered.
    let body = format!(
        "read l; case \"$l\" in *'\"files\"'*) echo '{}';; *) echo '{{\"id\":1,\"error\":\"no files\"}}';; esac\n\
         read l; case \"$l\" in *'\"files\"'*) echo '{{\"id\":2,\"error\":\"sent twice\"}}';; *) echo '{{\"id\":2,\"missing\":true}}';; esac\n\
         read l; case \"$l\" in *'\"files\"'*) echo '{}';; *) echo '{{\"id\":3,\"error\":\"not resent\"}}';; esac\n",
        DOC.replace("ID", "1"),
        DOC.replace("ID", "3"),
    );
    let helper = HelperRenderer::at(script(dir.path(), &body));
    assert_eq!(
        render(&helper),
        Ok(vec!["c/templates/a.yaml=kind: A".to_string()])
    );
    assert_eq!(
        render(&helper),
        Ok(vec!["c/templates/a.yaml=kind: A".to_string()])
    );
}

#[test]
fn a_helper_that_stopped_is_started_again_and_its_errors_pass_through() {
    let dir = tempfile::tempdir().expect("tempdir");
    let body = "read l; echo '{\"id\":1,\"error\":\"template: c/templates/a.yaml:1: boom\"}'\n";
    let helper = HelperRenderer::at(script(dir.path(), body));
    let boom = Err(PackageError::Render(
        "template: c/templates/a.yaml:1: boom".to_string(),
    ));
    assert_eq!(render(&helper), boom);
    // The script has exited: the next render starts it again.
    assert_eq!(render(&helper), boom);
}

#[test]
fn a_helper_that_cannot_start_says_how_to_get_it() {
    let helper = HelperRenderer::at(PathBuf::from("/nonexistent/fief-render-helper"));
    match render(&helper) {
        Err(PackageError::Unavailable(text)) => {
            assert!(text.contains("tools/build-render-helper.sh"), "{text}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn requests_from_several_threads_share_one_helper_and_get_their_own_answers() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Both requests are read before either is answered, and the second is answered first:
    // each answer names its request's id in its text.
    let answer = |id: u64| {
        DOC.replace("ID", &id.to_string())
            .replace("kind: A", &format!("kind: A{id}"))
    };
    let body = format!(
        "read a; read b\necho '{}'\necho '{}'\nread c\n",
        answer(2),
        answer(1)
    );
    let helper = HelperRenderer::at(script(dir.path(), &body));
    let mut got: Vec<String> = std::thread::scope(|s| {
        let one = s.spawn(|| render(&helper));
        let two = s.spawn(|| render(&helper));
        [one, two]
            .map(|h| h.join().expect("render thread").expect("rendered").join(""))
            .to_vec()
    });
    got.sort();
    assert_eq!(
        got,
        ["c/templates/a.yaml=kind: A1", "c/templates/a.yaml=kind: A2"]
    );
}

#[test]
fn a_helper_idle_for_a_while_is_ended_and_the_next_request_starts_another() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The same process would answer a second request with an error: a fresh one answers it.
    let body = format!(
        "read l; echo '{}'\nread l; echo '{{\"id\":2,\"error\":\"not ended\"}}'\n",
        DOC.replace("ID", "1")
    );
    let helper = HelperRenderer::at(script(dir.path(), &body))
        .with_idle_exit(std::time::Duration::from_millis(50));
    let ok = Ok(vec!["c/templates/a.yaml=kind: A".to_string()]);
    assert_eq!(render(&helper), ok);
    std::thread::sleep(std::time::Duration::from_millis(400));
    assert_eq!(render(&helper), ok);
}

#[test]
fn a_charts_binary_files_go_once_as_base64_beside_its_text_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The first request carries both maps, the icon's bytes in base64 (Go reads them into a
    // []byte); the second names the key alone.
    let first = r#"*'"files":{"Chart.yaml"'*'"binary":{"files/icon.png":"iVBO/w=="}'*"#;
    let body = format!(
        "read l; case \"$l\" in {first}) echo '{}';; *) echo '{{\"id\":1,\"error\":\"no binary\"}}';; esac\n\
         read l; case \"$l\" in *binary*) echo '{{\"id\":2,\"error\":\"sent twice\"}}';; *) echo '{}';; esac\n",
        DOC.replace("ID", "1"),
        DOC.replace("ID", "2"),
    );
    let helper = HelperRenderer::at(script(dir.path(), &body));
    let mut p = package();
    p.key = "k2".into();
    p.binary = Arc::new(BTreeMap::from([(
        "files/icon.png".to_string(),
        Arc::from(&[0x89, b'P', b'N', 0xff][..]),
    )]));
    let ok = Ok(vec!["c/templates/a.yaml=kind: A".to_string()]);
    assert_eq!(render_package(&helper, &p), ok);
    assert_eq!(render_package(&helper, &p), ok);
}
