//! Response content negotiation from the `Accept` header: JSON or YAML, and
//! the transformed shapes kubectl and kube-rs ask for (`as=Table`,
//! `as=PartialObjectMetadata[List]`, aggregated discovery).

use crate::error::{ApiError, ApiResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Yaml,
}

/// A transformation the client asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    Plain,
    /// `meta.k8s.io/<version>` Table.
    Table(String),
    /// `meta.k8s.io/<version>` PartialObjectMetadata (single object or watch).
    PartialObjectMetadata(String),
    PartialObjectMetadataList(String),
    /// `apidiscovery.k8s.io/<version>` APIGroupDiscoveryList.
    Discovery(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    pub format: Format,
    pub shape: Shape,
}

/// Which shapes the endpoint can produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// Writes, Status responses and the like: plain objects only.
    Plain,
    /// GET of one object (or a watch): Table and PartialObjectMetadata.
    Object,
    /// List: Table and PartialObjectMetadataList.
    List,
    /// `/api` and `/apis`: aggregated discovery.
    Discovery,
}

fn shape_for(endpoint: Endpoint, as_: &str, group: &str, version: &str) -> Option<Shape> {
    let meta_v = matches!(version, "v1" | "v1beta1") && group == "meta.k8s.io";
    match (endpoint, as_) {
        (Endpoint::Object | Endpoint::List, "Table") if meta_v => {
            Some(Shape::Table(version.into()))
        }
        (Endpoint::Object, "PartialObjectMetadata") if meta_v => {
            Some(Shape::PartialObjectMetadata(version.into()))
        }
        (Endpoint::List, "PartialObjectMetadataList") if meta_v => {
            Some(Shape::PartialObjectMetadataList(version.into()))
        }
        (Endpoint::Discovery, "APIGroupDiscoveryList")
            if group == "apidiscovery.k8s.io" && matches!(version, "v2" | "v2beta1") =>
        {
            Some(Shape::Discovery(version.into()))
        }
        _ => None,
    }
}

/// Picks the first acceptable media range; none acceptable is 406.
pub fn negotiate(accept: Option<&str>, endpoint: Endpoint) -> ApiResult<Accepted> {
    let header = accept.unwrap_or("").trim();
    if header.is_empty() {
        return Ok(Accepted {
            format: Format::Json,
            shape: Shape::Plain,
        });
    }
    for range in header.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let mut as_ = "";
        let mut group = "";
        let mut version = "";
        let mut q_zero = false;
        for p in parts {
            if let Some((k, v)) = p.split_once('=') {
                match k.trim() {
                    "as" => as_ = v.trim(),
                    "g" => group = v.trim(),
                    "v" => version = v.trim(),
                    "q" => q_zero = v.trim().parse::<f32>().is_ok_and(|q| q <= 0.0),
                    _ => {}
                }
            }
        }
        if q_zero {
            continue;
        }
        let format = match media.as_str() {
            "application/json" | "application/*" | "*/*" => Format::Json,
            "application/yaml" => Format::Yaml,
            _ => continue,
        };
        if as_.is_empty() {
            return Ok(Accepted {
                format,
                shape: Shape::Plain,
            });
        }
        if format == Format::Json
            && let Some(shape) = shape_for(endpoint, as_, group, version)
        {
            return Ok(Accepted { format, shape });
        }
    }
    Err(ApiError::not_acceptable())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_table_header_picks_table() {
        let h = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(
            negotiate(Some(h), Endpoint::List).unwrap().shape,
            Shape::Table("v1".into())
        );
        assert_eq!(
            negotiate(Some(h), Endpoint::Plain).unwrap().shape,
            Shape::Plain
        );
    }

    #[test]
    fn xml_is_not_acceptable_and_discovery_falls_back() {
        assert_eq!(
            negotiate(Some("application/xml"), Endpoint::Object)
                .unwrap_err()
                .code,
            406
        );
        let h =
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
        assert_eq!(
            negotiate(Some(h), Endpoint::Discovery).unwrap().shape,
            Shape::Discovery("v2".into())
        );
        assert_eq!(
            negotiate(Some(h), Endpoint::Object).unwrap().shape,
            Shape::Plain
        );
        let pom = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
        assert_eq!(
            negotiate(Some(pom), Endpoint::Object).unwrap_err().code,
            406
        );
    }
}
