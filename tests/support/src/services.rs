//! Real Redis, HAProxy and Prometheus processes for tests, and an OAuth-guarded MCP upstream, each on loopback ports of its own,
//! installed from Debian (`redis-server`, `haproxy`, `prometheus`) by `debian.sh` next to this
//! crate's manifest when missing, and stopped when dropped. A missing package that cannot be installed is a failure,
//! never a skip.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long a started service may take to answer.
const READY_WITHIN: Duration = Duration::from_secs(20);

/// Installs the Debian packages of `redis-server` and `haproxy` when missing (once per
/// process). Panics with the script's output when that fails.
pub fn ensure_installed() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("debian.sh");
        let out = Command::new("bash")
            .arg(&script)
            .args(["redis-server", "redis-server", "haproxy", "haproxy"])
            .output()
            .unwrap_or_else(|e| panic!("could not run {}: {e}", script.display()));
        assert!(
            out.status.success(),
            "{} failed ({}):\n{}{}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    });
}

/// A free TCP port on 127.0.0.1 (bound and released: free unless something takes it at once).
pub fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port on 127.0.0.1: {e}"))
}

/// A `redis-server` on 127.0.0.1 with no persistence (`--save '' --appendonly no`), in a
/// directory of its own; killed when dropped.
#[derive(Debug)]
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
    password: Option<String>,
}

impl RedisServer {
    /// Starts one on a free port, in `dir` (created), and waits until it answers `PING`.
    pub fn start(dir: &Path) -> RedisServer {
        RedisServer::start_on(dir, free_port(), None)
    }

    /// Starts one requiring `password` (`requirepass`).
    pub fn start_with_password(dir: &Path, password: &str) -> RedisServer {
        RedisServer::start_on(dir, free_port(), Some(password.to_string()))
    }

    fn start_on(dir: &Path, port: u16, password: Option<String>) -> RedisServer {
        ensure_installed();
        std::fs::create_dir_all(dir)
            .unwrap_or_else(|e| panic!("could not create {}: {e}", dir.display()));
        let mut server = RedisServer {
            child: None,
            port,
            dir: dir.to_path_buf(),
            password,
        };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let log = std::fs::File::create(self.dir.join("redis.log"))
            .unwrap_or_else(|e| panic!("could not create redis.log: {e}"));
        let mut cmd = Command::new("redis-server");
        cmd.args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(&self.dir);
        if let Some(password) = &self.password {
            cmd.args(["--requirepass", password]);
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log handle"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("could not start redis-server: {e}"));
        self.child = Some(child);
        let deadline = Instant::now() + READY_WITHIN;
        while !self.answers_ping() {
            assert!(
                Instant::now() < deadline,
                "redis-server on port {} did not answer PING within {READY_WITHIN:?}; its log:\n{}",
                self.port,
                std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether `PING` gets `+PONG` (or, with a password, the server answers at all).
    fn answers_ping(&self) -> bool {
        let Ok(mut s) = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        if s.write_all(b"PING\r\n").is_err() {
            return false;
        }
        let mut buf = [0u8; 64];
        let n = s.read(&mut buf).unwrap_or(0);
        let reply = &buf[..n];
        reply.starts_with(b"+PONG") || (self.password.is_some() && reply.starts_with(b"-NOAUTH"))
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:PORT/DB` (with `:PASSWORD@` when it has one).
    pub fn url(&self, db: u32) -> String {
        match &self.password {
            Some(p) => format!("redis://:{p}@127.0.0.1:{}/{db}", self.port),
            None => format!("redis://127.0.0.1:{}/{db}", self.port),
        }
    }

    /// Kills it (`SIGKILL`) and waits for it to exit; its data is gone (no persistence).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port (after [`RedisServer::stop`]), empty.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    /// Runs `redis-cli` against it with `args` and returns its standard output (a test's way to
    /// look at, or tamper with, what a store wrote).
    pub fn cli(&self, args: &[&str]) -> Vec<u8> {
        let mut cmd = Command::new("redis-cli");
        cmd.args(["-h", "127.0.0.1", "-p", &self.port.to_string()]);
        if let Some(p) = &self.password {
            cmd.args(["--no-auth-warning", "-a", p]);
        }
        let out = cmd
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("could not run redis-cli: {e}"));
        assert!(
            out.status.success(),
            "redis-cli {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// An `haproxy` in the foreground (`-db`) with a configuration a test writes; killed when
/// dropped. [`HaProxy::start`] waits until `wait_for` accepts connections.
#[derive(Debug)]
pub struct HaProxy {
    child: Child,
    dir: PathBuf,
}

impl HaProxy {
    /// Writes `config` to `dir/haproxy.cfg`, checks it (`haproxy -c`), starts haproxy, and
    /// waits until `wait_for` (one of its frontends) accepts TCP connections.
    pub fn start(dir: &Path, config: &str, wait_for: SocketAddr) -> HaProxy {
        ensure_installed();
        std::fs::create_dir_all(dir)
            .unwrap_or_else(|e| panic!("could not create {}: {e}", dir.display()));
        let cfg = dir.join("haproxy.cfg");
        std::fs::write(&cfg, config).unwrap_or_else(|e| panic!("could not write haproxy.cfg: {e}"));
        let check = Command::new("haproxy")
            .arg("-c")
            .arg("-f")
            .arg(&cfg)
            .output()
            .unwrap_or_else(|e| panic!("could not run haproxy: {e}"));
        assert!(
            check.status.success(),
            "haproxy -c refused {}:\n{}{}",
            cfg.display(),
            String::from_utf8_lossy(&check.stdout),
            String::from_utf8_lossy(&check.stderr)
        );
        let log = std::fs::File::create(dir.join("haproxy.log"))
            .unwrap_or_else(|e| panic!("could not create haproxy.log: {e}"));
        let child = Command::new("haproxy")
            .arg("-db")
            .arg("-f")
            .arg(&cfg)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log handle"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("could not start haproxy: {e}"));
        let proxy = HaProxy {
            child,
            dir: dir.to_path_buf(),
        };
        let deadline = Instant::now() + READY_WITHIN;
        while TcpStream::connect(wait_for).is_err() {
            assert!(
                Instant::now() < deadline,
                "haproxy did not listen on {wait_for} within {READY_WITHIN:?}; its log:\n{}",
                proxy.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        proxy
    }

    /// What it printed so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("haproxy.log")).unwrap_or_default()
    }
}

impl Drop for HaProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A Debian `prometheus` server on 127.0.0.1 with a configuration a test writes, its data in a
/// directory of its own; killed when dropped.
#[derive(Debug)]
pub struct Prometheus {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Prometheus {
    /// Installs `prometheus` when missing, writes `config` (its YAML) to `dir/prometheus.yml`,
    /// starts it on a free port and waits until `/-/ready` answers `200`.
    pub fn start(dir: &Path, config: &str) -> Prometheus {
        static INSTALLED: OnceLock<()> = OnceLock::new();
        INSTALLED.get_or_init(|| {
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("debian.sh");
            let out = Command::new("bash")
                .arg(&script)
                .args(["prometheus", "prometheus"])
                .output()
                .unwrap_or_else(|e| panic!("could not run {}: {e}", script.display()));
            assert!(
                out.status.success(),
                "{} prometheus failed ({}):\n{}",
                script.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        });
        std::fs::create_dir_all(dir)
            .unwrap_or_else(|e| panic!("could not create {}: {e}", dir.display()));
        let cfg = dir.join("prometheus.yml");
        std::fs::write(&cfg, config)
            .unwrap_or_else(|e| panic!("could not write prometheus.yml: {e}"));
        let log = std::fs::File::create(dir.join("prometheus.log"))
            .unwrap_or_else(|e| panic!("could not create prometheus.log: {e}"));
        let port = free_port();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log handle"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("could not start prometheus: {e}"));
        let server = Prometheus {
            child,
            port,
            dir: dir.to_path_buf(),
        };
        let deadline = Instant::now() + READY_WITHIN;
        while !server.ready() {
            assert!(
                Instant::now() < deadline,
                "prometheus on port {port} was not ready within {READY_WITHIN:?}; its log:\n{}",
                server.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    /// `http://127.0.0.1:PORT`, its web and API root.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// What it printed so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default()
    }

    /// Whether `GET /-/ready` answers `200`.
    fn ready(&self) -> bool {
        let Ok(mut s) = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let request = "GET /-/ready HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
        if s.write_all(request.as_bytes()).is_err() {
            return false;
        }
        let mut reply = Vec::new();
        let _ = s.read_to_end(&mut reply);
        reply.starts_with(b"HTTP/1.0 200") || reply.starts_with(b"HTTP/1.1 200")
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_starts_answers_and_restarts_empty() {
        let dir = crate::scratch_dir("support", "redis");
        let mut redis = RedisServer::start(&dir);
        assert_eq!(redis.cli(&["SET", "k", "v"]), b"OK\n");
        assert_eq!(redis.cli(&["GET", "k"]), b"v\n");
        redis.restart();
        assert_eq!(redis.cli(&["EXISTS", "k"]), b"0\n");
        redis.stop();
        assert!(!redis.answers_ping());
    }

    #[test]
    fn haproxy_forwards_tcp_to_redis() {
        let dir = crate::scratch_dir("support", "haproxy");
        let redis = RedisServer::start(&dir.join("redis"));
        let front = free_port();
        let config = format!(
            "defaults\n  mode tcp\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n\
             frontend f\n  bind 127.0.0.1:{front}\n  default_backend b\n\
             backend b\n  server r 127.0.0.1:{}\n",
            redis.port()
        );
        let _proxy = HaProxy::start(
            &dir.join("haproxy"),
            &config,
            SocketAddr::from((Ipv4Addr::LOCALHOST, front)),
        );
        let mut s = TcpStream::connect((Ipv4Addr::LOCALHOST, front)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(b"PING\r\n").unwrap();
        let mut buf = [0u8; 7];
        s.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"+PONG\r\n");
    }
}

/// An upstream MCP server that is its own OAuth 2.1 authorization server (`oauth_server.py`
/// next to this crate's manifest: the Python SDK's), over streamable HTTP on a loopback port;
/// killed when dropped.
#[derive(Debug)]
pub struct OAuthUpstream {
    child: Child,
    port: u16,
    events: PathBuf,
}

impl OAuthUpstream {
    /// Starts one on a free port, its access tokens living `access_ttl` seconds, its events
    /// appended to `events`; returns once it accepts connections.
    pub fn start(events: &Path, access_ttl: u32) -> OAuthUpstream {
        Self::start_on(free_port(), events, access_ttl)
    }

    /// [`start`](Self::start) on `port` (a restart at the same address).
    pub fn start_on(port: u16, events: &Path, access_ttl: u32) -> OAuthUpstream {
        Self::start_with(port, events, access_ttl, &[])
    }

    /// An external authorization server issuing RS256 JWT access tokens signed with
    /// `keys/<key>.pem` (its `kid`: `key`), publishing the key set in `jwks_file` (read at
    /// each request: rewrite it to rotate keys); see oauth_server.py.
    pub fn start_jwt(events: &Path, key: &str, jwks_file: &Path) -> OAuthUpstream {
        Self::start_jwt_with(events, key, jwks_file, &[])
    }

    /// [`start_jwt`](Self::start_jwt) with more of oauth_server.py's settings in `env` (e.g.
    /// `SCOPES`, `WITHHOLD_ONCE`).
    pub fn start_jwt_with(
        events: &Path,
        key: &str,
        jwks_file: &Path,
        env: &[(&str, &str)],
    ) -> OAuthUpstream {
        let pem = Self::key_file(key);
        let mut all = vec![
            ("JWT_KEY", pem.as_os_str()),
            ("JWT_KID", std::ffi::OsStr::new(key)),
            ("JWKS_FILE", jwks_file.as_os_str()),
        ];
        all.extend(env.iter().map(|(k, v)| (*k, std::ffi::OsStr::new(*v))));
        Self::start_with(free_port(), events, 3600, &all)
    }

    /// The private key `keys/<name>.pem` of the test authorization servers.
    pub fn key_file(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("keys")
            .join(format!("{name}.pem"))
    }

    fn start_with(
        port: u16,
        events: &Path,
        access_ttl: u32,
        env: &[(&str, &std::ffi::OsStr)],
    ) -> OAuthUpstream {
        crate::peers::ensure_installed();
        let child = Command::new(crate::peers::python())
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("oauth_server.py"))
            .arg(port.to_string())
            .arg(events)
            .env("ACCESS_TTL", access_ttl.to_string())
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("could not start oauth_server.py: {e}"));
        let mut server = OAuthUpstream {
            child,
            port,
            events: events.to_path_buf(),
        };
        let started = Instant::now();
        while TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("oauth_server.py exited: {status}");
            }
            assert!(
                started.elapsed() < READY_WITHIN,
                "oauth_server.py did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Its events so far (`issued <client>`, `refreshed <client>`, `refused <kind>`).
    pub fn events(&self) -> Vec<String> {
        std::fs::read_to_string(&self.events)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Drop for OAuthUpstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
