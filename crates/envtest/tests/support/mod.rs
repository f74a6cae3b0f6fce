//! Helpers shared by the integration tests of the envtest server.
//!
//! Nothing here starts the server: `server.rs` does, for the test binaries
//! that include it, so the transcript harness's self-test builds on its own.

pub mod http;
pub mod kubectl;
pub mod transcript;
