//! `fief status`: every tenant's status from its inventory in the cluster.
//!
//! In: [`StatusArgs`]. Out: a table or JSON on stdout.

use std::io::Write;

use super::{CliError, EXIT_INVALID, EXIT_OK, Format, StatusArgs, runtime};
use crate::core::inventory::{Inventory, InventoryError};

/// `fief status`.
pub fn status_cmd(args: &StatusArgs) -> Result<u8, CliError> {
    let inventories = runtime()?.block_on(async {
        let (client, _) = crate::kube::connect(
            args.cluster.kubeconfig.as_deref(),
            args.cluster.context.as_deref(),
            args.cluster.api_qps,
        )
        .await?;
        Ok::<_, CliError>(
            crate::kube::inventory_store::load_inventories(&client, &args.namespace).await?,
        )
    })?;
    let selected: Vec<(&String, &Result<Inventory, InventoryError>)> = inventories
        .iter()
        .filter(|(t, _)| args.tenants.is_empty() || args.tenants.contains(t))
        .collect();
    let condition = |inv: &Inventory, t: &str| {
        inv.status
            .condition(t)
            .map(|c| c.status.clone())
            .unwrap_or_else(|| "Unknown".to_string())
    };
    let mut out = String::new();
    match args.output {
        Format::Json => {
            let rows: Vec<serde_json::Value> = selected
                .iter()
                .map(|(t, inv)| match inv {
                    Ok(inv) => serde_json::json!({"tenant": t, "status": inv.status}),
                    Err(e) => serde_json::json!({"tenant": t, "error": e.to_string()}),
                })
                .collect();
            out = serde_json::to_string_pretty(&rows).unwrap_or_default();
            out.push('\n');
        }
        Format::Text => {
            out.push_str(&format!(
                "{:<24} {:<8} {:<8} {:<10} {:<8} {:<12} {}\n",
                "TENANT", "READY", "STALLED", "REVISION", "OBJECTS", "COMMIT", "MESSAGE"
            ));
            for (t, inv) in &selected {
                match inv {
                    Ok(inv) => {
                        let message = inv
                            .status
                            .last_error
                            .clone()
                            .or_else(|| inv.status.condition("Ready").map(|c| c.message.clone()))
                            .unwrap_or_default();
                        let message = message.lines().next().unwrap_or("").to_string();
                        let orphan = inv
                            .status
                            .condition("Orphaned")
                            .is_some_and(|c| c.status == "True");
                        out.push_str(&format!(
                            "{:<24} {:<8} {:<8} {:<10} {:<8} {:<12} {}{}\n",
                            t,
                            condition(inv, "Ready"),
                            condition(inv, "Stalled"),
                            inv.status.revision.chars().take(10).collect::<String>(),
                            inv.entries.len(),
                            inv.status
                                .commit
                                .as_deref()
                                .unwrap_or("-")
                                .chars()
                                .take(12)
                                .collect::<String>(),
                            if orphan { "ORPHANED: " } else { "" },
                            message
                        ));
                    }
                    Err(e) => out.push_str(&format!("{t:<24} unreadable inventory: {e}\n")),
                }
            }
        }
    }
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    let any_bad = selected.iter().any(|(_, inv)| {
        inv.as_ref()
            .map_or(true, |i| condition(i, "Ready") != "True")
    });
    Ok(if any_bad { EXIT_INVALID } else { EXIT_OK })
}
