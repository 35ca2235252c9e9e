//! An HTTPS server on a loopback port of its own, for the tests of codemode's HTTPS clients: a
//! certificate for `127.0.0.1` and `localhost` signed by a test CA, and `200 ok` to every
//! request. Its TLS is rustls with *ring* given explicitly, so it installs no process-wide
//! provider: a client under test that needs one must install it itself.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The test CA that signed the server's certificate (made for these tests only, valid
/// 2020–2120; its key was not kept). A client trusting it completes the handshake.
pub const CA_PEM: &str = "-----BEGIN CERTIFICATE-----
MIIBaTCCAQ+gAwIBAgIBATAKBggqhkjOPQQDAjAbMRkwFwYDVQQDDBBjb2RlbW9k
ZSB0ZXN0IENBMCAXDTIwMDEwMTAwMDAwMFoYDzIxMjAwMTAxMDAwMDAwWjAbMRkw
FwYDVQQDDBBjb2RlbW9kZSB0ZXN0IENBMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcD
QgAE1ckE66lNk3kTCvxpfMuhBwQjVvffXHWqNh7E9MURu08daeMF8qcKwcSpx/++
RLa9qHK1VeZW6YL0rxyzd7Lt1KNCMEAwDwYDVR0TAQH/BAUwAwEB/zAOBgNVHQ8B
Af8EBAMCAgQwHQYDVR0OBBYEFNvIY4B2GDRFKU8LXogZKXrqctrOMAoGCCqGSM49
BAMCA0gAMEUCIQDVyADU6Ad2mnrady9noZIRwlfdRG1b2SMy3FZ8GDCVkgIgZ4Au
Sd4kO0414Wl8JBwJsO9a/z/cuEoKUbkhdb+3O7Y=
-----END CERTIFICATE-----
";

/// The server's certificate: `127.0.0.1` and `localhost`, valid 2020–2120.
const CERT_PEM: &str = "-----BEGIN CERTIFICATE-----
MIIBtDCCAVmgAwIBAgIBAjAKBggqhkjOPQQDAjAbMRkwFwYDVQQDDBBjb2RlbW9k
ZSB0ZXN0IENBMCAXDTIwMDEwMTAwMDAwMFoYDzIxMjAwMTAxMDAwMDAwWjAUMRIw
EAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAQP++1h
beRNHaWwLCX1d/y8UAEIKaG+pCY+cbqEw7meoiory/BSypVM0ObSyC6MC65b8aWY
b1o0RI0d8m14U3zAo4GSMIGPMAwGA1UdEwEB/wQCMAAwDgYDVR0PAQH/BAQDAgeA
MBMGA1UdJQQMMAoGCCsGAQUFBwMBMBoGA1UdEQQTMBGHBH8AAAGCCWxvY2FsaG9z
dDAdBgNVHQ4EFgQUvL3WlN3VSL0QbOJ5arBmFvdetLEwHwYDVR0jBBgwFoAU28hj
gHYYNEUpTwteiBkpeupy2s4wCgYIKoZIzj0EAwIDSQAwRgIhAOe4EpwxYbn6Equs
AgHGPUFRdQ/71HYRrBk8cDuyVd/rAiEA1AxXMzXe8pYE5JLjyPHiWiMXobkfPn1G
dgDI7zt/2EE=
-----END CERTIFICATE-----
";

/// The server certificate's P-256 key (made for these tests only).
const KEY_PEM: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg+XdrdvpERClOPM0X
+h08fcIMvPcrkMHJEtjWITSTr4ehRANCAAQP++1hbeRNHaWwLCX1d/y8UAEIKaG+
pCY+cbqEw7meoiory/BSypVM0ObSyC6MC65b8aWYb1o0RI0d8m14U3zA
-----END PRIVATE KEY-----
";

/// Starts the server on `127.0.0.1:0` for the rest of the process; returns its port.
pub fn serve() -> u16 {
    let cert = CertificateDer::from_pem_slice(CERT_PEM.as_bytes()).expect("the test certificate");
    let key = PrivateKeyDer::from_pem_slice(KEY_PEM.as_bytes()).expect("the test key");
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("TLS versions")
    .with_no_client_auth()
    .with_single_cert(vec![cert], key)
    .expect("the test certificate and key");
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let port = listener.local_addr().expect("its address").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            let config = config.clone();
            std::thread::spawn(move || answer(config, stream));
        }
    });
    port
}

/// One connection: the handshake, the request's head, `200 ok`. A client that refuses the
/// certificate ends it during the handshake.
fn answer(config: Arc<rustls::ServerConfig>, stream: TcpStream) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let Ok(connection) = rustls::ServerConnection::new(config) else {
        return;
    };
    let mut tls = rustls::StreamOwned::new(connection, stream);
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match tls.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let _ = tls.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\
          connection: close\r\n\r\nok",
    );
    tls.conn.send_close_notify();
    let _ = tls.flush();
}
