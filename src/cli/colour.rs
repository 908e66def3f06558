//! When the CLI colours its output: the global `--color auto|always|never`, and `NO_COLOR`.
//!
//! In: the parsed choice (set once by [`super::run`]), the environment and whether a stream is
//! a terminal. Out: whether to colour stdout / stderr, and ANSI-painted text. `auto` colours a
//! stream only when it is a terminal, `NO_COLOR` is unset or empty, and `TERM` is not `dumb`;
//! `always` colours even into a pipe or file (and wins over `NO_COLOR`); `never` never does.

use std::io::IsTerminal;
use std::sync::OnceLock;

use super::Colour;
use crate::core::condition::ConditionStatus;

static CHOICE: OnceLock<Colour> = OnceLock::new();

/// Record the `--color` choice (the first call wins).
pub fn set(choice: Colour) {
    let _ = CHOICE.set(choice);
}

fn enabled(tty: bool) -> bool {
    match CHOICE.get().copied().unwrap_or(Colour::Auto) {
        Colour::Always => true,
        Colour::Never => false,
        Colour::Auto => {
            tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
        }
    }
}

/// Whether to colour stdout.
pub fn stdout() -> bool {
    enabled(std::io::stdout().is_terminal())
}

/// Whether to colour stderr.
pub fn stderr() -> bool {
    enabled(std::io::stderr().is_terminal())
}

/// A colour for a piece of output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Success (green).
    Good,
    /// Failure (red).
    Bad,
    /// Needs attention (yellow).
    Warn,
}

/// `text` in `style` when `on`, else unchanged.
pub fn paint(on: bool, style: Style, text: &str) -> String {
    if !on {
        return text.to_string();
    }
    let code = match style {
        Style::Good => "32",
        Style::Bad => "31",
        Style::Warn => "33",
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

/// `error:`, red when stderr is coloured.
pub fn error_prefix() -> String {
    paint(stderr(), Style::Bad, "error:")
}

/// The style of a sync outcome or a condition status.
pub fn style_of(word: &str) -> Option<Style> {
    if let Some(status) = ConditionStatus::parse(word) {
        return Some(match status {
            ConditionStatus::True => Style::Good,
            ConditionStatus::False => Style::Bad,
            ConditionStatus::Unknown => Style::Warn,
        });
    }
    match word {
        "applied" | "purged" => Some(Style::Good),
        "failed" | "invalid" => Some(Style::Bad),
        "suspended" | "Suspended" | "orphaned" | "moved" => Some(Style::Warn),
        _ => None,
    }
}

/// `word` painted by [`style_of`] when `on`.
pub fn word(on: bool, word: &str) -> String {
    match style_of(word) {
        Some(s) => paint(on, s, word),
        None => word.to_string(),
    }
}
