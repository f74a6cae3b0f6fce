//! `--webhook-self-signed`: a CA and a serving certificate for the webhook
//! Service's DNS names (see `crate::self_signed`), written to the
//! certificate directory.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use anyhow::Context as _;

use super::Options;
use crate::Project;
use crate::self_signed::generate;

/// Writes `contents` to `path` through a temporary file, so that a reader
/// never sees half of it; `mode` is the new file's permissions.
fn write_file(path: &Path, contents: &str, mode: u32) -> anyhow::Result<()> {
    let staged = path.with_extension("tmp");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&staged)
        .with_context(|| format!("cannot write {}", staged.display()))?;
    file.write_all(contents.as_bytes())
        .with_context(|| format!("cannot write {}", staged.display()))?;
    std::fs::rename(&staged, path).with_context(|| format!("cannot write {}", path.display()))
}

/// Makes the certificates for the webhook Service and writes the serving
/// certificate, its key and `ca.crt` to the certificate directory; returns
/// the CA (PEM) for the webhook configurations.
pub(crate) fn write(options: &Options, project: &Project) -> anyhow::Result<String> {
    let names = options.service_dns_names(project);
    let pki = generate(project.name(), &names)?;
    let dir = &options.webhook_cert_dir;
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the certificate directory {}", dir.display()))?;
    write_file(&options.key_path(), &pki.key_pem, 0o600)?;
    write_file(&options.cert_path(), &pki.cert_pem, 0o644)?;
    let ca_path = dir.join("ca.crt");
    write_file(&ca_path, &pki.ca_pem, 0o644)?;
    tracing::info!(
        ca = %ca_path.display(),
        service = %names[0],
        "made a self-signed webhook certificate"
    );
    Ok(pki.ca_pem)
}
