//! The agent against a real control plane (one per process, shared by every module; each test
//! runs its agents in their own namespaces): sync and drift, faults, health, leader election,
//! shards across replicas, pins, start-up, rollouts, spares, notifications, the web view,
//! metrics and alerts, helm and kustomize components (charts from repositories too), the day-2
//! commands and `fief status`.

#[path = "../common/mod.rs"]
mod common;

mod charts;
mod day2;
mod depends;
mod faults;
mod health;
mod leader;
mod local;
mod monitoring;
mod notifications;
mod packages;
mod phases;
mod pins;
mod prune_hold;
mod rollout;
mod shards;
mod spares;
mod start;
mod status;
mod sync;
mod web;
