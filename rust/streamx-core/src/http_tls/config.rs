//! The certificates an HTTPS connection trusts: the system's store (`rustls-native-certs`,
//! which reads `SSL_CERT_FILE` and `SSL_CERT_DIR` when set) plus every PEM bundle the
//! caller names (from `AWS_CA_BUNDLE`, `SSL_CERT_FILE`, `REQUESTS_CA_BUNDLE`).

use std::path::Path;
use std::sync::Arc;

use rustls::crypto::ring::cipher_suite as suite;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::{ClientConfig, RootCertStore, SupportedCipherSuite};

/// A client configuration trusting the system's roots and the PEM files of `bundles`
/// (`(where it was named, path)`). An unreadable bundle, or one without a certificate, is
/// an error naming where it was named and its path: trusting less than the user said would
/// surface later as a verification failure with no hint why.
pub fn client_config(bundles: &[(String, String)]) -> Result<Arc<ClientConfig>, String> {
    let mut roots = RootCertStore::empty();
    // Unreadable system entries are skipped, as OpenSSL skips them.
    let native = rustls_native_certs::load_native_certs();
    roots.add_parsable_certificates(native.certs);
    for (named_by, path) in bundles {
        let certs = read_bundle(Path::new(path))
            .map_err(|err| format!("{named_by}={path}: cannot read a PEM bundle: {err}"))?;
        if certs.is_empty() {
            return Err(format!("{named_by}={path}: no PEM certificate in the file"));
        }
        let (_, refused) = roots.add_parsable_certificates(certs);
        if refused > 0 {
            return Err(format!(
                "{named_by}={path}: {refused} certificate(s) in the bundle cannot be parsed"
            ));
        }
    }
    let provider = Arc::new(CryptoProvider {
        cipher_suites: preferred_suites(),
        ..rustls::crypto::ring::default_provider()
    });
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| format!("TLS configuration: {err}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

fn read_bundle(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    CertificateDer::pem_file_iter(path)
        .map_err(|err| err.to_string())?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| err.to_string())
}

/// *ring*'s suites, AES-128-GCM first. A server that takes the client's order (nginx and
/// OpenSSL do by default) would otherwise pick AES-256-GCM, ring's first: four more AES
/// rounds per block on both ends for every body byte, for no strength a download needs.
/// The set is the provider's default, only reordered.
fn preferred_suites() -> Vec<SupportedCipherSuite> {
    vec![
        suite::TLS13_AES_128_GCM_SHA256,
        suite::TLS13_AES_256_GCM_SHA384,
        suite::TLS13_CHACHA20_POLY1305_SHA256,
        suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        suite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        suite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        suite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        suite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preferred_suites_are_the_default_set_reordered() {
        let mut ours: Vec<_> = preferred_suites()
            .iter()
            .map(SupportedCipherSuite::suite)
            .collect();
        let mut default: Vec<_> = rustls::crypto::ring::DEFAULT_CIPHER_SUITES
            .iter()
            .map(SupportedCipherSuite::suite)
            .collect();
        assert_eq!(ours[0], rustls::CipherSuite::TLS13_AES_128_GCM_SHA256);
        ours.sort_by_key(|s| u16::from(*s));
        default.sort_by_key(|s| u16::from(*s));
        assert_eq!(ours, default);
    }
}
