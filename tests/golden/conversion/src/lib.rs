//! database: the API types of this operator (`api`, the crate in api/)
//! and the manager that runs its controllers (`manager`). The controllers
//! live in the manager binary: src/main.rs and src/controller/.
//!
//! This file is yours; opctl wrote it once.

pub use database_api as api;
pub mod manager;
