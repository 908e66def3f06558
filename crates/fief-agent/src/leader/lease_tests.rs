//! The Lease rule and the record ageing, without a cluster.

use super::*;

const TERM: Duration = Duration::from_secs(15);

#[test]
fn a_free_lease_or_one_this_replica_holds_may_be_written() {
    assert_eq!(decide(None, "a", TERM, Duration::ZERO), Claim::Write);
    assert_eq!(decide(Some("a"), "a", TERM, Duration::ZERO), Claim::Write);
}

#[test]
fn another_holders_lease_is_waited_out_from_when_this_replica_saw_the_renewal() {
    assert_eq!(
        decide(Some("b"), "a", TERM, Duration::from_secs(4)),
        Claim::Wait(Duration::from_secs(11))
    );
    assert_eq!(decide(Some("b"), "a", TERM, TERM), Claim::Write);
    assert_eq!(
        decide(Some("b"), "a", TERM, Duration::from_secs(60)),
        Claim::Write
    );
}

#[test]
fn an_unchanged_record_ages_and_a_renewal_restarts_its_term() {
    let held = Lease {
        spec: Some(LeaseSpec {
            holder_identity: Some("b".into()),
            renew_time: Some(MicroTime(Timestamp::UNIX_EPOCH)),
            ..LeaseSpec::default()
        }),
        ..Lease::default()
    };
    let mut seen = Seen::default();
    assert_eq!(seen.observe(&held), Duration::ZERO);
    std::thread::sleep(Duration::from_millis(20));
    assert!(
        seen.observe(&held) >= Duration::from_millis(20),
        "the same record ages"
    );
    let mut renewed = held.clone();
    if let Some(spec) = renewed.spec.as_mut() {
        spec.renew_time = Some(MicroTime(Timestamp::now()));
    }
    assert_eq!(
        seen.observe(&renewed),
        Duration::ZERO,
        "a renewal restarts the term"
    );
    assert_eq!(holder_of(&renewed), Some("b"));
    let mut released = renewed;
    if let Some(spec) = released.spec.as_mut() {
        spec.holder_identity = Some(String::new());
    }
    assert_eq!(holder_of(&released), None, "an empty holder is no holder");
}
