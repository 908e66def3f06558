//! JSON Schemas of the tenants repo's files, generated from the types that read them.
//!
//! In: nothing (the types of this module's parent). Out: one JSON Schema per kind of file
//! ([`RepoFile`]), for editors (a `yaml-language-server` modeline names them) and for the
//! repo-format reference. The types are the truth: a field added to a type appears in its
//! schema, and `deny_unknown_fields` becomes `additionalProperties: false`, so an editor flags
//! a misspelt field as the loader would.

use serde_json::Value;

use super::{ComponentMeta, Config, Environment, Tenant};

/// A kind of file in a tenants repo that has a schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepoFile {
    /// `fief.yaml`.
    Config,
    /// `tenants/<tenant>.yaml`.
    Tenant,
    /// `components/<component>/component.yaml`.
    Component,
    /// `environments/<env>.yaml`.
    Environment,
}

impl RepoFile {
    /// Every kind, in the order the reference lists them.
    pub const ALL: [RepoFile; 4] = [
        RepoFile::Config,
        RepoFile::Tenant,
        RepoFile::Component,
        RepoFile::Environment,
    ];

    /// The schema's file name (`tenant.schema.json`).
    pub fn schema_file(self) -> &'static str {
        match self {
            RepoFile::Config => "fief.schema.json",
            RepoFile::Tenant => "tenant.schema.json",
            RepoFile::Component => "component.schema.json",
            RepoFile::Environment => "environment.schema.json",
        }
    }

    /// Where such a file lives in a tenants repo.
    pub fn repo_path(self) -> &'static str {
        match self {
            RepoFile::Config => "fief.yaml",
            RepoFile::Tenant => "tenants/<tenant>.yaml",
            RepoFile::Component => "components/<component>/component.yaml",
            RepoFile::Environment => "environments/<env>.yaml",
        }
    }

    /// The JSON Schema (draft 2020-12) of this kind of file.
    pub fn schema(self) -> Value {
        let schema = match self {
            RepoFile::Config => schemars::schema_for!(Config),
            RepoFile::Tenant => schemars::schema_for!(Tenant),
            RepoFile::Component => schemars::schema_for!(ComponentMeta),
            RepoFile::Environment => schemars::schema_for!(Environment),
        };
        let mut value = schema.to_value();
        if let Some(object) = value.as_object_mut() {
            object.insert(
                "title".to_string(),
                Value::String(format!("fief {}", self.repo_path())),
            );
        }
        value
    }

    /// The schema as the pretty JSON text shipped in the repo, ending in a newline.
    pub fn schema_text(self) -> String {
        let mut text = serde_json::to_string_pretty(&self.schema()).unwrap_or_default();
        text.push('\n');
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn validator(file: RepoFile) -> jsonschema::Validator {
        jsonschema::validator_for(&file.schema()).expect("the generated schema compiles")
    }

    #[test]
    fn every_generated_schema_compiles_and_refuses_unknown_top_level_fields() {
        for file in RepoFile::ALL {
            let v = validator(file);
            assert!(
                !v.is_valid(&serde_json::json!({"surelyNotAField": 1})),
                "{file:?}"
            );
        }
    }

    #[test]
    fn the_tenant_schema_rejects_a_misspelt_field_and_a_wrong_api_version() {
        let v = validator(RepoFile::Tenant);
        let good = serde_json::json!({
            "apiVersion": "fief.dev/v1alpha1", "kind": "Tenant",
            "metadata": {"name": "acme"},
            "spec": {"environments": ["dev"], "components": [{"name": "web"}]}
        });
        assert!(v.is_valid(&good));
        let mut typo = good.clone();
        typo["spec"]["enviroments"] = typo["spec"]["environments"].take();
        typo["spec"].as_object_mut().unwrap().remove("environments");
        assert!(!v.is_valid(&typo));
        let mut version = good;
        version["apiVersion"] = "fief.dev/v1".into();
        assert!(!v.is_valid(&version));
    }
}
