//! Git credentials and server identity: token user names, URL redaction, ssh host and
//! port parsing, and OpenSSH `known_hosts` matching.
//!
//! In: URLs, host names, host keys and known_hosts text. Out: user names, redacted URLs and
//! trust verdicts. Pure.

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

/// Whether `key` (the raw SSH host key blob) is a known key of `host` in a known_hosts file.
///
/// Lines are `[marker] patterns keytype base64key [comment]`; patterns are comma-separated
/// host names or `[host]:port`, with `*` and `?` wildcards and `!` negation. `@revoked` lines
/// refuse their key; `@cert-authority` lines and hashed (`|1|...`) host names are not
/// supported and never match.
pub(super) fn known_hosts_verdict(
    text: &str,
    host: &str,
    port: Option<u16>,
    key: &[u8],
) -> Result<(), String> {
    let name = match port {
        Some(p) if p != 22 => format!("[{host}]:{p}"),
        _ => host.to_string(),
    };
    let mut known = false;
    let mut host_listed = false;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split_whitespace();
        let Some(mut first) = fields.next() else {
            continue;
        };
        let mut revoked = false;
        if first.starts_with('@') {
            match first {
                "@revoked" => revoked = true,
                _ => continue,
            }
            let Some(next) = fields.next() else {
                continue;
            };
            first = next;
        }
        let (Some(_keytype), Some(encoded)) = (fields.next(), fields.next()) else {
            continue;
        };
        if !hosts_match(first, &name) {
            continue;
        }
        let Some(line_key) = decode_base64(encoded) else {
            continue;
        };
        let same = line_key == key;
        if revoked && same {
            return Err(format!("the SSH host key of {name} is marked @revoked"));
        }
        if !revoked {
            host_listed = true;
            known |= same;
        }
    }
    if known {
        Ok(())
    } else if host_listed {
        Err(format!(
            "the SSH host key of {name} does not match the known_hosts file (possible man-in-the-middle)"
        ))
    } else {
        Err(format!("{name} is not in the known_hosts file"))
    }
}

pub(super) fn hosts_match(patterns: &str, name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let mut matched = false;
    for pattern in patterns.split(',') {
        let pattern = pattern.to_ascii_lowercase();
        if let Some(negated) = pattern.strip_prefix('!') {
            if glob(negated.as_bytes(), name.as_bytes()) {
                return false;
            }
        } else if glob(pattern.as_bytes(), name.as_bytes()) {
            matched = true;
        }
    }
    matched
}

/// `*` (any run) and `?` (any one byte) matching, as OpenSSH does for host patterns.
pub(super) fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && (pattern[p] == b'?' || pattern[p] == text[t]) {
            p += 1;
            t += 1;
        } else if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

pub(super) fn decode_base64(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(text).ok()
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

    const KEY: &[u8] = b"\0\0\0\x0bssh-ed25519\0\0\0\x20abcdefghijklmnopqrstuvwxyz012345";
    const OTHER: &[u8] = b"\0\0\0\x0bssh-ed25519\0\0\0\x20ABCDEFGHIJKLMNOPQRSTUVWXYZ012345";

    fn b64(bytes: &[u8]) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    #[test]
    fn known_host_with_the_same_key_is_trusted() {
        let text = format!(
            "# comment\n\ngithub.com,140.82.121.4 ssh-ed25519 {}\n",
            b64(KEY)
        );
        assert_eq!(known_hosts_verdict(&text, "github.com", None, KEY), Ok(()));
        assert_eq!(
            known_hosts_verdict(&text, "140.82.121.4", Some(22), KEY),
            Ok(())
        );
    }

    #[test]
    fn unknown_host_or_changed_key_is_refused() {
        let text = format!("github.com ssh-ed25519 {}\n", b64(KEY));
        let unknown = known_hosts_verdict(&text, "gitlab.com", None, KEY).unwrap_err();
        assert!(unknown.contains("not in the known_hosts"), "{unknown}");
        let changed = known_hosts_verdict(&text, "github.com", None, OTHER).unwrap_err();
        assert!(changed.contains("does not match"), "{changed}");
        assert!(known_hosts_verdict("", "github.com", None, KEY).is_err());
    }

    #[test]
    fn known_host_on_another_port_needs_the_bracketed_form() {
        let text = format!("[git.example.com]:2222 ssh-ed25519 {}\n", b64(KEY));
        assert!(known_hosts_verdict(&text, "git.example.com", Some(2222), KEY).is_ok());
        assert!(known_hosts_verdict(&text, "git.example.com", None, KEY).is_err());
    }

    #[test]
    fn wildcards_negation_and_revoked_keys_follow_openssh() {
        let text = format!(
            "*.example.com,!evil.example.com ssh-ed25519 {}\n@revoked * ssh-ed25519 {}\n@cert-authority * ssh-ed25519 {}\n",
            b64(KEY),
            b64(OTHER),
            b64(OTHER)
        );
        assert!(known_hosts_verdict(&text, "git.example.com", None, KEY).is_ok());
        assert!(known_hosts_verdict(&text, "evil.example.com", None, KEY).is_err());
        let revoked = known_hosts_verdict(&text, "git.example.com", None, OTHER).unwrap_err();
        assert!(revoked.contains("@revoked"), "{revoked}");
    }

    #[test]
    fn hashed_known_hosts_entries_never_match() {
        let text = format!(
            "|1|JfKTdBh7rNbXkVAQCRp4OQoPfmI=|USECr3SWf1JUPsms5AqfD5QfxkM= ssh-ed25519 {}\n",
            b64(KEY)
        );
        assert!(known_hosts_verdict(&text, "github.com", None, KEY).is_err());
    }

    #[test]
    fn glob_matches_like_openssh_host_patterns() {
        assert!(glob(b"*", b"anything"));
        assert!(glob(b"git?.example.com", b"git1.example.com"));
        assert!(!glob(b"git?.example.com", b"git12.example.com"));
        assert!(glob(b"*.example.com", b"a.b.example.com"));
        assert!(!glob(b"*.example.com", b"example.com"));
    }
}
