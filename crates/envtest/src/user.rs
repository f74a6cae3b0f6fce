//! The requesting user, as authentication found it and as authorization,
//! admission and the reviews see it.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// The requesting user (`request.userInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    pub username: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl Default for UserInfo {
    /// envtest's single user: a cluster administrator, as kubebuilder's envtest
    /// admin (member of `system:masters`).
    fn default() -> Self {
        UserInfo {
            username: "system:admin".to_string(),
            uid: String::new(),
            groups: vec![
                "system:masters".to_string(),
                "system:authenticated".to_string(),
            ],
            extra: BTreeMap::new(),
        }
    }
}

impl UserInfo {
    /// The `authentication.k8s.io/v1` `UserInfo` JSON (empty fields omitted, as Go does).
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("username".into(), json!(self.username));
        if !self.uid.is_empty() {
            map.insert("uid".into(), json!(self.uid));
        }
        if !self.groups.is_empty() {
            map.insert("groups".into(), json!(self.groups));
        }
        if !self.extra.is_empty() {
            map.insert("extra".into(), json!(self.extra));
        }
        Value::Object(map)
    }
}
