//! Diagnostics: what went wrong with the tenants repo, where, for whom, and what to do.
//!
//! In: problems found by every stage of the pure core (snapshot, model, render, validate).
//! Out: [`Diagnostic`] values that name the repo-relative file, the line, the tenant and a
//! hint; the CLI prints them on stderr, the agent records them in tenant status.
//!
//! Here: [`Diagnostic`]; the kinds of problem in `problem`, their hints in `hint`, the
//! reading of deserializer messages in `yaml_error`, the text fields a problem quotes in
//! `texts`, and [`fold`], which tells one problem repeated across environments and tenants
//! once, with the values that differ.

use std::fmt;

pub mod fold;
mod hint;
mod problem;
mod texts;
mod yaml_error;

pub use problem::{OverrideTarget, Problem};

/// One problem at one place, for one tenant (or for every tenant, when `tenant` is `None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The tenant the problem was found for, if it is specific to one.
    pub tenant: Option<String>,
    /// The repo-relative file the problem comes from.
    pub file: String,
    /// 1-based line in that file, when known.
    pub line: Option<usize>,
    /// What is wrong (boxed: diagnostics travel in `Result`s and should stay small).
    pub problem: Box<Problem>,
}

impl Diagnostic {
    /// A diagnostic at `file:line`, not yet tied to a tenant.
    pub fn new(file: impl Into<String>, line: Option<usize>, problem: Problem) -> Self {
        Diagnostic {
            tenant: None,
            file: file.into(),
            line,
            problem: Box::new(problem),
        }
    }

    /// The same diagnostic, attributed to `tenant`.
    pub fn for_tenant(mut self, tenant: &str) -> Self {
        self.tenant = Some(tenant.to_string());
        self
    }

    /// `file:line` (or `file` when the line is unknown).
    pub fn location(&self) -> String {
        match self.line {
            Some(line) => format!("{}:{}", self.file, line),
            None => self.file.clone(),
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.location())?;
        if let Some(tenant) = &self.tenant {
            write!(f, "tenant `{tenant}`: ")?;
        }
        write!(f, "{}\n  hint: {}", self.problem, self.problem.hint())
    }
}

impl std::error::Error for Diagnostic {}
