//! Git credentials and addresses: token user names, URL redaction, and ssh host and port
//! parsing.
//!
//! In: URLs. Out: user names, redacted URLs, local paths and ssh hosts and ports. Pure.

use std::path::PathBuf;

/// The user name sent with an HTTPS token when the URL names none: GitLab wants `oauth2`,
/// GitHub (and Gitea, Bitbucket app passwords aside) accept `x-access-token`.
pub(super) fn token_user(url: &str) -> &'static str {
    let host = url
        .split_once("://")
        .map(|(_, rest)| rest)
        .unwrap_or(url)
        .split('/')
        .next()
        .unwrap_or("");
    if host.to_ascii_lowercase().contains("gitlab") {
        "oauth2"
    } else {
        "x-access-token"
    }
}

/// `url` with any userinfo (`user:password@`) removed: `https://x:tok@host/r` → `https://host/r`,
/// `git@host:org/r` → `host:org/r`. Local paths are returned unchanged.
pub fn redact_url(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        let (authority, path) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => (rest, ""),
        };
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        return format!("{scheme}://{host}{path}");
    }
    // scp-like `user@host:path`: the part before the first `:` has no `/`.
    if let Some((before, after)) = url.split_once(':')
        && !before.contains('/')
        && let Some((_, host)) = before.rsplit_once('@')
    {
        return format!("{host}:{after}");
    }
    url.to_string()
}

/// The directory a local URL (a path or `file://`) names; None for network URLs.
pub(super) fn local_path(url: &str) -> Option<PathBuf> {
    if let Some(path) = url.strip_prefix("file://") {
        return Some(PathBuf::from(path));
    }
    if url.contains("://") || ssh_host_port(url).is_some() {
        return None;
    }
    Some(PathBuf::from(url))
}

/// Host and explicit port of an SSH URL (`ssh://[user@]host[:port]/path` or scp-like
/// `[user@]host:path`); None for other URLs.
pub(super) fn ssh_host_port(url: &str) -> Option<(String, Option<u16>)> {
    if let Some(rest) = url
        .strip_prefix("ssh://")
        .or_else(|| url.strip_prefix("git+ssh://"))
        .or_else(|| url.strip_prefix("ssh+git://"))
    {
        let authority = rest.split('/').next().unwrap_or("");
        let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        if let Some(bracketed) = host_port.strip_prefix('[') {
            let (host, after) = bracketed.split_once(']')?;
            let port = after.strip_prefix(':').and_then(|p| p.parse().ok());
            return Some((host.to_string(), port));
        }
        return Some(match host_port.rsplit_once(':') {
            Some((host, port)) => (host.to_string(), port.parse().ok()),
            None => (host_port.to_string(), None),
        });
    }
    if url.contains("://") {
        return None;
    }
    let (before, _) = url.split_once(':')?;
    if before.contains('/') {
        return None;
    }
    let host = before.rsplit_once('@').map_or(before, |(_, h)| h);
    Some((host.trim_matches(['[', ']']).to_string(), None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_url_removes_userinfo() {
        assert_eq!(
            redact_url("https://x-access-token:s3cret@github.com/o/r.git"),
            "https://github.com/o/r.git"
        );
        assert_eq!(redact_url("https://s3cret@host:8443"), "https://host:8443");
        assert_eq!(
            redact_url("ssh://git@example.com:2222/o/r.git"),
            "ssh://example.com:2222/o/r.git"
        );
        assert_eq!(redact_url("git@github.com:o/r.git"), "github.com:o/r.git");
        assert_eq!(redact_url("/srv/git/r.git"), "/srv/git/r.git");
        assert_eq!(redact_url("file:///srv/git/r.git"), "file:///srv/git/r.git");
        assert_eq!(
            redact_url("git://127.0.0.1:9418/r.git"),
            "git://127.0.0.1:9418/r.git"
        );
    }

    #[test]
    fn ssh_host_and_port_are_read_from_both_url_forms() {
        assert_eq!(
            ssh_host_port("ssh://git@example.com:2222/o/r.git"),
            Some(("example.com".to_string(), Some(2222)))
        );
        assert_eq!(
            ssh_host_port("ssh://example.com/o/r.git"),
            Some(("example.com".to_string(), None))
        );
        assert_eq!(
            ssh_host_port("git@github.com:o/r.git"),
            Some(("github.com".to_string(), None))
        );
        assert_eq!(ssh_host_port("https://github.com/o/r.git"), None);
        assert_eq!(ssh_host_port("/srv/git/r.git"), None);
    }

    #[test]
    fn token_user_is_oauth2_for_gitlab_and_x_access_token_elsewhere() {
        assert_eq!(token_user("https://gitlab.example.com/g/r.git"), "oauth2");
        assert_eq!(token_user("https://github.com/o/r.git"), "x-access-token");
    }
}
