//! The manager: [opctl-runtime](https://docs.rs/opctl-runtime) (controllers
//! on caches, leader election, health and metrics endpoints, webhooks,
//! graceful shutdown), with this project's identity.
//!
//! Scaffolded by opctl and regenerated identically: put your changes in
//! src/main.rs and src/controller/ rather than here. The runtime itself is
//! a dependency (Cargo.toml), upgraded with `opctl upgrade`.

pub use opctl_runtime::*;

// What every manager does whatever its controllers: report events.
// +opctl:rbac:groups=events.k8s.io,resources=events,verbs=create

/// The name this manager uses as field manager, `User-Agent`, event
/// reporter and leader-election lease.
pub const NAME: &str = "sidecarset";

/// The project's domain (annotations of this manager are under `<NAME>.<DOMAIN>/`).
pub const DOMAIN: &str = "kruise.io";

/// Who this manager is: the runtime takes everything project-specific from it.
pub const PROJECT: Project = Project::new(NAME, DOMAIN, env!("CARGO_PKG_VERSION"));
