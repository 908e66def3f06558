//! The messages fief sends: what each kind is about, its severity, whether only platform
//! channels receive it, and the fields every provider format is built from.
//!
//! In: what the transition tracker ([`super::state`]) decided. Out: [`Message`] values, plain
//! data. No URL, key or secret value is ever part of a message.

use std::time::SystemTime;

/// What a message is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// A tenant's sync or render failed (the first error, with its file and line).
    SyncFailed,
    /// A tenant's applied objects are unhealthy (naming them).
    Stalled,
    /// A tenant that failed or stalled is fine again.
    Recovered,
    /// Objects a prune would delete still run (the reason).
    PruneHeld,
    /// A tenant file left git; its objects are left running.
    Orphaned,
    /// The rollout halted (platform channels only).
    RolloutHalted,
    /// The rollout's last wave is done (platform channels only).
    RolloutComplete,
    /// A channel's rate limit held messages back: how many.
    Suppressed,
    /// `fief notify test`: a person checking that the channel receives messages.
    Test,
}

/// How bad it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Something is broken and needs a person.
    Error,
    /// Something needs attention.
    Warning,
    /// For the record.
    Info,
}

impl Severity {
    /// `error`, `warning` or `info`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

impl Kind {
    /// The kind as the webhook body writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::SyncFailed => "syncFailed",
            Kind::Stalled => "stalled",
            Kind::Recovered => "recovered",
            Kind::PruneHeld => "pruneHeld",
            Kind::Orphaned => "orphaned",
            Kind::RolloutHalted => "rolloutHalted",
            Kind::RolloutComplete => "rolloutComplete",
            Kind::Suppressed => "suppressed",
            Kind::Test => "test",
        }
    }

    /// A short title for chat formats.
    pub fn title(self) -> &'static str {
        match self {
            Kind::SyncFailed => "sync failed",
            Kind::Stalled => "stalled",
            Kind::Recovered => "recovered",
            Kind::PruneHeld => "prune held",
            Kind::Orphaned => "orphaned",
            Kind::RolloutHalted => "rollout halted",
            Kind::RolloutComplete => "rollout complete",
            Kind::Suppressed => "messages suppressed",
            Kind::Test => "test message",
        }
    }

    /// The Alertmanager `alertname` of the kind.
    pub fn alertname(self) -> &'static str {
        match self {
            Kind::SyncFailed => "FiefSyncFailed",
            Kind::Stalled => "FiefTenantStalled",
            Kind::Recovered => "FiefTenantRecovered",
            Kind::PruneHeld => "FiefPruneHeld",
            Kind::Orphaned => "FiefTenantOrphaned",
            Kind::RolloutHalted => "FiefRolloutHalted",
            Kind::RolloutComplete => "FiefRolloutComplete",
            Kind::Suppressed => "FiefNotificationsSuppressed",
            Kind::Test => "FiefTestMessage",
        }
    }

    /// Its severity.
    pub fn severity(self) -> Severity {
        match self {
            Kind::SyncFailed | Kind::Stalled | Kind::RolloutHalted => Severity::Error,
            Kind::PruneHeld | Kind::Orphaned | Kind::Suppressed => Severity::Warning,
            Kind::Recovered | Kind::RolloutComplete | Kind::Test => Severity::Info,
        }
    }

    /// Whether only the platform's channels receive it (the rollout spans tenants).
    pub fn platform_only(self) -> bool {
        matches!(self, Kind::RolloutHalted | Kind::RolloutComplete)
    }

    /// Whether the message stands for a state that lasts until a [`Kind::Recovered`] ends
    /// it (an Alertmanager alert kept firing), rather than one event.
    pub fn is_condition(self) -> bool {
        matches!(self, Kind::SyncFailed | Kind::Stalled)
    }
}

/// One message, before it is put in a provider's format.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The tenant it is about (`None`: the rollout, or a channel's own summary).
    pub tenant: Option<String>,
    /// What it is about.
    pub kind: Kind,
    /// The details: the first error, the unhealthy objects and why, the reason.
    pub text: String,
    /// The commit the agent synced (may be empty).
    pub commit: String,
    /// The objects it names (`group/kind/namespace/name`), if any.
    pub objects: Vec<String>,
    /// When the agent learned it.
    pub at: SystemTime,
    /// For [`Kind::Recovered`]: the kind it ends (its alert is resolved).
    pub resolves: Option<Kind>,
}

/// Longest text a message carries; longer ones are cut (at a character boundary).
pub const MAX_TEXT: usize = 2000;

/// `text` cut to at most [`MAX_TEXT`] bytes, marked when cut.
pub fn clip(text: &str) -> String {
    if text.len() <= MAX_TEXT {
        return text.to_string();
    }
    let mut end = MAX_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

impl Message {
    /// A message about `tenant` (or none) of `kind` with `text`, learned now.
    pub fn new(tenant: Option<&str>, kind: Kind, text: &str, commit: &str) -> Message {
        Message {
            tenant: tenant.map(str::to_string),
            kind,
            text: clip(text),
            commit: commit.to_string(),
            objects: Vec::new(),
            at: SystemTime::now(),
            resolves: None,
        }
    }

    /// One line for chat formats: `acme: sync failed`, `rollout halted`.
    pub fn headline(&self) -> String {
        match &self.tenant {
            Some(t) => format!("{t}: {}", self.kind.title()),
            None => self.kind.title().to_string(),
        }
    }

    /// The kind an alert of this message is named for: a recovery's is the kind it ends (so
    /// the Alertmanager alert it resolves has the same labels).
    pub fn alert_kind(&self) -> Kind {
        self.resolves.unwrap_or(self.kind)
    }
}

/// `at` as RFC 3339 (UTC, seconds).
pub fn rfc3339(at: SystemTime) -> String {
    k8s_openapi::jiff::Timestamp::try_from(at)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_cut_at_a_character_boundary() {
        let long = "é".repeat(MAX_TEXT);
        let cut = clip(&long);
        assert!(cut.len() <= MAX_TEXT + '…'.len_utf8());
        assert!(cut.ends_with('…'));
        assert_eq!(clip("short"), "short");
    }

    #[test]
    fn a_recovery_is_an_alert_of_the_kind_it_ends() {
        let mut m = Message::new(Some("acme"), Kind::Recovered, "ok", "c1");
        assert_eq!(m.alert_kind(), Kind::Recovered);
        m.resolves = Some(Kind::SyncFailed);
        assert_eq!(m.alert_kind().severity(), Severity::Error);
        assert_eq!(m.kind.severity(), Severity::Info);
        assert_eq!(m.headline(), "acme: recovered");
    }
}
