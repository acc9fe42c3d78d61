//! `reef view`: a web timeline of CTF traces. See `docs/view-api.md` for
//! the HTTP API and ARCHITECTURE.md for how the index is built.

pub mod buckets;
pub mod index;
pub mod model;
mod pass;
pub mod query;
pub mod server;
