//! The pure core: repo files in, rendered and validated objects, inventories and plans out.

pub mod bump;
pub mod compare;
pub mod diagnostic;
pub mod digest;
pub mod health;
pub mod inputs;
pub mod inventory;
pub mod model;
pub mod objects;
pub mod pins;
pub mod pipeline;
pub mod plan;
pub mod redact;
pub mod render;
pub mod rollout;
pub mod schema;
pub mod secrets;
pub mod snapshot;
pub mod status;
pub mod validate;
pub mod yaml;
