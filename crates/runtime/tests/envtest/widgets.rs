//! A controller as scaffolded projects write them: each Widget gets two
//! ConfigMaps and a Secret it owns (written together in one batch, or one
//! after another), a Ready condition in its status and an event when the
//! status changes.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use opctl_runtime::{Controller, Manager, Scope, conditions, find};

use super::support::{PROJECT, Widget, WidgetStatus};

/// The label of what this controller owns.
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";

/// How a reconcile issues its child writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writes {
    /// In one batch (`Context::batch`).
    Together,
    /// One after another.
    InTurn,
}

pub struct Context {
    manager: opctl_runtime::Context,
    config_maps: Store<PartialObjectMeta<ConfigMap>>,
    secrets: Store<PartialObjectMeta<Secret>>,
    writes: Writes,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Kube(#[from] kube::Error),
}

pub fn register(manager: Manager, writes: Writes) -> Manager {
    manager.with_controller("widget", move |scope| setup(scope, writes), reconcile)
}

fn setup(scope: &Scope, writes: Writes) -> (Controller<Widget>, Context) {
    let owned = watcher::Config::default().labels(&format!("{MANAGED_BY}={}", PROJECT.name()));
    let config_maps = scope.cache_metadata::<ConfigMap>(owned.clone());
    let secrets = scope.cache_metadata::<Secret>(owned);
    let context = Context {
        manager: scope.context().clone(),
        config_maps: config_maps.store(),
        secrets: secrets.store(),
        writes,
    };
    let widgets = scope.cache::<Widget>(watcher::Config::default().any_semantic());
    let controller = widgets.controller().owns(config_maps).owns(secrets);
    (controller, context)
}

fn metadata(widget: &Widget, name: String) -> ObjectMeta {
    let mut owner = widget
        .controller_owner_ref(&())
        .expect("a widget from the server");
    owner.block_owner_deletion = Some(true);
    ObjectMeta {
        name: Some(name),
        namespace: widget.namespace(),
        labels: Some(BTreeMap::from([(
            MANAGED_BY.to_owned(),
            PROJECT.name().to_owned(),
        )])),
        owner_references: Some(vec![owner]),
        ..ObjectMeta::default()
    }
}

async fn reconcile(widget: Arc<Widget>, ctx: Arc<Context>) -> Result<Action, Error> {
    if widget.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let namespace = widget.namespace().unwrap_or_default();
    let name = widget.name_any();
    let client = ctx.manager.client.clone();
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);
    let data = BTreeMap::from([("size".to_owned(), widget.spec.size.to_string())]);
    let first = ConfigMap {
        metadata: metadata(&widget, format!("{name}-a")),
        data: Some(data.clone()),
        ..ConfigMap::default()
    };
    let second = ConfigMap {
        metadata: metadata(&widget, format!("{name}-b")),
        data: Some(data),
        ..ConfigMap::default()
    };
    let secret = Secret {
        metadata: metadata(&widget, format!("{name}-secret")),
        string_data: Some(BTreeMap::from([("token".to_owned(), "s3cr3t".to_owned())])),
        ..Secret::default()
    };
    let cached_first = find(&ctx.config_maps, &format!("{name}-a"), Some(&namespace));
    let cached_second = find(&ctx.config_maps, &format!("{name}-b"), Some(&namespace));
    let cached_secret = find(&ctx.secrets, &format!("{name}-secret"), Some(&namespace));
    match ctx.writes {
        Writes::Together => {
            let mut batch = ctx.manager.batch();
            batch.push(
                ctx.manager
                    .apply_owned(&config_maps, cached_first.as_deref(), first),
            );
            batch.push(
                ctx.manager
                    .apply_owned(&config_maps, cached_second.as_deref(), second),
            );
            batch.push(
                ctx.manager
                    .create_if_absent(&secrets, cached_secret.as_deref(), &secret),
            );
            batch.run().await?;
        }
        Writes::InTurn => {
            let manager = &ctx.manager;
            manager
                .apply_owned(&config_maps, cached_first.as_deref(), first)
                .await?;
            manager
                .apply_owned(&config_maps, cached_second.as_deref(), second)
                .await?;
            manager
                .create_if_absent(&secrets, cached_secret.as_deref(), &secret)
                .await?;
        }
    }
    let generation = widget.metadata.generation;
    let mut status = widget.status.clone().unwrap_or_default();
    status.observed_generation = generation;
    conditions::set(
        &mut status.conditions,
        conditions::ready(true, "Reconciled", "children in place", generation),
    );
    let widgets: Api<Widget> = Api::namespaced(client, &namespace);
    let current = widget.status.as_ref();
    if ctx
        .manager
        .apply_status_if_changed(&widgets, &widget, current, &status)
        .await?
    {
        let note = Some(format!("{name} is ready"));
        let regarding = widget.object_ref(&());
        ctx.manager
            .publish(&regarding, EventType::Normal, "Ready", "Reconcile", note)
            .await;
    }
    Ok(Action::await_change())
}

/// Whether `widget` reports Ready at its generation.
pub fn is_ready(widget: &Widget) -> bool {
    widget.status.as_ref().is_some_and(|status: &WidgetStatus| {
        status.observed_generation == widget.metadata.generation
            && conditions::is_true(&status.conditions, conditions::READY)
    })
}

/// A Widget named `name` in `namespace`.
pub fn widget(name: &str, namespace: &str) -> Widget {
    let mut widget = Widget::new(name, super::support::WidgetSpec { size: 3 });
    widget.metadata.namespace = Some(namespace.to_owned());
    widget
}
