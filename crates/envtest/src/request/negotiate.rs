//! Response content negotiation from the `Accept` header, as kube-apiserver's
//! `negotiation` package does it: JSON or YAML, and on resource endpoints the
//! transformed shapes clients ask for (`as=Table`, `as=PartialObjectMetadata`,
//! `as=PartialObjectMetadataList`), on every verb. Whether a shape fits the
//! result (an object or a list) is decided afterwards, by [`transform`].

use crate::error::{ApiError, ApiResult, Details};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Json,
    Yaml,
}

/// A transformation the client asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Shape {
    Plain,
    /// `meta.k8s.io/<version>` Table.
    Table(String),
    /// `meta.k8s.io/<version>` PartialObjectMetadata.
    PartialObjectMetadata(String),
    PartialObjectMetadataList(String),
    /// `apidiscovery.k8s.io/<version>` APIGroupDiscoveryList.
    Discovery(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Accepted {
    pub format: Format,
    pub shape: Shape,
    /// Indented JSON without the trailing newline (`pretty=1` in the media
    /// range, `?pretty=true`, or a curl/Wget/browser User-Agent).
    pub pretty: bool,
}

/// Which shapes the endpoint can produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// Status errors, group discovery documents and the like: no transformation.
    Plain,
    /// Any verb on a built-in resource (or subresource): Table and
    /// PartialObjectMetadata[List].
    Resource,
    /// The same for a custom resource, which kube-apiserver serves without
    /// go-restful's routing (and so without its 406 for unknown media types).
    CustomResource,
    /// `/api` and `/apis`: aggregated discovery.
    Discovery,
}

/// Media types kube-apiserver serves objects in, as its 406 lists them.
pub(crate) const SERVED_MEDIA_TYPES: &str =
    "application/json, application/yaml, application/vnd.kubernetes.protobuf";

/// One media range of an Accept header.
struct Clause<'a> {
    media: String,
    q: f32,
    as_: Option<&'a str>,
    group: &'a str,
    version: &'a str,
    pretty: bool,
}

impl Clause<'_> {
    fn transforms(&self) -> bool {
        self.as_.is_some() || !self.group.is_empty() || !self.version.is_empty()
    }
}

/// The clauses by falling `q`, wildcards after specific types at equal `q`
/// (goautoneg's order).
fn clauses(header: &str) -> Vec<Clause<'_>> {
    let mut out: Vec<Clause<'_>> = header
        .split(',')
        .map(|range| {
            let mut parts = range.split(';').map(str::trim);
            let mut clause = Clause {
                media: parts.next().unwrap_or("").to_ascii_lowercase(),
                q: 1.0,
                as_: None,
                group: "",
                version: "",
                pretty: false,
            };
            for p in parts {
                if let Some((k, v)) = p.split_once('=') {
                    let v = v.trim();
                    match k.trim() {
                        "as" => clause.as_ = Some(v),
                        "g" => clause.group = v,
                        "v" => clause.version = v,
                        "q" => clause.q = v.parse().unwrap_or(1.0),
                        "pretty" => clause.pretty = v == "1",
                        _ => {}
                    }
                }
            }
            clause
        })
        .collect();
    let rank = |c: &Clause<'_>| {
        let (t, s) = c.media.split_once('/').unwrap_or((&c.media, ""));
        u8::from(t != "*") + u8::from(s != "*")
    };
    // Stable: equal clauses keep the header's order, as Go's insertion sort does.
    out.sort_by(|a, b| {
        b.q.partial_cmp(&a.q)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(rank(b).cmp(&rank(a)))
    });
    out
}

fn format_of(media: &str) -> Option<Format> {
    match media {
        "application/json" | "application/*" | "*/*" => Some(Format::Json),
        "application/yaml" => Some(Format::Yaml),
        _ => None,
    }
}

/// The shape a transforming clause asks for, when the endpoint allows it
/// (`RequestScope.AllowsMediaTypeTransform`).
fn shape_for(endpoint: Endpoint, clause: &Clause<'_>, format: Format) -> Option<Shape> {
    let as_ = clause.as_.unwrap_or("");
    let (group, version) = (clause.group, clause.version);
    match endpoint {
        Endpoint::Resource | Endpoint::CustomResource
            if group == "meta.k8s.io" && matches!(version, "v1" | "v1beta1") =>
        {
            match as_ {
                "Table" => Some(Shape::Table(version.into())),
                "PartialObjectMetadata" => Some(Shape::PartialObjectMetadata(version.into())),
                "PartialObjectMetadataList" => {
                    Some(Shape::PartialObjectMetadataList(version.into()))
                }
                _ => None,
            }
        }
        Endpoint::Discovery
            if as_ == "APIGroupDiscoveryList"
                && group == "apidiscovery.k8s.io"
                && matches!(version, "v2" | "v2beta1")
                && format == Format::Json =>
        {
            Some(Shape::Discovery(version.into()))
        }
        _ => None,
    }
}

/// Picks the first acceptable media range; none acceptable is 406.
pub(crate) fn negotiate(accept: Option<&str>, endpoint: Endpoint) -> ApiResult<Accepted> {
    let header = accept.unwrap_or("").trim();
    if header.is_empty() {
        return Ok(Accepted {
            format: Format::Json,
            shape: Shape::Plain,
            pretty: false,
        });
    }
    for clause in clauses(header) {
        if clause.q <= 0.0 {
            continue;
        }
        let Some(format) = format_of(&clause.media) else {
            continue;
        };
        let shape = if clause.transforms() {
            match shape_for(endpoint, &clause, format) {
                Some(shape) => shape,
                None => continue,
            }
        } else {
            Shape::Plain
        };
        return Ok(Accepted {
            format,
            shape,
            pretty: clause.pretty,
        });
    }
    // go-restful refuses a request none of whose media types a route
    // produces before any handler runs; the handler refuses the rest.
    let routed = endpoint != Endpoint::CustomResource;
    let produced = header.split(',').any(|range| {
        let media = range.split(';').next().unwrap_or("").trim();
        media == "*/*" || PRODUCED.contains(&media)
    });
    if routed && !produced {
        return Err(not_acceptable());
    }
    Err(ApiError::not_acceptable_of(SERVED_MEDIA_TYPES))
}

/// What go-restful's routes declare they produce (compared case-sensitively,
/// without parameters).
const PRODUCED: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];

/// 406 NotAcceptable from go-restful's routing: no media type of the
/// Accept header is one the route produces.
fn not_acceptable() -> ApiError {
    ApiError::new(
        406,
        "NotAcceptable",
        format!("406: Not Acceptable\n\nAvailable representations: {SERVED_MEDIA_TYPES}"),
    )
    .with_details(Details::default())
}

/// How a Status error is written for this Accept header: the first range
/// that asks for no transformation, or `None` when there is none (the
/// server then writes indented JSON, `WriteRawJSON`).
pub(crate) fn error_format(accept: Option<&str>) -> Option<Accepted> {
    negotiate(accept, Endpoint::Plain).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_table_header_picks_table() {
        let h = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(
            negotiate(Some(h), Endpoint::Resource).unwrap().shape,
            Shape::Table("v1".into())
        );
        assert_eq!(
            negotiate(Some(h), Endpoint::Plain).unwrap().shape,
            Shape::Plain
        );
    }

    #[test]
    fn metadata_shapes_are_negotiated_for_every_resource_request() {
        let pom = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
        assert_eq!(
            negotiate(Some(pom), Endpoint::Resource).unwrap().shape,
            Shape::PartialObjectMetadata("v1".into())
        );
        let yaml = "application/yaml;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1";
        let acc = negotiate(Some(yaml), Endpoint::Resource).unwrap();
        assert_eq!(acc.format, Format::Yaml);
        assert_eq!(
            acc.shape,
            Shape::PartialObjectMetadataList("v1beta1".into())
        );
        // Another group version, or a transformation without one, is not served.
        let v2 = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2";
        let err = negotiate(Some(v2), Endpoint::Resource).unwrap_err();
        assert_eq!(err.details, None);
        assert_eq!(err.code, 406);
        assert_eq!(
            err.message,
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
        assert!(negotiate(Some("application/json;as=Table"), Endpoint::Resource).is_err());
    }

    #[test]
    fn higher_q_wins_and_errors_skip_transformations() {
        let h = "application/yaml;q=0.5,application/json";
        assert_eq!(
            negotiate(Some(h), Endpoint::Resource).unwrap().format,
            Format::Json
        );
        let h = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
        assert!(error_format(Some(h)).is_none());
        let h = "application/json;as=Table;v=v1;g=meta.k8s.io,application/yaml";
        assert_eq!(error_format(Some(h)).unwrap().format, Format::Yaml);
        assert!(
            negotiate(Some("application/json;pretty=1"), Endpoint::Plain)
                .unwrap()
                .pretty
        );
    }

    #[test]
    fn xml_is_not_acceptable_and_discovery_falls_back() {
        let routed = negotiate(Some("application/xml"), Endpoint::Resource).unwrap_err();
        assert!(routed.message.starts_with("406: Not Acceptable"));
        let custom = negotiate(Some("application/xml"), Endpoint::CustomResource).unwrap_err();
        assert!(custom.message.starts_with("only the following media types"));
        let h =
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
        assert_eq!(
            negotiate(Some(h), Endpoint::Discovery).unwrap().shape,
            Shape::Discovery("v2".into())
        );
        assert_eq!(
            negotiate(Some(h), Endpoint::Resource).unwrap().shape,
            Shape::Plain
        );
    }
}
