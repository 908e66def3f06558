//! A rollout's record: where it stands ([`Phase`]), its waves and the tenants it holds.
//!
//! In: what the agent's rollout knows after each step. Out: the [`Record`] the agent stores in
//! the `fief-rollout` ConfigMap and shows on `/status`, and the one-line summary `fief status`
//! prints. Its JSON is camelCase, with the phase as its variant name.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Wave;

/// Where a rollout stands. Written as its variant name (`Progressing`, `Halted`, `Complete`)
/// in the `fief-rollout` ConfigMap and `/status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Phase {
    /// A wave is released and its tenants are syncing or becoming healthy.
    Progressing,
    /// A tenant of the current wave failed or is unhealthy: later waves wait.
    Halted,
    /// Every wave is done (kept for status until the next rollout).
    Complete,
}

impl Phase {
    /// The phase as it is written: `Progressing`, `Halted` or `Complete`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Phase::Progressing => "Progressing",
            Phase::Halted => "Halted",
            Phase::Complete => "Complete",
        }
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A rollout as `fief status`, `/status` and the metrics show it (stored by the agent in the
/// `fief-rollout` ConfigMap of the agent namespace).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// The commit being rolled out.
    pub commit: String,
    /// Where it stands.
    pub phase: Phase,
    /// The current wave (index into `waves`).
    pub wave: usize,
    /// The waves with the tenants the rollout changes.
    pub waves: Vec<Wave>,
    /// Why it halted (tenant and reason), when halted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Tenants held at the commit they were last synced at: tenant → commit.
    #[serde(default)]
    pub held: BTreeMap<String, String>,
    /// When the rollout started and last changed (RFC 3339).
    pub started_at: String,
    /// When it last changed (RFC 3339).
    pub updated_at: String,
}

impl Record {
    /// One line for humans: `commit abc1234: wave 2/3 "early" halted: <reason>`.
    pub fn summary(&self) -> String {
        let short: String = self.commit.chars().take(12).collect();
        let name = self.waves.get(self.wave).map_or("", |w| w.name.as_str());
        let done: usize = self
            .waves
            .iter()
            .take(self.wave)
            .map(|w| w.tenants.len())
            .sum();
        let total: usize = self.waves.iter().map(|w| w.tenants.len()).sum();
        match self.phase {
            Phase::Complete => format!(
                "rollout of {short}: complete, {total} tenant(s) in {} wave(s)",
                self.waves.len()
            ),
            phase @ (Phase::Progressing | Phase::Halted) => format!(
                "rollout of {short}: wave {}/{} \"{name}\" {}, {done} of {total} tenant(s) in earlier waves, {} held{}",
                self.wave + 1,
                self.waves.len(),
                phase.as_str().to_lowercase(),
                self.held.len(),
                self.reason
                    .as_ref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(phase: Phase) -> Record {
        Record {
            commit: "0123456789abcdef".into(),
            phase,
            wave: 1,
            waves: vec![
                Wave {
                    name: "canary".into(),
                    tenants: vec!["a".into()],
                },
                Wave {
                    name: "rest".into(),
                    tenants: vec!["b".into(), "c".into()],
                },
            ],
            reason: None,
            held: BTreeMap::new(),
            started_at: "t0".into(),
            updated_at: "t1".into(),
        }
    }

    #[test]
    fn the_phase_is_written_as_its_name_and_read_back() {
        for (phase, text) in [
            (Phase::Progressing, "Progressing"),
            (Phase::Halted, "Halted"),
            (Phase::Complete, "Complete"),
        ] {
            let json = serde_json::to_value(record(phase)).expect("serialize");
            assert_eq!(json["phase"], text);
            assert_eq!(json["startedAt"], "t0");
            let back: Record = serde_json::from_value(json).expect("deserialize");
            assert_eq!(back.phase, phase);
        }
    }

    #[test]
    fn the_summary_names_the_wave_or_says_complete() {
        assert_eq!(
            record(Phase::Halted).summary(),
            "rollout of 0123456789ab: wave 2/2 \"rest\" halted, 1 of 3 tenant(s) in earlier waves, 0 held"
        );
        assert_eq!(
            record(Phase::Complete).summary(),
            "rollout of 0123456789ab: complete, 3 tenant(s) in 2 wave(s)"
        );
    }
}
