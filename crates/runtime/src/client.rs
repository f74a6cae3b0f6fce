//! The manager's Kubernetes client: kube's, with the project's `User-Agent`
//! on every request (kube-rs sends none of its own).

use axum::http::HeaderValue;
use axum::http::header::USER_AGENT;
use kube::Client;
use kube::client::ClientBuilder;
use tower_http::set_header::SetRequestHeaderLayer;

use crate::Project;

impl Project {
    /// A client of the API server `config` names that sends
    /// [`Project::user_agent`] as `User-Agent` with every request: what the
    /// manager's controllers, caches and webhooks use.
    ///
    /// ```
    /// # use opctl_runtime::Project;
    /// # let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    /// # runtime.block_on(async {
    /// const PROJECT: Project = Project::new("guestbook", "example.com", "0.1.0");
    /// let config = kube::Config::new("https://127.0.0.1:6443".parse().unwrap());
    /// let client = PROJECT.client(config).expect("a client");
    /// # drop(client);
    /// # });
    /// ```
    pub fn client(&self, config: kube::Config) -> Result<Client, kube::Error> {
        crate::tls::install_default_provider();
        let agent = HeaderValue::from_str(&self.user_agent())
            .map_err(|err| kube::Error::HttpError(err.into()))?;
        let builder = ClientBuilder::try_from(config)?;
        let layer = SetRequestHeaderLayer::overriding(USER_AGENT, agent);
        Ok(builder.with_layer(&layer).build())
    }
}
