//! Python helpers the tests start on loopback ([`PythonHelper`]): the OTLP/HTTP trace receiver
//! ([`OtlpReceiver`], `otlp_receiver.py` next to this crate's manifest, decoding with the
//! official `opentelemetry-proto` definitions) and a test's own scripts; and waiting for the
//! lines they write ([`wait_for_lines`]).

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::peers;

/// How long a helper may take to listen, and its lines to show up.
const DEADLINE: Duration = Duration::from_secs(60);

/// `python SCRIPT PORT OUT` on a free port; killed on drop.
pub struct PythonHelper {
    child: Child,
    port: u16,
}

impl PythonHelper {
    /// Starts `script` with the test peers' Python, on `port`, writing to `out`; returns once
    /// it accepts connections (panics when it exits first or does not listen in time).
    pub fn start(script: &Path, port: u16, out: &Path) -> PythonHelper {
        let child = Command::new(peers::python())
            .arg(script)
            .arg(port.to_string())
            .arg(out)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", script.display()));
        let mut helper = PythonHelper { child, port };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = helper.child.try_wait().expect("poll the helper") {
                panic!("{} exited early ({status})", script.display());
            }
            assert!(
                started.elapsed() < DEADLINE,
                "{} did not listen",
                script.display()
            );
            std::thread::sleep(Duration::from_millis(25));
        }
        helper
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for PythonHelper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An OTLP/HTTP receiver appending each span it is sent to a file as a JSON line (see
/// `otlp_receiver.py` for the line's fields).
pub struct OtlpReceiver {
    _helper: PythonHelper,
    out: PathBuf,
    endpoint: String,
}

impl OtlpReceiver {
    /// A receiver on a free port, writing to `out`.
    pub fn start(out: &Path) -> OtlpReceiver {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("otlp_receiver.py");
        let helper = PythonHelper::start(&script, crate::services::free_port(), out);
        OtlpReceiver {
            endpoint: format!("http://127.0.0.1:{}/v1/traces", helper.port()),
            _helper: helper,
            out: out.to_path_buf(),
        }
    }

    /// The URL for `telemetry.otlpEndpoint`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The spans received so far.
    pub fn received(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a span line"))
            .collect()
    }

    /// The spans received, once there are at least `n`.
    pub fn spans(&self, n: usize) -> Vec<serde_json::Value> {
        wait_for_lines(&self.out, n, "spans")
            .iter()
            .map(|l| serde_json::from_str(l).expect("a span line"))
            .collect()
    }
}

/// The lines of `path` once it has at least `n` of them (panics, naming `what`, when they do
/// not come in time).
pub fn wait_for_lines(path: &Path, n: usize, what: &str) -> Vec<String> {
    let started = Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        if lines.len() >= n {
            return lines;
        }
        assert!(
            started.elapsed() < DEADLINE,
            "{what}: {} of {n} lines within {DEADLINE:?}:\n{text}",
            lines.len()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
