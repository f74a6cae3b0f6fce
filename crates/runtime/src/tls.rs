//! TLS for the metrics endpoint and the webhook server: the serving
//! certificate, from files reloaded when they change (cert-manager renews
//! them in place) or made at start-up, and a listener that completes TLS
//! handshakes concurrently, so a slow client holds up no one.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use anyhow::Context as _;
use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::Shutdown;

/// How often the certificate files are compared with the loaded ones.
const RELOAD_INTERVAL: Duration = Duration::from_secs(2);
/// How long a client may take to complete its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// aws-lc-rs, the crypto provider of every TLS connection the runtime
/// makes or serves.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// Makes aws-lc-rs the process's default crypto provider unless one is set
/// already: kube's client takes the default, and cannot choose one itself
/// when a build enables two.
pub(crate) fn install_default_provider() {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
}

/// The serving certificate in use, and the files it comes from (none for
/// one made at start-up).
pub(crate) struct Certificates {
    cert_path: PathBuf,
    key_path: PathBuf,
    current: RwLock<Arc<CertifiedKey>>,
    /// The contents of the certificate and key files last loaded.
    loaded: Mutex<(Vec<u8>, Vec<u8>)>,
    /// Whether the certificate comes from files (and is reloaded).
    from_files: bool,
}

impl fmt::Debug for Certificates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Certificates")
            .field("cert_path", &self.cert_path)
            .field("key_path", &self.key_path)
            .finish_non_exhaustive()
    }
}

fn read(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
}

/// The certificate chain and key in PEM files' contents, checked to match.
fn certified_key(cert_pem: &[u8], key_pem: &[u8]) -> anyhow::Result<CertifiedKey> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .context("the certificate file is not PEM")?;
    if chain.is_empty() {
        anyhow::bail!("the certificate file holds no certificate");
    }
    let key =
        PrivateKeyDer::from_pem_slice(key_pem).context("the key file holds no PEM private key")?;
    CertifiedKey::from_der(chain, key, &provider()).context("the key does not fit the certificate")
}

impl Certificates {
    /// Loads the certificate and key of the `what` endpoint; `hint` says
    /// how to provide them.
    pub(crate) fn load(
        what: &str,
        cert_path: PathBuf,
        key_path: PathBuf,
        hint: &str,
    ) -> anyhow::Result<Arc<Self>> {
        let loaded = read(&cert_path)
            .and_then(|cert| Ok((cert, read(&key_path)?)))
            .and_then(|(cert, key)| Ok((certified_key(&cert, &key)?, (cert, key))));
        let (key, files) = loaded.with_context(|| {
            format!(
                "cannot load the {what} serving certificate {} and key {}; {hint}",
                cert_path.display(),
                key_path.display()
            )
        })?;
        Ok(Arc::new(Self {
            cert_path,
            key_path,
            current: RwLock::new(Arc::new(key)),
            loaded: Mutex::new(files),
            from_files: true,
        }))
    }

    /// A certificate made now, signed by a CA of `owner`'s own, for the
    /// names in `dns_names` and the loopback addresses: nothing to reload.
    pub(crate) fn self_signed(owner: &str, dns_names: &[String]) -> anyhow::Result<Arc<Self>> {
        let pki = crate::self_signed::generate(owner, dns_names)?;
        let (cert, key) = (pki.cert_pem.into_bytes(), pki.key_pem.into_bytes());
        let certified = certified_key(&cert, &key)?;
        Ok(Arc::new(Self {
            cert_path: PathBuf::new(),
            key_path: PathBuf::new(),
            current: RwLock::new(Arc::new(certified)),
            loaded: Mutex::new((cert, key)),
            from_files: false,
        }))
    }

    /// Loads the files again if they changed; true when a new certificate
    /// is in use. Files that do not make a valid pair (yet: one of them may
    /// still be being written) leave the current certificate in use.
    pub(crate) fn reload(&self) -> anyhow::Result<bool> {
        if !self.from_files {
            return Ok(false);
        }
        let cert = read(&self.cert_path)?;
        let key = read(&self.key_path)?;
        let mut loaded = self
            .loaded
            .lock()
            .map_err(|_| anyhow::anyhow!("poisoned lock"))?;
        if loaded.0 == cert && loaded.1 == key {
            return Ok(false);
        }
        let certified = certified_key(&cert, &key)?;
        *self
            .current
            .write()
            .map_err(|_| anyhow::anyhow!("poisoned lock"))? = Arc::new(certified);
        *loaded = (cert, key);
        Ok(true)
    }

    /// Checks the files every few seconds until shutdown.
    pub(crate) async fn reload_on_change(self: Arc<Self>, shutdown: Shutdown) {
        if !self.from_files {
            return;
        }
        let mut interval = tokio::time::interval(RELOAD_INTERVAL);
        let mut last_error = String::new();
        loop {
            tokio::select! {
                () = shutdown.wait() => return,
                _ = interval.tick() => {}
            }
            match self.reload() {
                Ok(true) => {
                    tracing::info!(cert = %self.cert_path.display(), "reloaded a serving certificate");
                    last_error.clear();
                }
                Ok(false) => last_error.clear(),
                Err(err) => {
                    let error = format!("{err:#}");
                    if error != last_error {
                        tracing::warn!(%error, "cannot reload a serving certificate; keeping the current one");
                        last_error = error;
                    }
                }
            }
        }
    }

    /// The certificate currently in use.
    pub(crate) fn current(&self) -> Option<Arc<CertifiedKey>> {
        self.current.read().ok().map(|key| key.clone())
    }
}

impl ResolvesServerCert for Certificates {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current()
    }
}

/// Accepts TCP connections and hands over those whose TLS handshake completed.
pub(crate) struct Listener {
    connections: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl Listener {
    /// Listens for the `what` endpoint on `addr`, serving the certificates
    /// of `certificates`.
    pub(crate) async fn bind(
        what: &str,
        addr: SocketAddr,
        certificates: Arc<Certificates>,
    ) -> anyhow::Result<Self> {
        let tcp = TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen for the {what} endpoint on {addr}"))?;
        let local = tcp.local_addr()?;
        let mut config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_cert_resolver(certificates);
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let (sender, connections) = mpsc::channel(64);
        tokio::spawn(accept(tcp, acceptor, sender));
        Ok(Self { connections, local })
    }
}

/// Accepts connections until the listener is dropped; each handshake runs
/// in its own task.
async fn accept(
    tcp: TcpListener,
    acceptor: TlsAcceptor,
    sender: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    loop {
        let (stream, peer) = tokio::select! {
            () = sender.closed() => return,
            accepted = tcp.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    tracing::warn!(error = %err, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let acceptor = acceptor.clone();
        let sender = sender.clone();
        tokio::spawn(async move {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => {
                    let _ = sender.send((tls, peer)).await;
                }
                Ok(Err(err)) => tracing::debug!(%peer, error = %err, "TLS handshake failed"),
                Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
            }
        });
    }
}

impl axum::serve::Listener for Listener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.connections.recv().await {
            Some(connection) => connection,
            // The accept task only ends once this listener is gone.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::self_signed;

    fn load(dir: &Path) -> anyhow::Result<Arc<Certificates>> {
        Certificates::load(
            "test",
            dir.join("tls.crt"),
            dir.join("tls.key"),
            "pass --test-certificates",
        )
    }

    /// A directory of its own under the system's temporary directory.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        dir
    }

    fn write_pair(dir: &Path, names: &[&str]) -> Vec<u8> {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let pki = self_signed::generate("test", &names).expect("certificates");
        std::fs::write(dir.join("tls.crt"), &pki.cert_pem).expect("write");
        std::fs::write(dir.join("tls.key"), &pki.key_pem).expect("write");
        pki.cert_pem.into_bytes()
    }

    fn leaf(certificates: &Certificates) -> Vec<u8> {
        let key = certificates.current().expect("a certificate");
        key.cert[0].to_vec()
    }

    #[test]
    fn a_changed_certificate_is_picked_up_and_a_broken_one_ignored() {
        let dir = scratch("tls-reload");
        write_pair(&dir, &["first.example.com"]);
        let certificates = load(&dir).expect("loads");
        let first = leaf(&certificates);
        assert!(!certificates.reload().expect("unchanged files"));

        write_pair(&dir, &["second.example.com"]);
        assert!(certificates.reload().expect("new files"));
        let second = leaf(&certificates);
        assert_ne!(first, second);

        // A key that does not fit: the current certificate stays in use.
        let other =
            self_signed::generate("test", &["third.example.com".to_owned()]).expect("certificates");
        std::fs::write(dir.join("tls.key"), other.key_pem).expect("write");
        assert!(certificates.reload().is_err());
        assert_eq!(leaf(&certificates), second);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn missing_files_are_explained() {
        let dir = scratch("tls-missing");
        let err = load(&dir).expect_err("no files");
        let message = format!("{err:#}");
        assert!(
            message.contains("cannot load the test serving certificate"),
            "{message}"
        );
        assert!(message.contains("--test-certificates"), "{message}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_self_signed_certificate_is_made_in_memory() {
        let certificates = Certificates::self_signed("test", &["metrics.example".to_owned()])
            .expect("a certificate");
        assert!(!leaf(&certificates).is_empty());
        assert!(!certificates.reload().expect("nothing to reload"));
    }
}
