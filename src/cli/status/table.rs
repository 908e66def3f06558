//! The text table of `fief status`.
//!
//! In: a [`View`] and the selected tenants. Out: the agent line, the rollout summary, a note
//! when only named tenants could be read, and one row per tenant (ready, stalled, last sync
//! age, revision, objects, commit, last attempt, message).

use super::load::View;
use super::{
    InventoryError, Summary, agent_line, attempt, attempt_cell, condition, last_sync, short_age,
    suspended, wave_of,
};
use crate::cli::colour::{self, Style};
use crate::core::condition::ConditionType::{Orphaned, Ready, Stalled};
use crate::core::condition::{Condition, ConditionStatus};

/// The whole text output.
pub(super) fn text(
    view: &View,
    selected: &[(&String, &Result<Summary, InventoryError>)],
) -> String {
    let mut out = String::new();
    if let Some(note) = &view.narrowed {
        out.push_str(&format!("note: {note}\n"));
    }
    out.push_str(&agent_line(&view.namespace, &view.agent));
    if let Some(r) = &view.rollout {
        out.push_str(&r.summary());
        out.push('\n');
    }
    out.push_str(&format!(
        "{:<24} {:<9} {:<8} {:<5} {:<10} {:<8} {:<12} {:<22} {}\n",
        "TENANT",
        "READY",
        "STALLED",
        "AGE",
        "REVISION",
        "OBJECTS",
        "COMMIT",
        "ATTEMPTED",
        "MESSAGE"
    ));
    for (t, inv) in selected {
        match inv {
            Ok(inv) => out.push_str(&row(view, t, inv)),
            Err(e) => out.push_str(&format!("{t:<24} unreadable inventory: {e}\n")),
        }
    }
    out
}

/// The message column: the suspension, the rollout hold, the last error or the Ready message.
fn message(view: &View, t: &str, inv: &Summary) -> (String, String) {
    let message = inv
        .status
        .last_error
        .clone()
        .or_else(|| inv.status.condition(Ready).map(|c| c.message.clone()))
        .unwrap_or_default();
    let message = message.lines().next().unwrap_or("").to_string();
    let (ready, message) = match suspended(view, t) {
        Some(why) => (
            "Suspended".to_string(),
            format!("suspended {why}; was: {message}"),
        ),
        None => (condition(inv, Ready).to_string(), message),
    };
    let message = match wave_of(view, t) {
        Some((i, name, true)) => {
            format!("held by the rollout (wave {} \"{name}\"); {message}", i + 1)
        }
        _ => message,
    };
    (ready, message)
}

/// One tenant's row.
fn row(view: &View, t: &str, inv: &Summary) -> String {
    let (ready, message) = message(view, t, inv);
    let orphan = inv
        .status
        .condition(Orphaned)
        .is_some_and(Condition::is_true);
    let tried = attempt(view, t)
        .map(attempt_cell)
        .unwrap_or_else(|| "-".to_string());
    let sync_age = last_sync(inv, attempt(view, t)).map_or("-".to_string(), short_age);
    let on = colour::stdout();
    let pad = |w: &str, n: usize| {
        let padded = format!("{w:<n$}");
        match colour::style_of(w) {
            Some(s) => padded.replacen(w, &colour::paint(on, s, w), 1),
            None => padded,
        }
    };
    let stalled = condition(inv, Stalled);
    let stalled = if stalled == ConditionStatus::True {
        colour::paint(on, Style::Bad, &format!("{stalled:<8}"))
    } else {
        format!("{stalled:<8}")
    };
    let short = |s: &str, n: usize| s.chars().take(n).collect::<String>();
    format!(
        "{:<24} {} {} {:<5} {:<10} {:<8} {:<12} {:<22} {}{}\n",
        t,
        pad(&ready, 9),
        stalled,
        sync_age,
        short(&inv.status.revision, 10),
        inv.objects,
        short(inv.status.commit.as_deref().unwrap_or("-"), 12),
        tried,
        match (orphan, inv.moved_to.as_deref(), inv.status.spare) {
            (true, _, _) => "ORPHANED: ".to_string(),
            (false, Some(to), _) => format!("MOVED to {to}: "),
            (false, None, true) => "SPARE: ".to_string(),
            _ => String::new(),
        },
        message
    )
}
