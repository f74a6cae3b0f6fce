//! Who may read /metrics when it is served securely (the default), decided
//! as controller-runtime's metrics filter does: the caller's bearer token is
//! authenticated with a TokenReview, and the user it belongs to must be
//! allowed to `get` the non-resource URL /metrics (a SubjectAccessReview;
//! the metrics-reader ClusterRole of config/rbac grants it). Decisions are
//! kept per token for a minute (refusals for 10 seconds), so a scraper
//! costs the API server two requests a minute.
//!
//! The reviews need config/rbac/metrics_auth_role.yaml: a ClusterRole even
//! for a project that watches only given namespaces, since reviews are
//! cluster-wide.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::Client;
use kube::api::{Api, PostParams};

/// The path the reviews ask about.
pub(crate) const METRICS_PATH: &str = "/metrics";

/// How long an allowed token is trusted without asking again.
const ALLOWED_FOR: Duration = Duration::from_secs(60);
/// How long a refused token is refused without asking again.
const REFUSED_FOR: Duration = Duration::from_secs(10);
/// Tokens remembered at most (a flood of bad tokens cannot grow memory).
const MAX_REMEMBERED: usize = 1024;

/// What the reviews decided about a caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// May read the metrics.
    Allowed,
    /// No bearer token, or one the API server does not know.
    Unauthenticated,
    /// Authenticated as this user, who may not `get` /metrics.
    Forbidden(String),
}

/// Decides with the API server, remembering recent decisions.
pub(crate) struct Authorizer {
    client: Client,
    decisions: Mutex<HashMap<String, (Decision, Instant)>>,
}

impl Authorizer {
    /// An authorizer asking through `client` (the manager's identity).
    pub(crate) fn new(client: Client) -> Self {
        Self {
            client,
            decisions: Mutex::default(),
        }
    }

    /// Decides about a request carrying the `Authorization` header value
    /// `authorization`; an error means the API server could not be asked.
    pub(crate) async fn decide(
        &self,
        authorization: Option<&str>,
    ) -> Result<Decision, kube::Error> {
        let Some(token) = bearer_token(authorization) else {
            return Ok(Decision::Unauthenticated);
        };
        if let Some(decision) = self.remembered(token) {
            return Ok(decision);
        }
        let decision = self.review(token).await?;
        let mut decisions = self
            .decisions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if decisions.len() >= MAX_REMEMBERED {
            decisions.retain(|_, (decision, at)| at.elapsed() < lifetime(decision));
            if decisions.len() >= MAX_REMEMBERED {
                decisions.clear();
            }
        }
        decisions.insert(token.to_owned(), (decision.clone(), Instant::now()));
        Ok(decision)
    }

    fn remembered(&self, token: &str) -> Option<Decision> {
        let decisions = self
            .decisions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (decision, at) = decisions.get(token)?;
        (at.elapsed() < lifetime(decision)).then(|| decision.clone())
    }

    async fn review(&self, token: &str) -> Result<Decision, kube::Error> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_owned()),
                audiences: None,
            },
            ..TokenReview::default()
        };
        let reviewed = Api::<TokenReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await?;
        let status = reviewed.status.unwrap_or_default();
        let (Some(true), Some(user)) = (status.authenticated, status.user) else {
            return Ok(Decision::Unauthenticated);
        };
        let username = user.username.clone().unwrap_or_default();
        let access = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username,
                groups: user.groups,
                uid: user.uid,
                extra: user.extra,
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(METRICS_PATH.to_owned()),
                    verb: Some("get".to_owned()),
                }),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        let decided = Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &access)
            .await?;
        if decided.status.is_some_and(|status| status.allowed) {
            Ok(Decision::Allowed)
        } else {
            Ok(Decision::Forbidden(username))
        }
    }
}

fn lifetime(decision: &Decision) -> Duration {
    match decision {
        Decision::Allowed => ALLOWED_FOR,
        _ => REFUSED_FOR,
    }
}

/// The token of an `Authorization: Bearer <token>` header value.
fn bearer_token(authorization: Option<&str>) -> Option<&str> {
    let (scheme, token) = authorization?.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bearer_tokens_count() {
        assert_eq!(bearer_token(Some("Bearer abc.def")), Some("abc.def"));
        assert_eq!(bearer_token(Some("bearer  abc ")), Some("abc"));
        assert_eq!(bearer_token(Some("Basic dXNlcjpwdw==")), None);
        assert_eq!(bearer_token(Some("Bearer ")), None);
        assert_eq!(bearer_token(None), None);
    }
}
