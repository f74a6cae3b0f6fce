//! The conversion webhook: for a kind with several versions, the API server
//! posts a `ConversionReview` (apiextensions.k8s.io/v1) to [`PATH`] whenever
//! an object must be read or written in a version other than the one it
//! holds. Versions convert through one of them, the hub: a spoke turns into
//! the hub and the hub into any spoke, with the functions registered through
//! [`Manager::with_conversion`](crate::Manager::with_conversion).
//!
//! The converted object keeps the original's metadata (the API server refuses
//! any other change to it) except its labels and annotations, where a
//! conversion may keep what the other version has no field for.

use std::collections::BTreeMap;
use std::sync::Arc;

use kube::core::Status;
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Where the manager serves the conversion webhook (the CRD's
/// `spec.conversion.webhook.clientConfig.service.path`).
pub const PATH: &str = "/convert";

/// A conversion of one object, as JSON.
type Convert = Arc<dyn Fn(Value) -> Result<Value, String> + Send + Sync>;

/// How one spoke version converts to the hub and back.
struct Spoke {
    to_hub: Convert,
    from_hub: Convert,
}

/// The versions of one kind: the hub's `apiVersion` and the spokes by theirs.
struct Kind {
    hub: String,
    spokes: BTreeMap<String, Spoke>,
}

/// The conversions registered with the manager, by API group and kind.
#[derive(Default)]
pub(crate) struct Conversions {
    kinds: BTreeMap<(String, String), Kind>,
    /// Registrations that name a second hub for a kind.
    conflicts: Vec<String>,
}

impl Conversions {
    /// Registers spoke `S` of the kind whose hub is `H`.
    pub(crate) fn add<S, H>(
        &mut self,
        to_hub: fn(S) -> Result<H, String>,
        from_hub: fn(H) -> Result<S, String>,
    ) where
        S: kube::Resource<DynamicType = ()> + Serialize + DeserializeOwned + 'static,
        H: kube::Resource<DynamicType = ()> + Serialize + DeserializeOwned + 'static,
    {
        let key = (H::group(&()).into_owned(), H::kind(&()).into_owned());
        let hub = H::api_version(&()).into_owned();
        let kind = self.kinds.entry(key).or_insert_with(|| Kind {
            hub: hub.clone(),
            spokes: BTreeMap::new(),
        });
        if kind.hub != hub {
            self.conflicts.push(format!(
                "{} has the hubs {} and {hub}",
                H::kind(&()),
                kind.hub
            ));
        }
        let spoke = Spoke {
            to_hub: Arc::new(move |object| {
                serde_json::to_value(to_hub(typed(object)?)?).map_err(encode)
            }),
            from_hub: Arc::new(move |object| {
                serde_json::to_value(from_hub(typed(object)?)?).map_err(encode)
            }),
        };
        kind.spokes.insert(S::api_version(&()).into_owned(), spoke);
    }

    /// Whether no conversion is registered.
    pub(crate) fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// Checks that each kind has one hub.
    pub(crate) fn check(&self) -> anyhow::Result<()> {
        match self.conflicts.first() {
            Some(conflict) => anyhow::bail!("conversions are registered with two hubs: {conflict}"),
            None => Ok(()),
        }
    }

    /// Answers the ConversionReview in `body`.
    pub(crate) fn review(&self, body: &[u8]) -> ConversionReview {
        let request = match serde_json::from_slice::<ConversionReview>(body)
            .map_err(|err| format!("cannot decode the ConversionReview: {err}"))
            .and_then(|review| ConversionRequest::try_from(review).map_err(|err| err.to_string()))
        {
            Ok(request) => request,
            Err(message) => {
                tracing::warn!(%message, "refused a ConversionReview");
                return ConversionResponse::invalid(Status::failure(&message, "BadRequest"))
                    .into_review();
            }
        };
        let desired = request.desired_api_version.clone();
        let converted: Result<Vec<Value>, String> = request
            .objects
            .iter()
            .map(|object| self.convert(object, &desired))
            .collect();
        let uid = request.uid.clone();
        let response = ConversionResponse::for_request(request);
        match converted {
            Ok(objects) => {
                tracing::debug!(%uid, %desired, objects = objects.len(), "converted");
                response.success(objects)
            }
            Err(message) => {
                tracing::info!(%uid, %desired, %message, "conversion failed");
                response.failure(Status::failure(&message, "ConversionFailed"))
            }
        }
        .into_review()
    }

    /// `object` in `desired`, through the hub.
    fn convert(&self, object: &Value, desired: &str) -> Result<Value, String> {
        let from = object["apiVersion"].as_str().unwrap_or_default();
        let kind_name = object["kind"].as_str().unwrap_or_default();
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        if from == desired {
            return Ok(object.clone());
        }
        let group = desired.rsplit_once('/').map_or("", |(group, _)| group);
        let kind = self
            .kinds
            .get(&(group.to_owned(), kind_name.to_owned()))
            .ok_or_else(|| format!("no conversion is registered for {group} {kind_name}"))?;
        let spoke = |version: &str| {
            kind.spokes.get(version).ok_or_else(|| {
                format!(
                    "{kind_name} {name}: no conversion between {version} and the hub {}",
                    kind.hub
                )
            })
        };
        let hub = if from == kind.hub {
            object.clone()
        } else {
            (spoke(from)?.to_hub)(object.clone())
                .map_err(|err| format!("{kind_name} {name}: {from} to {}: {err}", kind.hub))?
        };
        let mut converted = if desired == kind.hub {
            hub
        } else {
            (spoke(desired)?.from_hub)(hub)
                .map_err(|err| format!("{kind_name} {name}: {} to {desired}: {err}", kind.hub))?
        };
        keep_metadata(object, &mut converted);
        Ok(converted)
    }
}

/// Gives `converted` the metadata of `original`, but for the labels and
/// annotations the conversion left.
fn keep_metadata(original: &Value, converted: &mut Value) {
    let mut metadata = original["metadata"].clone();
    for field in ["labels", "annotations"] {
        match converted["metadata"].get(field) {
            Some(value) if !value.is_null() => metadata[field] = value.clone(),
            _ => {
                if let Some(map) = metadata.as_object_mut() {
                    map.remove(field);
                }
            }
        }
    }
    converted["metadata"] = metadata;
}

fn typed<K: DeserializeOwned>(object: Value) -> Result<K, String> {
    serde_json::from_value(object).map_err(|err| format!("cannot decode the object: {err}"))
}

fn encode(err: serde_json::Error) -> String {
    format!("cannot encode the converted object: {err}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conversions() -> Conversions {
        Conversions::default()
    }

    fn review(desired: &str, objects: Value) -> Vec<u8> {
        serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {"uid": "42", "desiredAPIVersion": desired, "objects": objects},
        })
        .to_string()
        .into_bytes()
    }

    #[test]
    fn an_object_already_in_the_desired_version_comes_back_as_is() {
        let object =
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
        let answer = conversions().review(&review("v1", serde_json::json!([object.clone()])));
        let response = answer.response.expect("a response");
        assert_eq!(response.uid, "42");
        assert!(response.result.is_success());
        assert_eq!(response.converted_objects, vec![object]);
    }

    #[test]
    fn failures_carry_a_message() {
        let answer = conversions().review(&review(
            "other.example.com/v1",
            serde_json::json!([{"apiVersion": "other.example.com/v2", "kind": "Thing", "metadata": {"name": "t"}}]),
        ));
        let response = answer.response.expect("a response");
        assert_eq!(response.uid, "42");
        assert!(response.result.is_failure());
        assert!(
            response
                .result
                .message
                .contains("no conversion is registered for other.example.com Thing"),
            "{}",
            response.result.message
        );
        assert!(response.converted_objects.is_empty());

        let answer = conversions().review(b"not json");
        let response = answer.response.expect("a response");
        assert!(
            response.result.message.contains("cannot decode"),
            "{}",
            response.result.message
        );
    }

    /// Version 1 of a kind: one size.
    mod v1 {
        #[derive(kube::CustomResource, Clone, Debug, serde::Deserialize, serde::Serialize)]
        #[kube(
            group = "test.example.com",
            version = "v1",
            kind = "Parcel",
            schema = "disabled"
        )]
        pub(crate) struct ParcelSpec {
            pub(crate) size: i32,
        }
    }

    /// Version 2, the hub: a width and a height.
    mod v2 {
        #[derive(kube::CustomResource, Clone, Debug, serde::Deserialize, serde::Serialize)]
        #[kube(
            group = "test.example.com",
            version = "v2",
            kind = "Parcel",
            schema = "disabled"
        )]
        pub(crate) struct ParcelSpec {
            pub(crate) width: i32,
            pub(crate) height: i32,
        }
    }

    fn to_hub(spoke: v1::Parcel) -> Result<v2::Parcel, String> {
        let size = spoke.spec.size;
        if size < 0 {
            return Err(format!("a size of {size}"));
        }
        let mut hub = v2::Parcel::new(
            "",
            v2::ParcelSpec {
                width: size,
                height: size,
            },
        );
        hub.metadata = spoke.metadata;
        Ok(hub)
    }

    fn from_hub(hub: v2::Parcel) -> Result<v1::Parcel, String> {
        let mut spoke = v1::Parcel::new(
            "",
            v1::ParcelSpec {
                size: hub.spec.width.max(hub.spec.height),
            },
        );
        spoke.metadata = hub.metadata;
        spoke.metadata.annotations.get_or_insert_default().insert(
            "test.example.com/height".to_owned(),
            hub.spec.height.to_string(),
        );
        Ok(spoke)
    }

    fn boxes() -> Conversions {
        let mut conversions = Conversions::default();
        conversions.add(to_hub, from_hub);
        conversions
    }

    #[test]
    fn objects_convert_through_the_hub_both_ways() {
        let conversions = boxes();
        assert!(conversions.check().is_ok());
        let old = serde_json::json!({
            "apiVersion": "test.example.com/v1", "kind": "Parcel",
            "metadata": {"name": "b", "uid": "u1", "resourceVersion": "7"},
            "spec": {"size": 3},
        });
        let answer = conversions.review(&review("test.example.com/v2", serde_json::json!([old])));
        let response = answer.response.expect("a response");
        assert!(response.result.is_success(), "{:?}", response.result);
        let converted = &response.converted_objects[0];
        assert_eq!(converted["apiVersion"], "test.example.com/v2");
        assert_eq!(
            converted["spec"],
            serde_json::json!({"width": 3, "height": 3})
        );
        assert_eq!(
            converted["metadata"]["uid"], "u1",
            "the metadata is the original's"
        );

        let new = serde_json::json!({
            "apiVersion": "test.example.com/v2", "kind": "Parcel",
            "metadata": {"name": "b", "uid": "u2"},
            "spec": {"width": 2, "height": 5},
        });
        let answer = conversions.review(&review("test.example.com/v1", serde_json::json!([new])));
        let response = answer.response.expect("a response");
        let converted = &response.converted_objects[0];
        assert_eq!(converted["spec"], serde_json::json!({"size": 5}));
        assert_eq!(
            converted["metadata"]["annotations"]["test.example.com/height"], "5",
            "annotations the conversion sets are kept"
        );
    }

    #[test]
    fn a_failed_conversion_fails_the_review_with_its_reason() {
        let bad = serde_json::json!({
            "apiVersion": "test.example.com/v1", "kind": "Parcel",
            "metadata": {"name": "b"}, "spec": {"size": -1},
        });
        let answer = boxes().review(&review("test.example.com/v2", serde_json::json!([bad])));
        let response = answer.response.expect("a response");
        assert!(response.result.is_failure());
        assert!(
            response
                .result
                .message
                .contains("Parcel b: test.example.com/v1 to test.example.com/v2: a size of -1"),
            "{}",
            response.result.message
        );
    }

    #[test]
    fn a_kind_with_two_hubs_is_refused() {
        let mut conversions = boxes();
        // v2 registered as a spoke of v1: a second hub for Parcel.
        conversions.add(from_hub, to_hub);
        let err = conversions.check().expect_err("two hubs");
        assert!(err.to_string().contains("two hubs"), "{err}");
    }

    #[test]
    fn the_metadata_is_kept_but_for_labels_and_annotations() {
        let original =
            serde_json::json!({"metadata": {"name": "a", "uid": "u", "labels": {"x": "1"}}});
        let mut converted =
            serde_json::json!({"metadata": {"name": "b", "annotations": {"y": "2"}}});
        keep_metadata(&original, &mut converted);
        assert_eq!(
            converted["metadata"],
            serde_json::json!({"name": "a", "uid": "u", "annotations": {"y": "2"}})
        );
    }
}
