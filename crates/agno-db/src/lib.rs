//! Storage adapters for agno-rs.
//!
//! The storage traits ([`agno_core::SessionStore`], [`agno_core::RunStore`], their union
//! [`agno_core::Db`]) live in `agno-core`. This crate holds the adapters; for now the in-process
//! [`InMemoryDb`]. Its semantics are the ones every adapter must follow: sessions and runs are
//! stored apart (saving a run never rewrites the session), `run_index` is assigned per session on
//! first write and kept on update, and `user_id` filters every read and write.

mod memory;

pub use memory::InMemoryDb;
