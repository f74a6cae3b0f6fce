//! The shape of a printer column and the two columns every table has
//! (Name and Age), shared by the per-group tables and the dispatcher in
//! columns.rs.

pub(super) const NAME_DESC: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
pub(super) const AGE_DESC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// (name, type, format, priority, description)
pub(super) type Column = (&'static str, &'static str, &'static str, u8, &'static str);

pub(super) const NAME: Column = ("Name", "string", "name", 0, NAME_DESC);
pub(super) const AGE: Column = ("Age", "string", "", 0, AGE_DESC);
