//! The parts of the agent's shared state, each a struct that owns its fields: they are
//! private to the part's module, and every read and write goes through its methods, so no
//! other file changes a part's state behind its back.
//!
//! In: nothing of the agent's other modules but the types the parts hold. Out: the parts
//! [`crate::Shared`] is made of (its remaining fields are the health gate, the rollout's
//! state in [`crate::rollout`] and the shards this replica holds):
//!
//! - [`cluster::Cluster`]: the handles on the cluster, no mutable state.
//! - [`source::Source`]: what the source task follows and the fetches it is asked for.
//! - [`work::Work`]: the queue of tenants to sync, who is being synced, the day-2 requests.
//! - [`index::LiveIndex`]: what the renders and the watches know of the objects.
//! - [`report::Report`]: what the agent says about itself and to whom.
//!
//! The parts are leaves: none uses the modules that use it, so no import circle runs
//! through them.

pub(crate) mod cluster;
pub(crate) mod index;
pub(crate) mod report;
pub(crate) mod source;
pub(crate) mod work;
