//! Push webhooks: is this request really from the git host, and which branch was pushed?
//!
//! In: the raw request body, the secret shared with the git host, and the signature or token
//! header as received. Out: a yes/no for authenticity and the pushed branch name. Pure: no I/O,
//! no logging (the secret and the received header are never printed). Comparisons that involve
//! the secret take the same time whatever the input, so a caller cannot guess it byte by byte.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// GitHub: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of body>`; constant-time compare.
///
/// False when the header is missing, malformed (no `sha256=` prefix, not hex, wrong length),
/// does not match, or when `secret` is empty (an empty secret would let anyone sign).
pub fn verify_github(secret: &[u8], body: &[u8], header: Option<&str>) -> bool {
    if secret.is_empty() {
        return false;
    }
    let Some(digits) = header.and_then(|h| h.trim().strip_prefix("sha256=")) else {
        return false;
    };
    // Lower- or upper-case hex; an odd length or a non-hex character is refused.
    let Ok(signature) = hex::decode(digits) else {
        return false;
    };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
        return false;
    };
    mac.update(body);
    // `verify_slice` compares in constant time and refuses a slice of the wrong length.
    mac.verify_slice(&signature).is_ok()
}

/// GitLab: `X-Gitlab-Token` equals the secret; constant-time compare.
///
/// Both sides are hashed first, so neither the content nor the length of the secret shows in
/// the comparison time. False when the header is missing or `secret` is empty.
pub fn verify_gitlab(secret: &[u8], header: Option<&str>) -> bool {
    let Some(token) = header else {
        return false;
    };
    if secret.is_empty() {
        return false;
    }
    let expected = Sha256::digest(secret);
    let received = Sha256::digest(token.as_bytes());
    expected
        .iter()
        .zip(received.iter())
        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
        == 0
}

/// The branch a push payload (GitHub or GitLab JSON, `"ref": "refs/heads/<b>"`) is for.
///
/// None for a body that is not JSON, has no string `ref`, or pushes something other than a
/// branch (a tag, `refs/tags/...`).
pub fn pushed_branch(body: &[u8]) -> Option<String> {
    let payload: serde_json::Value = serde_json::from_slice(body).ok()?;
    let git_ref = payload.get("ref")?.as_str()?;
    let branch = git_ref.strip_prefix("refs/heads/")?;
    if branch.is_empty() {
        return None;
    }
    Some(branch.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    // GitHub's documented example: secret "It's a Secret to Everybody", payload
    // "Hello, World!".
    const GITHUB_SECRET: &[u8] = b"It's a Secret to Everybody";
    const GITHUB_BODY: &[u8] = b"Hello, World!";
    const GITHUB_SIGNATURE: &str =
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

    #[test]
    fn github_signature_of_the_documented_example_is_accepted() {
        assert!(verify_github(
            GITHUB_SECRET,
            GITHUB_BODY,
            Some(GITHUB_SIGNATURE)
        ));
        assert!(verify_github(
            GITHUB_SECRET,
            GITHUB_BODY,
            Some(
                &GITHUB_SIGNATURE
                    .to_uppercase()
                    .replace("SHA256=", "sha256=")
            )
        ));
    }

    #[test]
    fn github_signature_of_another_body_or_secret_is_refused() {
        assert!(!verify_github(
            GITHUB_SECRET,
            b"Hello, World?",
            Some(GITHUB_SIGNATURE)
        ));
        assert!(!verify_github(
            b"another secret",
            GITHUB_BODY,
            Some(GITHUB_SIGNATURE)
        ));
        let mut flipped = GITHUB_SIGNATURE.to_string();
        flipped.replace_range(flipped.len() - 1.., "6");
        assert!(!verify_github(GITHUB_SECRET, GITHUB_BODY, Some(&flipped)));
    }

    #[test]
    fn github_missing_or_malformed_header_is_refused() {
        assert!(!verify_github(GITHUB_SECRET, GITHUB_BODY, None));
        assert!(!verify_github(GITHUB_SECRET, GITHUB_BODY, Some("")));
        // The SHA-1 header format is not accepted.
        assert!(!verify_github(
            GITHUB_SECRET,
            GITHUB_BODY,
            Some("sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59")
        ));
        // No prefix.
        assert!(!verify_github(
            GITHUB_SECRET,
            GITHUB_BODY,
            Some(&GITHUB_SIGNATURE["sha256=".len()..])
        ));
        // Not hex.
        assert!(!verify_github(
            GITHUB_SECRET,
            GITHUB_BODY,
            Some("sha256=zz7107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17")
        ));
    }

    #[test]
    fn github_signature_of_the_wrong_length_is_refused() {
        // A prefix of the right signature (truncated MAC) and an odd number of digits.
        let truncated = &GITHUB_SIGNATURE[..GITHUB_SIGNATURE.len() - 2];
        assert!(!verify_github(GITHUB_SECRET, GITHUB_BODY, Some(truncated)));
        let odd = &GITHUB_SIGNATURE[..GITHUB_SIGNATURE.len() - 1];
        assert!(!verify_github(GITHUB_SECRET, GITHUB_BODY, Some(odd)));
        let longer = format!("{GITHUB_SIGNATURE}00");
        assert!(!verify_github(GITHUB_SECRET, GITHUB_BODY, Some(&longer)));
        assert!(!verify_github(GITHUB_SECRET, GITHUB_BODY, Some("sha256=")));
    }

    #[test]
    fn empty_secret_never_verifies() {
        let mut mac = Hmac::<Sha256>::new_from_slice(b"").unwrap();
        mac.update(GITHUB_BODY);
        let digits = hex::encode(mac.finalize().into_bytes());
        assert!(!verify_github(
            b"",
            GITHUB_BODY,
            Some(&format!("sha256={digits}"))
        ));
        assert!(!verify_gitlab(b"", Some("")));
    }

    #[test]
    fn gitlab_token_must_equal_the_secret() {
        assert!(verify_gitlab(b"s3cret-token", Some("s3cret-token")));
        assert!(!verify_gitlab(b"s3cret-token", Some("s3cret-tokem")));
        assert!(!verify_gitlab(b"s3cret-token", Some("s3cret-token ")));
        assert!(!verify_gitlab(b"s3cret-token", Some("s3cret")));
        assert!(!verify_gitlab(b"s3cret-token", Some("")));
        assert!(!verify_gitlab(b"s3cret-token", None));
    }

    #[test]
    fn pushed_branch_reads_github_and_gitlab_push_payloads() {
        let github = br#"{"ref":"refs/heads/main","before":"0","after":"1","repository":{"full_name":"o/r"}}"#;
        assert_eq!(pushed_branch(github).as_deref(), Some("main"));
        let gitlab = br#"{"object_kind":"push","ref":"refs/heads/feature/x","checkout_sha":"1"}"#;
        assert_eq!(pushed_branch(gitlab).as_deref(), Some("feature/x"));
    }

    #[test]
    fn pushed_branch_is_none_for_tags_and_bad_payloads() {
        assert_eq!(pushed_branch(br#"{"ref":"refs/tags/v1.0"}"#), None);
        assert_eq!(pushed_branch(br#"{"ref":"refs/heads/"}"#), None);
        assert_eq!(pushed_branch(br#"{"ref":42}"#), None);
        assert_eq!(
            pushed_branch(br#"{"zen":"Keep it logically awesome."}"#),
            None
        );
        assert_eq!(pushed_branch(b"not json"), None);
        assert_eq!(pushed_branch(b""), None);
    }
}
