//! When an object counts as current, without a cluster.

use super::*;

fn applied(live: Digest, version: u64) -> Applied {
    Applied {
        live,
        version,
        deadline: Instant::now(),
    }
}

fn seen(hash: u64, version: u64) -> Seen {
    Seen {
        hash,
        version,
        health: health(&serde_json::json!({"kind": "ConfigMap"})),
    }
}

#[test]
fn an_object_is_current_at_the_applied_hash_or_at_the_applied_resource_version() {
    let live = Digest::from_hex(&"ab".repeat(32));
    let other = Digest::from_hex(&"cd".repeat(32));
    assert!(seen(live.short(), 0).is(&applied(live, 7)), "same hash");
    assert!(
        seen(0, 7).is(&applied(live, 7)),
        "not hashed (its tenant not rendered when seen), same version"
    );
    assert!(!seen(other.short(), 6).is(&applied(live, 7)), "older");
    assert!(
        !seen(0, 0).is(&applied(live, 0)),
        "unknown versions never match"
    );
}

#[test]
fn resource_versions_that_are_not_numbers_are_unknown() {
    assert_eq!(version_number(Some("12345")), 12345);
    assert_eq!(version_number(Some("opaque-v1")), 0);
    assert_eq!(version_number(None), 0);
}
