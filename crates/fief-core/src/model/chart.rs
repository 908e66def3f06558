//! Where a `kind: helm` component's chart comes from (`chart:` in component.yaml), and the
//! lock file (`fief.lock`) that pins a chart from a repository by the digest of its archive.
//!
//! In: the deserialized `chart:` field and the text of `fief.lock`. Out: [`ChartSource`], the
//! checks of a [`ChartRef`] (an exact version, a known scheme) and [`ChartLock`]'s lookups and
//! YAML. Pure.

use serde::{Deserialize, Serialize};

/// The lock file at the repo root.
pub const LOCK_FILE: &str = "fief.lock";

/// What `fief chart update` prints and the errors name as the way to (re)write the lock.
pub const LOCK_COMMAND: &str = "fief chart update";

/// `chart:` in component.yaml: a folder inside the component, or a chart in a repository.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(untagged)]
pub enum ChartSource {
    /// The chart's folder inside the component (e.g. `chart`).
    Folder(String),
    /// A chart in a Helm HTTP repository or an OCI registry, at an exact version.
    Repository(ChartRef),
}

/// A chart in a repository, named as a `Chart.yaml` dependency names one.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChartRef {
    /// `https://…` (a Helm repository serving `index.yaml`) or `oci://host/path` (an OCI
    /// registry; the chart is `<repository>/<name>`).
    pub repository: String,
    /// The chart's name in the repository.
    pub name: String,
    /// The chart's exact version (`3.12.2`; no ranges).
    pub version: String,
}

impl<'de> Deserialize<'de> for ChartSource {
    /// A string is a folder, a mapping a [`ChartRef`] (read field by field, so a misspelt
    /// field is named as in every other mapping).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = ChartSource;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a folder inside the component, or {repository, name, version}")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ChartSource, E> {
                Ok(ChartSource::Folder(v.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<ChartSource, A::Error> {
                ChartRef::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(ChartSource::Repository)
            }
        }
        d.deserialize_any(Visitor)
    }
}

impl ChartRef {
    /// The repository without a trailing `/`, as the lock compares it.
    pub fn repository(&self) -> &str {
        self.repository.trim_end_matches('/')
    }

    /// How errors name the chart: `oci://r/charts/metrics-server:3.12.2`.
    pub fn display(&self) -> String {
        format!("{}/{}:{}", self.repository(), self.name, self.version)
    }

    /// Why the reference cannot be fetched as written: the field at fault and what to write.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        let scheme_ok = ["https://", "http://", "oci://"]
            .iter()
            .any(|s| self.repository.starts_with(s) && self.repository.len() > s.len());
        if !scheme_ok {
            return Err((
                "repository",
                format!(
                    "`{}` is not a chart repository: write `https://…` for a Helm repository or `oci://host/path` for an OCI registry",
                    self.repository
                ),
            ));
        }
        if self.name.is_empty() || self.name.contains(['/', ':', '@']) || self.name.contains("..") {
            return Err((
                "name",
                format!("`{}` is not a chart name (no `/`, `:`, `@`)", self.name),
            ));
        }
        if !is_exact_version(&self.version) {
            return Err((
                "version",
                format!(
                    "`{}` is not an exact version: write the one version to run (e.g. `3.12.2`); ranges are not followed, so a chart never changes without a commit",
                    self.version
                ),
            ));
        }
        Ok(())
    }
}

/// Whether `v` is one semantic version (`1.2.3`, `v1.2.3`, `1.2.3-rc.1+build`), not a range.
pub fn is_exact_version(v: &str) -> bool {
    let v = v.strip_prefix('v').unwrap_or(v);
    let (core, rest) = match v.find(['-', '+']) {
        Some(i) => (&v[..i], &v[i + 1..]),
        None => (v, ""),
    };
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && rest
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'+')
        && !(v.contains(['-', '+']) && rest.is_empty())
}

/// `fief.lock`: every chart a component takes from a repository, with the digest of its
/// archive. Written by `fief chart update`, checked on every load.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ChartLock {
    /// The locked charts, sorted by repository, name and version.
    #[serde(default)]
    pub charts: Vec<LockedChart>,
}

/// One locked chart.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct LockedChart {
    /// As in component.yaml's `chart.repository` (without a trailing `/`).
    pub repository: String,
    /// The chart's name.
    pub name: String,
    /// The exact version.
    pub version: String,
    /// `sha256:<hex>` of the chart's `.tgz`.
    pub digest: String,
}

/// What the lock says about a chart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Locked<'a> {
    /// Locked at this entry.
    At(&'a LockedChart),
    /// The chart is locked, but only at these other versions.
    OtherVersions(Vec<String>),
    /// The chart has no entry.
    Missing,
}

impl ChartLock {
    /// The entry of `chart`, or why there is none.
    pub fn find(&self, chart: &ChartRef) -> Locked<'_> {
        let same_chart = |e: &&LockedChart| {
            e.repository.trim_end_matches('/') == chart.repository() && e.name == chart.name
        };
        if let Some(e) = self
            .charts
            .iter()
            .filter(same_chart)
            .find(|e| e.version == chart.version)
        {
            return Locked::At(e);
        }
        let others: Vec<String> = self
            .charts
            .iter()
            .filter(same_chart)
            .map(|e| e.version.clone())
            .collect();
        if others.is_empty() {
            Locked::Missing
        } else {
            Locked::OtherVersions(others)
        }
    }

    /// The lock file's text: a header saying what it is, then the sorted entries.
    pub fn to_yaml(&self) -> String {
        let mut charts = self.charts.clone();
        charts.sort_by(|a, b| {
            (&a.repository, &a.name, &a.version).cmp(&(&b.repository, &b.name, &b.version))
        });
        charts.dedup();
        let mut out = format!(
            "# Written by `{LOCK_COMMAND}`: the digest of every chart a component takes from a\n\
             # repository. Commit it. fief renders a chart only if its archive has this digest.\n"
        );
        if charts.is_empty() {
            out.push_str("charts: []\n");
            return out;
        }
        out.push_str("charts:\n");
        for c in &charts {
            out.push_str(&format!(
                "  - repository: {}\n    name: {}\n    version: {}\n    digest: {}\n",
                quoted(&c.repository),
                quoted(&c.name),
                quoted(&c.version),
                quoted(&c.digest)
            ));
        }
        out
    }
}

/// A YAML double-quoted scalar (JSON's escaping is valid YAML).
fn quoted(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_versions_pass_and_ranges_do_not() {
        for v in [
            "3.12.2",
            "v1.0.0",
            "1.2.3-rc.1",
            "1.2.3+build.5",
            "0.0.1-alpha+x",
        ] {
            assert!(is_exact_version(v), "{v}");
        }
        for v in [
            "^3.12",
            "~3.12.2",
            ">=1.0.0",
            "3.x",
            "3.12",
            "*",
            "",
            "1.2.3 || 1.2.4",
            "1.2.3-",
        ] {
            assert!(!is_exact_version(v), "{v}");
        }
    }

    #[test]
    fn the_lock_finds_a_version_and_names_the_other_versions() {
        let lock = ChartLock {
            charts: vec![LockedChart {
                repository: "oci://r/charts/".into(),
                name: "ms".into(),
                version: "1.0.0".into(),
                digest: "sha256:00".into(),
            }],
        };
        let at = |v: &str| ChartRef {
            repository: "oci://r/charts".into(),
            name: "ms".into(),
            version: v.into(),
        };
        assert!(matches!(lock.find(&at("1.0.0")), Locked::At(_)));
        assert_eq!(
            lock.find(&at("2.0.0")),
            Locked::OtherVersions(vec!["1.0.0".into()])
        );
        let text = lock.to_yaml();
        let back: ChartLock = crate::yaml::parse_single_typed(&text).unwrap().unwrap();
        assert_eq!(back, lock);
    }

    #[test]
    fn chart_reads_a_folder_or_a_repository_and_names_a_misspelt_field() {
        let folder: ChartSource = serde_json::from_str("\"chart\"").unwrap();
        assert_eq!(folder, ChartSource::Folder("chart".into()));
        let remote: ChartSource =
            serde_json::from_str(r#"{"repository":"oci://r/c","name":"ms","version":"1.0.0"}"#)
                .unwrap();
        assert!(matches!(remote, ChartSource::Repository(_)));
        let typo = serde_json::from_str::<ChartSource>(r#"{"repository":"x","nmae":"ms"}"#)
            .unwrap_err()
            .to_string();
        assert!(typo.contains("nmae"), "{typo}");
    }
}
