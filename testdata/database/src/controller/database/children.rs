//! The objects a Database owns, as its controller wants them: a Pod running
//! the database server, a NodePort Service in front of it and, for mysql, a
//! Secret holding the root password. Pure functions of the Database, so that
//! they are unit-tested here and written as they are (the Pod and Service
//! with server-side apply, the Secret created once).

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EnvVar, EnvVarSource, Pod, PodSpec, Secret, SecretKeySelector,
    Service, ServicePort, ServiceSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::{Resource, ResourceExt};
use rand::distr::{Alphanumeric, SampleString};

use database::api::zalando::v1::{Database, DatabaseType};
use database::manager;

/// Label naming the application (the database server: `mongo` or `mysql`).
pub const NAME_LABEL: &str = "app.kubernetes.io/name";
/// Label naming the instance: the Database's name, unique in its namespace.
pub const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
/// Label naming who manages the object: this operator.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";

/// The key of the root password in the mysql Secret.
pub const PASSWORD_KEY: &str = "password";
/// The variable the mysql image reads its root password from.
pub const PASSWORD_ENV: &str = "MYSQL_ROOT_PASSWORD";
/// Characters of a generated password (alphanumeric: about 143 bits).
const PASSWORD_LENGTH: usize = 24;

/// The label selector of every object this operator owns (what its watches
/// of Pods, Services and Secrets are limited to).
pub fn managed_selector() -> String {
    format!("{MANAGED_BY_LABEL}={}", manager::NAME)
}

/// The image and port of a database server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Server {
    pub image: &'static str,
    pub port: i32,
}

/// What runs for each type of Database.
pub fn server(type_: DatabaseType) -> Server {
    match type_ {
        DatabaseType::Mongo => Server {
            image: "mongo:4.0",
            port: 27017,
        },
        DatabaseType::Mysql => Server {
            image: "mysql:8.0",
            port: 3306,
        },
    }
}

/// Why a Database's children cannot be described.
#[derive(Debug, thiserror::Error)]
#[error("the Database has no {0} yet (it was not read from the API server)")]
pub struct MissingMetadata(&'static str);

/// The children one Database asks for.
#[derive(Clone, Debug)]
pub struct Desired {
    pub name: String,
    pub namespace: String,
    pub type_: DatabaseType,
    owner: OwnerReference,
}

impl Desired {
    /// The children of `database` (as read from the API server: it needs a
    /// name, a namespace and a uid).
    pub fn of(database: &Database) -> Result<Self, MissingMetadata> {
        let name = database.metadata.name.clone();
        let namespace = database.metadata.namespace.clone();
        let owner = database.controller_owner_ref(&());
        Ok(Self {
            name: name.ok_or(MissingMetadata("name"))?,
            namespace: namespace.ok_or(MissingMetadata("namespace"))?,
            type_: database.spec.type_,
            owner: OwnerReference {
                // Foreground deletion of the Database waits for its children.
                block_owner_deletion: Some(true),
                ..owner.ok_or(MissingMetadata("uid"))?
            },
        })
    }

    /// The labels of every child; the Service selects Pods by all of them,
    /// so it matches this Database's Pod and no other.
    pub fn labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            (NAME_LABEL.to_owned(), self.type_.as_str().to_owned()),
            (INSTANCE_LABEL.to_owned(), self.name.clone()),
            (MANAGED_BY_LABEL.to_owned(), manager::NAME.to_owned()),
        ])
    }

    /// The name of the mysql Secret.
    pub fn secret_name(&self) -> String {
        format!("{}-credentials", self.name)
    }

    /// Whether `child` is controlled by this Database (its uid, not just its name).
    pub fn controls(&self, child: &impl Resource) -> bool {
        child
            .owner_references()
            .iter()
            .any(|owner| owner.controller == Some(true) && owner.uid == self.owner.uid)
    }

    fn metadata(&self, name: String) -> ObjectMeta {
        ObjectMeta {
            name: Some(name),
            namespace: Some(self.namespace.clone()),
            labels: Some(self.labels()),
            owner_references: Some(vec![self.owner.clone()]),
            ..ObjectMeta::default()
        }
    }

    /// The Pod running the database server; for mysql its root password
    /// comes from the Secret, never from the Pod spec.
    pub fn pod(&self) -> Pod {
        let server = server(self.type_);
        let env = match self.type_ {
            DatabaseType::Mongo => None,
            DatabaseType::Mysql => Some(vec![EnvVar {
                name: PASSWORD_ENV.to_owned(),
                value_from: Some(EnvVarSource {
                    secret_key_ref: Some(SecretKeySelector {
                        name: self.secret_name(),
                        key: PASSWORD_KEY.to_owned(),
                        optional: None,
                    }),
                    ..EnvVarSource::default()
                }),
                ..EnvVar::default()
            }]),
        };
        Pod {
            metadata: self.metadata(self.name.clone()),
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: self.type_.as_str().to_owned(),
                    image: Some(server.image.to_owned()),
                    ports: Some(vec![ContainerPort {
                        name: Some(self.type_.as_str().to_owned()),
                        container_port: server.port,
                        protocol: Some("TCP".to_owned()),
                        ..ContainerPort::default()
                    }]),
                    env,
                    ..Container::default()
                }],
                ..PodSpec::default()
            }),
            status: None,
        }
    }

    /// The NodePort Service in front of the Pod (the node port is left to
    /// the API server to allocate).
    pub fn service(&self) -> Service {
        let server = server(self.type_);
        Service {
            metadata: self.metadata(self.name.clone()),
            spec: Some(ServiceSpec {
                type_: Some("NodePort".to_owned()),
                selector: Some(self.labels()),
                ports: Some(vec![ServicePort {
                    name: Some(self.type_.as_str().to_owned()),
                    port: server.port,
                    target_port: Some(IntOrString::Int(server.port)),
                    protocol: Some("TCP".to_owned()),
                    ..ServicePort::default()
                }]),
                ..ServiceSpec::default()
            }),
            status: None,
        }
    }

    /// The Secret with the mysql root password.
    pub fn secret(&self, password: &str) -> Secret {
        Secret {
            metadata: self.metadata(self.secret_name()),
            type_: Some("Opaque".to_owned()),
            data: Some(BTreeMap::from([(
                PASSWORD_KEY.to_owned(),
                ByteString(password.as_bytes().to_vec()),
            )])),
            ..Secret::default()
        }
    }
}

/// A fresh random root password (from the thread-local CSPRNG).
pub fn new_password() -> String {
    Alphanumeric.sample_string(&mut rand::rng(), PASSWORD_LENGTH)
}

/// The database server an existing Pod runs, from its name label (in its
/// cached metadata).
pub fn type_of(pod: &impl Resource) -> Option<&str> {
    pod.labels().get(NAME_LABEL).map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use database::api::zalando::v1::DatabaseSpec;

    /// The password a Secret holds, if it holds one.
    fn password_of(secret: &Secret) -> Option<String> {
        let bytes = secret.data.as_ref()?.get(PASSWORD_KEY)?;
        let password = String::from_utf8(bytes.0.clone()).ok()?;
        (!password.is_empty()).then_some(password)
    }

    fn database(name: &str, type_: DatabaseType) -> Database {
        let mut database = Database::new(name, DatabaseSpec { type_ });
        database.metadata.namespace = Some("shop".to_owned());
        database.metadata.uid = Some(format!("uid-of-{name}"));
        database
    }

    fn desired(name: &str, type_: DatabaseType) -> Desired {
        Desired::of(&database(name, type_)).expect("a complete Database")
    }

    fn assert_owned_by(meta: &ObjectMeta, name: &str) {
        let owners = meta.owner_references.as_deref().unwrap_or_default();
        assert_eq!(owners.len(), 1);
        let owner = &owners[0];
        assert_eq!(owner.api_version, "zalando.org/v1");
        assert_eq!(owner.kind, "Database");
        assert_eq!(owner.name, name);
        assert_eq!(owner.uid, format!("uid-of-{name}"));
        assert_eq!(owner.controller, Some(true));
        assert_eq!(owner.block_owner_deletion, Some(true));
    }

    fn container(pod: &Pod) -> &Container {
        let spec = pod.spec.as_ref().expect("a Pod spec");
        assert_eq!(spec.containers.len(), 1);
        &spec.containers[0]
    }

    fn service_ports(service: &Service) -> Vec<(i32, Option<IntOrString>, Option<String>)> {
        let spec = service.spec.as_ref().expect("a Service spec");
        spec.ports
            .iter()
            .flatten()
            .map(|p| (p.port, p.target_port.clone(), p.protocol.clone()))
            .collect()
    }

    #[test]
    fn a_mongo_pod_runs_mongo_4_0_on_27017_without_a_password() {
        let pod = desired("orders", DatabaseType::Mongo).pod();
        assert_eq!(pod.metadata.name.as_deref(), Some("orders"));
        assert_eq!(pod.metadata.namespace.as_deref(), Some("shop"));
        assert_owned_by(&pod.metadata, "orders");
        let container = container(&pod);
        assert_eq!(container.image.as_deref(), Some("mongo:4.0"));
        let ports = container.ports.as_deref().unwrap_or_default();
        assert_eq!(ports.len(), 1);
        assert_eq!(ports[0].container_port, 27017);
        assert_eq!(container.env, None);
    }

    #[test]
    fn a_mysql_pod_runs_mysql_8_0_on_3306_with_the_password_from_the_secret() {
        let pod = desired("orders", DatabaseType::Mysql).pod();
        assert_owned_by(&pod.metadata, "orders");
        let container = container(&pod);
        assert_eq!(container.image.as_deref(), Some("mysql:8.0"));
        let ports = container.ports.as_deref().unwrap_or_default();
        assert_eq!(ports[0].container_port, 3306);
        let env = container.env.as_deref().unwrap_or_default();
        assert_eq!(env.len(), 1);
        assert_eq!(env[0].name, "MYSQL_ROOT_PASSWORD");
        assert_eq!(env[0].value, None, "never a literal password");
        let source = env[0]
            .value_from
            .as_ref()
            .and_then(|v| v.secret_key_ref.as_ref());
        let source = source.expect("a secretKeyRef");
        assert_eq!(source.name, "orders-credentials");
        assert_eq!(source.key, "password");
    }

    #[test]
    fn a_mongo_service_is_a_node_port_on_27017_selecting_the_pod_labels() {
        let desired = desired("orders", DatabaseType::Mongo);
        let service = desired.service();
        assert_eq!(service.metadata.name.as_deref(), Some("orders"));
        assert_owned_by(&service.metadata, "orders");
        let spec = service.spec.as_ref().expect("a Service spec");
        assert_eq!(spec.type_.as_deref(), Some("NodePort"));
        assert_eq!(
            service_ports(&service),
            [(27017, Some(IntOrString::Int(27017)), Some("TCP".to_owned()))]
        );
        assert_eq!(
            spec.selector.as_ref(),
            desired.pod().metadata.labels.as_ref()
        );
        let selector = spec.selector.clone().unwrap_or_default();
        assert_eq!(selector[NAME_LABEL], "mongo");
        assert_eq!(selector[INSTANCE_LABEL], "orders");
        assert_eq!(selector[MANAGED_BY_LABEL], "database");
    }

    #[test]
    fn a_mysql_service_is_a_node_port_on_3306() {
        let service = desired("orders", DatabaseType::Mysql).service();
        let spec = service.spec.as_ref().expect("a Service spec");
        assert_eq!(spec.type_.as_deref(), Some("NodePort"));
        assert_eq!(
            service_ports(&service),
            [(3306, Some(IntOrString::Int(3306)), Some("TCP".to_owned()))]
        );
        assert_eq!(
            spec.selector.clone().unwrap_or_default()[NAME_LABEL],
            "mysql"
        );
    }

    #[test]
    fn two_databases_select_disjoint_pods() {
        let a = desired("a", DatabaseType::Mongo);
        let b = desired("b", DatabaseType::Mongo);
        let selects = |service: &Service, pod: &Pod| {
            let selector = service.spec.as_ref().and_then(|s| s.selector.clone());
            let labels = pod.labels();
            selector
                .unwrap_or_default()
                .iter()
                .all(|(key, value)| labels.get(key) == Some(value))
        };
        assert!(selects(&a.service(), &a.pod()));
        assert!(selects(&b.service(), &b.pod()));
        assert!(!selects(&a.service(), &b.pod()));
        assert!(!selects(&b.service(), &a.pod()));
    }

    #[test]
    fn the_mysql_secret_holds_the_password_and_is_owned() {
        let desired = desired("orders", DatabaseType::Mysql);
        let secret = desired.secret("s3cret");
        assert_eq!(secret.metadata.name.as_deref(), Some("orders-credentials"));
        assert_owned_by(&secret.metadata, "orders");
        assert_eq!(secret.type_.as_deref(), Some("Opaque"));
        assert_eq!(password_of(&secret).as_deref(), Some("s3cret"));
        assert_eq!(secret.string_data, None);
    }

    #[test]
    fn passwords_are_long_random_and_alphanumeric() {
        let first = new_password();
        let second = new_password();
        assert_eq!(first.len(), PASSWORD_LENGTH);
        assert!(first.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(first, second);
    }

    #[test]
    fn control_is_decided_by_uid() {
        let desired = desired("orders", DatabaseType::Mongo);
        let pod = desired.pod();
        assert!(desired.controls(&pod));
        let recreated = Desired::of(&{
            let mut database = database("orders", DatabaseType::Mongo);
            database.metadata.uid = Some("another-uid".to_owned());
            database
        })
        .expect("a complete Database");
        assert!(!recreated.controls(&pod));
        assert_eq!(type_of(&pod), Some("mongo"));
    }

    #[test]
    fn a_database_not_read_from_the_server_has_no_children() {
        let mut database = database("orders", DatabaseType::Mongo);
        database.metadata.uid = None;
        assert!(Desired::of(&database).is_err());
    }
}
