//! ServiceAccount tokens as kube-apiserver issues and checks them: JSON Web
//! Tokens signed by a key made when the server starts (ES256), issued by
//! `serviceaccounts/<name>/token` (TokenRequest) with audiences and an
//! expiry, and accepted as bearer tokens while they are unexpired, meant for
//! this server's audience and their ServiceAccount still exists with the
//! same uid. TokenReview answers from the same check.
//!
//! Legacy tokens, the ones kube-controller-manager's token controller writes
//! into Secrets of type `kubernetes.io/service-account-token`, are signed by
//! the same key with the legacy issuer and never expire; they are good while
//! their Secret holds them and their ServiceAccount exists.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair,
    UnparsedPublicKey,
};
use serde_json::{Value, json};

use crate::user::UserInfo;

/// The issuer, and the audience tokens get when the request names none (the
/// `--service-account-issuer` of the recorded cluster).
pub(crate) const ISSUER: &str = "https://kubernetes.default.svc";

/// The issuer of the tokens kept in Secrets.
pub(crate) const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";

/// What a legacy token says: its ServiceAccount and the Secret holding it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LegacyClaims {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub secret: String,
}

impl LegacyClaims {
    /// The user a request with this token acts as (no credential id: the
    /// token has no `jti`).
    pub(crate) fn user(&self) -> UserInfo {
        UserInfo {
            username: format!("system:serviceaccount:{}:{}", self.namespace, self.name),
            uid: self.uid.clone(),
            groups: vec![
                "system:serviceaccounts".to_string(),
                format!("system:serviceaccounts:{}", self.namespace),
                "system:authenticated".to_string(),
            ],
            extra: Default::default(),
        }
    }
}

/// kube-apiserver's leeway on `exp` and `nbf` (go-jose's default).
const LEEWAY_SECONDS: i64 = 60;

/// What a token says about its ServiceAccount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Claims {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub audiences: Vec<String>,
    /// Seconds since the epoch.
    pub issued_at: i64,
    pub expires_at: i64,
    /// The token's id (`jti`), reported as its credential id.
    pub id: String,
}

impl Claims {
    /// The user a request with this token acts as.
    pub(crate) fn user(&self) -> UserInfo {
        UserInfo {
            username: format!("system:serviceaccount:{}:{}", self.namespace, self.name),
            uid: self.uid.clone(),
            groups: vec![
                "system:serviceaccounts".to_string(),
                format!("system:serviceaccounts:{}", self.namespace),
                "system:authenticated".to_string(),
            ],
            extra: [(
                "authentication.kubernetes.io/credential-id".to_string(),
                vec![format!("JTI={}", self.id)],
            )]
            .into_iter()
            .collect(),
        }
    }
}

/// Why a token is refused (kube-apiserver answers every case with 401; a
/// TokenReview reports the authenticator's error, see `authn`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Not a token this server issued (or not a JWT at all).
    NotOurs,
    Malformed,
    /// Signed with a key id this server does not have.
    UnknownKey,
    BadSignature,
    Expired,
    NotYetValid,
    /// Meant for other audiences: the ones the token holds.
    WrongAudience(Vec<String>),
}

/// The signing key of one server.
pub(crate) struct Signer {
    key: EcdsaKeyPair,
    key_id: String,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("key_id", &self.key_id)
            .finish()
    }
}

impl Default for Signer {
    fn default() -> Signer {
        Signer::new()
    }
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

impl Signer {
    /// A fresh P-256 key (a server's tokens are good for that server only).
    pub(crate) fn new() -> Signer {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .expect("the system random source works");
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .expect("a key ring just generated parses");
        use sha2::{Digest, Sha256};
        let key_id = b64(&Sha256::digest(key.public_key().as_ref()));
        Signer { key, key_id }
    }

    /// A signed token carrying `claims`.
    pub(crate) fn issue(&self, claims: &Claims) -> String {
        let header = json!({"alg": "ES256", "kid": self.key_id});
        let payload = json!({
            "aud": claims.audiences,
            "exp": claims.expires_at,
            "iat": claims.issued_at,
            "iss": ISSUER,
            "jti": claims.id,
            "kubernetes.io": {
                "namespace": claims.namespace,
                "serviceaccount": {"name": claims.name, "uid": claims.uid},
            },
            "nbf": claims.issued_at,
            "sub": format!("system:serviceaccount:{}:{}", claims.namespace, claims.name),
        });
        self.sign(&header, &payload)
    }

    /// A legacy token (issuer `kubernetes/serviceaccount`, no expiry, no
    /// audience) for the Secret `claims.secret`.
    pub(crate) fn issue_legacy(&self, claims: &LegacyClaims) -> String {
        let header = json!({"alg": "ES256", "kid": self.key_id});
        let payload = json!({
            "iss": LEGACY_ISSUER,
            "kubernetes.io/serviceaccount/namespace": claims.namespace,
            "kubernetes.io/serviceaccount/secret.name": claims.secret,
            "kubernetes.io/serviceaccount/service-account.name": claims.name,
            "kubernetes.io/serviceaccount/service-account.uid": claims.uid,
            "sub": format!("system:serviceaccount:{}:{}", claims.namespace, claims.name),
        });
        self.sign(&header, &payload)
    }

    fn sign(&self, header: &Value, payload: &Value) -> String {
        let signing_input = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(payload.to_string().as_bytes())
        );
        let signature = self
            .key
            .sign(&SystemRandom::new(), signing_input.as_bytes())
            .expect("signing with a valid key succeeds");
        format!("{signing_input}.{}", b64(signature.as_ref()))
    }

    /// The payload of `token` if it is from `issuer` and signed by this key.
    fn signed_payload(&self, token: &str, issuer: &str) -> Result<Value, Refused> {
        let mut parts = token.split('.');
        let (Some(h), Some(p), Some(s), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(Refused::NotOurs);
        };
        let decode = |part: &str| URL_SAFE_NO_PAD.decode(part).map_err(|_| Refused::NotOurs);
        let header: Value = serde_json::from_slice(&decode(h)?).map_err(|_| Refused::NotOurs)?;
        let payload: Value = serde_json::from_slice(&decode(p)?).map_err(|_| Refused::NotOurs)?;
        if payload.get("iss").and_then(Value::as_str) != Some(issuer) {
            return Err(Refused::NotOurs);
        }
        if header.get("kid").and_then(Value::as_str) != Some(self.key_id.as_str()) {
            return Err(Refused::UnknownKey);
        }
        if header.get("alg").and_then(Value::as_str) != Some("ES256") {
            return Err(Refused::BadSignature);
        }
        let public =
            UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, self.key.public_key().as_ref());
        public
            .verify(format!("{h}.{p}").as_bytes(), &decode(s)?)
            .map_err(|_| Refused::BadSignature)?;
        Ok(payload)
    }

    /// The claims of a legacy token this server signed. Whether its Secret
    /// still holds it and its ServiceAccount exists is the caller's to check.
    pub(crate) fn verify_legacy(&self, token: &str) -> Result<LegacyClaims, Refused> {
        let payload = self.signed_payload(token, LEGACY_ISSUER)?;
        let text = |key: &str| {
            payload
                .get(key)
                .and_then(Value::as_str)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
                .ok_or(Refused::Malformed)
        };
        Ok(LegacyClaims {
            namespace: text("kubernetes.io/serviceaccount/namespace")?,
            name: text("kubernetes.io/serviceaccount/service-account.name")?,
            uid: text("kubernetes.io/serviceaccount/service-account.uid")?,
            secret: text("kubernetes.io/serviceaccount/secret.name")?,
        })
    }

    /// The claims of `token` if this server issued it, it is valid at `now`
    /// and meant for one of `audiences`. Whether its ServiceAccount still
    /// exists is the caller's to check.
    pub(crate) fn verify(
        &self,
        token: &str,
        now: i64,
        audiences: &[String],
    ) -> Result<Claims, Refused> {
        let payload = self.signed_payload(token, ISSUER)?;
        let number = |key: &str| payload.get(key).and_then(Value::as_i64);
        let text = |path: &str| {
            payload
                .pointer(path)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or(Refused::Malformed)
        };
        let expires_at = number("exp").ok_or(Refused::Malformed)?;
        let issued_at = number("iat").unwrap_or(0);
        let token_audiences: Vec<String> = match payload.get("aud") {
            Some(Value::String(a)) => vec![a.clone()],
            Some(Value::Array(list)) => list
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        };
        // jwt.go checks the audiences before the validator checks the times.
        if !token_audiences.iter().any(|a| audiences.contains(a)) {
            return Err(Refused::WrongAudience(token_audiences));
        }
        if now > expires_at + LEEWAY_SECONDS {
            return Err(Refused::Expired);
        }
        if number("nbf").is_some_and(|nbf| now + LEEWAY_SECONDS < nbf) {
            return Err(Refused::NotYetValid);
        }
        Ok(Claims {
            namespace: text("/kubernetes.io/namespace")?,
            name: text("/kubernetes.io/serviceaccount/name")?,
            uid: text("/kubernetes.io/serviceaccount/uid")?,
            audiences: token_audiences,
            issued_at,
            expires_at,
            id: text("/jti").unwrap_or_default(),
        })
    }
}

/// Whether `token` looks like a JSON Web Token (three base64url parts), the
/// only kind of bearer token this module judges.
pub(crate) fn is_jwt(token: &str) -> bool {
    token.starts_with("eyJ") && token.split('.').count() == 3
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims() -> Claims {
        Claims {
            namespace: "ns".into(),
            name: "sa".into(),
            uid: "u-1".into(),
            audiences: vec![ISSUER.into()],
            issued_at: 1_000,
            expires_at: 4_600,
            id: "j-1".into(),
        }
    }

    #[test]
    fn an_issued_token_verifies_until_it_expires() {
        let signer = Signer::new();
        let token = signer.issue(&claims());
        assert!(is_jwt(&token));
        let ours = [ISSUER.to_string()];
        assert_eq!(signer.verify(&token, 2_000, &ours), Ok(claims()));
        assert_eq!(
            signer.verify(&token, 4_600 + 61, &ours),
            Err(Refused::Expired)
        );
        assert_eq!(
            signer.verify(&token, 900 - 61, &ours),
            Err(Refused::NotYetValid)
        );
        assert_eq!(
            signer.verify(&token, 2_000, &["other".to_string()]),
            Err(Refused::WrongAudience(vec![ISSUER.to_string()]))
        );
        assert_eq!(claims().user().username, "system:serviceaccount:ns:sa");
    }

    #[test]
    fn another_servers_or_a_tampered_token_is_refused() {
        let signer = Signer::new();
        let token = signer.issue(&claims());
        let ours = [ISSUER.to_string()];
        assert_eq!(
            Signer::new().verify(&token, 2_000, &ours),
            Err(Refused::UnknownKey)
        );
        let (head, rest) = token.split_once('.').unwrap();
        let (_, sig) = rest.split_once('.').unwrap();
        let mut forged = claims();
        forged.name = "admin".into();
        let forged_payload = Signer::new().issue(&forged);
        let payload = forged_payload.split('.').nth(1).unwrap();
        let tampered = format!("{head}.{payload}.{sig}");
        assert_eq!(
            signer.verify(&tampered, 2_000, &ours),
            Err(Refused::BadSignature)
        );
        assert_eq!(
            signer.verify("garbage", 2_000, &ours),
            Err(Refused::NotOurs)
        );
    }

    #[test]
    fn a_legacy_token_verifies_only_as_legacy_and_only_with_its_key() {
        let signer = Signer::new();
        let legacy = LegacyClaims {
            namespace: "ns".into(),
            name: "sa".into(),
            uid: "u-1".into(),
            secret: "sa-token".into(),
        };
        let token = signer.issue_legacy(&legacy);
        assert!(is_jwt(&token));
        assert_eq!(signer.verify_legacy(&token), Ok(legacy.clone()));
        let ours = [ISSUER.to_string()];
        assert_eq!(signer.verify(&token, 2_000, &ours), Err(Refused::NotOurs));
        assert_eq!(
            Signer::new().verify_legacy(&token),
            Err(Refused::UnknownKey)
        );
        let bound = signer.issue(&claims());
        assert_eq!(signer.verify_legacy(&bound), Err(Refused::NotOurs));
        assert_eq!(legacy.user().username, "system:serviceaccount:ns:sa");
    }
}
