//! What a request says, decoded below the API layer: its path, its query
//! options, its body and the answer shape it accepts. The HTTP layer reads
//! these off a request; the API layer and the controllers take the typed
//! options, so neither depends on HTTP.

pub(crate) mod body;
pub(crate) mod media_type;
pub(crate) mod negotiate;
pub(crate) mod path;
pub(crate) mod protobuf;
pub(crate) mod query;

/// kube-apiserver's `--request-timeout` default: how long a request may take.
pub(crate) const DEFAULT_REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);
