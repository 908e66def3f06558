//! Access to the web view when `--web-token-file` is set: a request carries the token as
//! `Authorization: Bearer <token>`, or the session cookie the login form sets.
//!
//! In: the configured token and a request's headers (or the token typed into the login
//! form). Out: allowed or not, and the `Set-Cookie` value of a session. Pure. The cookie holds
//! an HMAC of the token, not the token; every comparison hashes both sides first, so its time
//! shows neither the content nor the length of the token. Nothing here logs.

use axum::http::HeaderMap;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::webhook::verify_gitlab;

/// The session cookie's name.
pub const COOKIE: &str = "fief_web";

/// The token a request must carry (`None`: the view is open).
#[derive(Clone, Default)]
pub struct Access {
    token: Option<Vec<u8>>,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl Access {
    /// Requests must carry `token` (`None` or empty: the view is open).
    pub fn new(token: Option<Vec<u8>>) -> Access {
        Access {
            token: token.filter(|t| !t.is_empty()),
        }
    }

    /// Whether a token is required.
    pub fn required(&self) -> bool {
        self.token.is_some()
    }

    /// Whether `headers` carry the token or a session cookie (always, when the view is open).
    pub fn allows(&self, headers: &HeaderMap) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        let bearer = headers
            .get_all(axum::http::header::AUTHORIZATION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .filter_map(|v| v.strip_prefix("Bearer "))
            .any(|given| verify_gitlab(token, Some(given.trim())));
        if bearer {
            return true;
        }
        let session = session_of(token);
        headers
            .get_all(axum::http::header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|c| c.trim().strip_prefix(COOKIE)?.strip_prefix('='))
            .any(|given| verify_gitlab(session.as_bytes(), Some(given)))
    }

    /// The `Set-Cookie` value of a session when `given` is the token; `None` when it is not
    /// (or when the view is open).
    pub fn login(&self, given: &str) -> Option<String> {
        let token = self.token.as_ref()?;
        verify_gitlab(token, Some(given.trim())).then(|| {
            format!(
                "{COOKIE}={}; Path=/ui; HttpOnly; SameSite=Strict",
                session_of(token)
            )
        })
    }
}

/// The session value of `token`: hex HMAC-SHA256 of a fixed label keyed by the token.
fn session_of(token: &[u8]) -> String {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(token) else {
        return String::new();
    };
    mac.update(b"fief web session v1");
    hex::encode(mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(name: axum::http::HeaderName, value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(name, value.parse().expect("header value"));
        h
    }

    #[test]
    fn an_open_view_allows_every_request() {
        assert!(Access::new(None).allows(&HeaderMap::new()));
        assert!(Access::new(Some(Vec::new())).allows(&HeaderMap::new()));
    }

    #[test]
    fn the_bearer_token_or_the_session_cookie_is_required() {
        let access = Access::new(Some(b"t0ken".to_vec()));
        assert!(!access.allows(&HeaderMap::new()));
        let auth = axum::http::header::AUTHORIZATION;
        assert!(access.allows(&headers(auth.clone(), "Bearer t0ken")));
        assert!(!access.allows(&headers(auth.clone(), "Bearer t0ke")));
        assert!(!access.allows(&headers(auth, "Basic t0ken")));
        assert!(access.login("wrong").is_none());
        let set = access.login("t0ken").expect("session");
        assert!(!set.contains("t0ken"), "the cookie holds no token: {set}");
        let cookie = set.split(';').next().expect("name=value");
        let cookies = format!("other=1; {cookie}");
        assert!(access.allows(&headers(axum::http::header::COOKIE, &cookies)));
        assert!(!access.allows(&headers(axum::http::header::COOKIE, "fief_web=00")));
    }

    #[test]
    fn debug_output_hides_the_token() {
        let text = format!("{:?}", Access::new(Some(b"t0ken".to_vec())));
        assert!(!text.contains("t0ken"), "{text}");
    }
}
