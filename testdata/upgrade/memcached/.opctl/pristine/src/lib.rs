//! memcached: the API types of this operator (`api`) and the manager that
//! runs its controllers (`manager`). The controllers live in the manager
//! binary: src/main.rs and src/controller/.
//!
//! This file is yours; opctl wrote it once.

pub mod api;
pub mod manager;
