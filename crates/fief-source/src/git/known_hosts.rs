//! SSH server identity: whether a host key is trusted by an OpenSSH `known_hosts` file.
//!
//! In: the known_hosts text, the host name and port fief connects to, and the raw host key
//! blob the server presented. Out: a verdict (trusted, or a one-line reason it is not). Pure.
//!
//! Lines are parsed by the `ssh-key` crate (`[marker] patterns keytype base64key [comment]`);
//! the matching of a host against a line's patterns is done here, as OpenSSH does it:
//! comma-separated names or `[host]:port`, with `*` and `?` wildcards and `!` negation, or
//! one hashed name (`|1|base64 salt|base64 HMAC-SHA1(salt, name)`, as `ssh-keyscan -H` and
//! `HashKnownHosts yes` write them). A host on port 22 is looked up by its name, on any other
//! port as `[host]:port`.
//!
//! A `@revoked` line whose patterns match refuses its key outright. `@cert-authority` lines
//! name a key that signs host certificates, not a host key, so they never vouch for a key
//! here. Lines that cannot be parsed are skipped.

use hmac::{Hmac, Mac};
use sha1::Sha1;
use ssh_key::known_hosts::{Entry, HostPatterns, Marker};

/// Whether `key` (the raw SSH host key blob) is a known key of `host` (on `port`, 22 when
/// `None`) in the known_hosts file `text`. `Err` says why not: the key is revoked, the host is
/// listed with other keys only, or the host is not listed.
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
    let lookup = name.to_ascii_lowercase();
    let mut known = false;
    let mut host_listed = false;
    for entry in text.lines().filter_map(parse_line) {
        let revoked = match entry.marker() {
            None => false,
            Some(Marker::Revoked) => true,
            Some(Marker::CertAuthority) => continue,
        };
        if !patterns_match(entry.host_patterns(), &lookup) {
            continue;
        }
        let Ok(line_key) = entry.public_key().to_bytes() else {
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

/// One known_hosts line as an entry; None for blank lines, comments and lines that do not
/// parse. Fields may be separated by any run of blanks, as OpenSSH allows; the parser wants
/// single spaces.
fn parse_line(line: &str) -> Option<Entry> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let fields: Vec<&str> = line.split_whitespace().collect();
    fields.join(" ").parse().ok()
}

/// Whether `name` (lowercase `host` or `[host]:port`) matches a line's host patterns.
fn patterns_match(patterns: &HostPatterns, name: &str) -> bool {
    match patterns {
        HostPatterns::Patterns(list) => hosts_match(list, name),
        HostPatterns::HashedName { salt, hash } => hashed_name(salt, name) == Some(*hash),
    }
}

/// HMAC-SHA1 of `name` keyed by `salt`: how OpenSSH hashes a known_hosts host name.
fn hashed_name(salt: &[u8], name: &str) -> Option<[u8; 20]> {
    let mut mac = Hmac::<Sha1>::new_from_slice(salt).ok()?;
    mac.update(name.as_bytes());
    Some(mac.finalize().into_bytes().into())
}

/// OpenSSH's rule for a pattern list: some pattern matches and no negated (`!`) one does.
fn hosts_match(patterns: &[String], name: &str) -> bool {
    let mut matched = false;
    for pattern in patterns {
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
fn glob(pattern: &[u8], text: &[u8]) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"\0\0\0\x0bssh-ed25519\0\0\0\x20abcdefghijklmnopqrstuvwxyz012345";
    const OTHER: &[u8] = b"\0\0\0\x0bssh-ed25519\0\0\0\x20ABCDEFGHIJKLMNOPQRSTUVWXYZ012345";

    fn b64(bytes: &[u8]) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// A hashed known_hosts host field for `name`, as `ssh-keyscan -H` writes it.
    fn hashed(salt: &[u8], name: &str) -> String {
        let mut mac = Hmac::<Sha1>::new_from_slice(salt).expect("HMAC takes any key length");
        mac.update(name.as_bytes());
        format!("|1|{}|{}", b64(salt), b64(&mac.finalize().into_bytes()))
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
    fn fields_may_be_separated_by_tabs_and_runs_of_spaces() {
        let text = format!("  github.com\tssh-ed25519   {} a comment\n", b64(KEY));
        assert_eq!(known_hosts_verdict(&text, "GitHub.com", None, KEY), Ok(()));
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
        assert!(known_hosts_verdict(&text, "git.example.com", Some(2223), KEY).is_err());
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
    fn a_revoked_key_is_refused_even_when_also_listed_as_known() {
        let text = format!(
            "git.example.com ssh-ed25519 {key}\n@revoked git.example.com ssh-ed25519 {key}\n",
            key = b64(KEY)
        );
        let revoked = known_hosts_verdict(&text, "git.example.com", None, KEY).unwrap_err();
        assert!(revoked.contains("@revoked"), "{revoked}");
    }

    #[test]
    fn cert_authority_lines_never_vouch_for_a_host_key() {
        let text = format!("@cert-authority *.example.com ssh-ed25519 {}\n", b64(KEY));
        let refused = known_hosts_verdict(&text, "git.example.com", None, KEY).unwrap_err();
        assert!(refused.contains("not in the known_hosts"), "{refused}");
    }

    #[test]
    fn hashed_entry_matches_its_host_only() {
        let salt = b"twenty bytes of salt";
        let text = format!("{} ssh-ed25519 {}\n", hashed(salt, "github.com"), b64(KEY));
        assert_eq!(known_hosts_verdict(&text, "github.com", None, KEY), Ok(()));
        assert_eq!(
            known_hosts_verdict(&text, "GitHub.com", Some(22), KEY),
            Ok(())
        );
        let changed = known_hosts_verdict(&text, "github.com", None, OTHER).unwrap_err();
        assert!(changed.contains("does not match"), "{changed}");
        let other = known_hosts_verdict(&text, "gitlab.com", None, KEY).unwrap_err();
        assert!(other.contains("not in the known_hosts"), "{other}");
    }

    #[test]
    fn hashed_entry_on_another_port_hashes_the_bracketed_form() {
        let salt = b"another salt";
        let text = format!(
            "{} ssh-ed25519 {}\n",
            hashed(salt, "[git.example.com]:2222"),
            b64(KEY)
        );
        assert!(known_hosts_verdict(&text, "git.example.com", Some(2222), KEY).is_ok());
        assert!(known_hosts_verdict(&text, "git.example.com", None, KEY).is_err());
    }

    #[test]
    fn hashed_revoked_entry_refuses_its_key() {
        let salt = b"salt";
        let text = format!(
            "*.example.com ssh-ed25519 {key}\n@revoked {} ssh-ed25519 {key}\n",
            hashed(salt, "git.example.com"),
            key = b64(KEY)
        );
        let revoked = known_hosts_verdict(&text, "git.example.com", None, KEY).unwrap_err();
        assert!(revoked.contains("@revoked"), "{revoked}");
        assert!(known_hosts_verdict(&text, "www.example.com", None, KEY).is_ok());
    }

    #[test]
    fn lines_that_do_not_parse_are_skipped() {
        let text = format!(
            "@bogus * ssh-ed25519 {key}\ngithub.com ssh-ed25519 not-base64\ngithub.com\ngithub.com ssh-ed25519 {key}\n",
            key = b64(KEY)
        );
        assert_eq!(known_hosts_verdict(&text, "github.com", None, KEY), Ok(()));
    }

    /// GitHub's published host keys, one of each type `ssh-keyscan` reports.
    const GITHUB: &str = "\
github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl
github.com ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBEmKSENjQEezOmxkZMy7opKgwFB9nkt5YRrYMjNuG5N87uRgg6CLrbo5wAdT/y6v0mKV0U2w0WZ2YB/++Tpockg=
github.com ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQCj7ndNxQowgcQnjshcLrqPEiiphnt+VTTvDP6mHBL9j1aNUkY4Ue1gvwnGLVlOhGeYrnZaMgRK6+PKCUXaDbC7qtbW8gIkhL7aGCsOr/C56SJMy/BCZfxd1nWzAOxSDPgVsmerOBYfNqltV9/hWCqBywINIR+5dIg6JTJ72pcEpEjcYgXkE2YEFXV1JHnsKgbLWNlhScqb2UmyRkQyytRLtL+38TGxkxCflmO+5Z8CSSNY7GidjMIZ7Q4zMjA2n1nGrlTDkzwDCsw+wqFPGQA179cnfGWOWRVruj16z6XyvxvjJwbz0wQZ75XK5tKSb7FNyeIEs4TT4jk+S4dhPeAUC5y+bDYirYgM4GC7uEnztnZyaVWQ7B381AK4Qdrwt51ZqExKbQpTUNn+EjqoTwvqNj4kqx5QUCI0ThS/YkOxJCXmPUWZbhjpCg56i+2aB6CmK2JGhn57K5mj0MNdBXA4/WnwH6XoPWJzK5Nyu2zB3nAZp+S5hpQs+p1vN1/wsjk=
";

    #[test]
    fn every_key_type_of_a_real_keyscan_is_recognised() {
        use base64::Engine as _;
        for line in GITHUB.lines() {
            let encoded = line.rsplit(' ').next().unwrap_or_default();
            let key = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .expect("a valid key in the test data");
            assert_eq!(
                known_hosts_verdict(GITHUB, "github.com", None, &key),
                Ok(()),
                "{line}"
            );
        }
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
