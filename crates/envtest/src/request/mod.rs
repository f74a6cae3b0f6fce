//! What a request says, decoded below the API layer: its path, its query
//! options, its body and the answer shape it accepts. The HTTP layer reads
//! these off a request; the API layer and the controllers take the typed
//! options, so neither depends on HTTP.

pub mod body;
pub mod media_type;
pub mod negotiate;
pub mod path;
pub mod protobuf;
pub mod query;

/// kube-apiserver's `--request-timeout` default: how long a request may take.
pub const DEFAULT_REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);
