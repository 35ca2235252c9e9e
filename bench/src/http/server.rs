//! The server under load as a real child process: `codemode serve --http 127.0.0.1:0` or the
//! Node `node:vm` peer, both of which print `listening on http://ADDR/mcp` on stderr once bound.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The Node MCP server that runs each eval's script in a fresh `node:vm` context: the peer a
/// user would otherwise pick. Written to a temporary file and run with `node`, with the pinned
/// `@modelcontextprotocol/sdk` found through `NODE_PATH`.
pub const NODE_VM_PEER: &str = include_str!("../../peer/node-vm-server.cjs");

/// Longest a server may take to print its address.
const START_DEADLINE: Duration = Duration::from_secs(60);
/// Stderr lines kept (the oldest go first past this).
const KEPT_LINES: usize = 10_000;
/// Stderr lines shown in error messages.
const TAIL_LINES: usize = 40;

/// A server child process, killed when dropped.
pub struct Server {
    child: Child,
    /// `http://ADDR/mcp`.
    pub url: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// Starts `codemode serve --http 127.0.0.1:0` (with `--config FILE` when given).
    ///
    /// # Errors
    /// When it cannot start or prints no address.
    pub fn codemode(exe: &Path, config: Option<&Path>) -> Result<Self, crate::BenchError> {
        let mut cmd = Command::new(exe);
        cmd.args(["serve", "--http", "127.0.0.1:0"]);
        if let Some(config) = config {
            cmd.arg("--config").arg(config);
        }
        Ok(Self::start("codemode serve", cmd)?)
    }

    /// Starts the Node `node:vm` peer with `node_modules` (holding `@modelcontextprotocol/sdk`)
    /// on `NODE_PATH`.
    ///
    /// # Errors
    /// When it cannot start or prints no address.
    pub fn node_vm(node_modules: &Path) -> Result<Self, crate::BenchError> {
        let dir = std::env::temp_dir().join(format!("codemode-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let script = dir.join("node-vm-server.cjs");
        std::fs::write(&script, NODE_VM_PEER).map_err(|e| format!("{}: {e}", script.display()))?;
        let mut cmd = Command::new("node");
        cmd.arg(&script).env("NODE_PATH", node_modules);
        Ok(Self::start("the node:vm peer", cmd)?)
    }

    fn start(what: &str, mut cmd: Command) -> Result<Self, String> {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {what}: {e}"))?;
        let stderr = child.stderr.take().expect("stderr is piped");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let kept = log.clone();
        // Drains stderr for the server's whole life: a full pipe would block it.
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line
                    .split_once("listening on ")
                    .map(|(_, u)| u.trim().to_string())
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(url);
                }
                let mut kept = kept.lock().expect("log lock");
                if kept.len() == KEPT_LINES {
                    kept.remove(0);
                }
                kept.push(line);
            }
        });
        let started = Instant::now();
        loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(url) => return Ok(Server { child, url, log }),
                Err(_) if started.elapsed() > START_DEADLINE => break,
                Err(_) => {
                    if let Ok(Some(status)) = child.try_wait() {
                        let server = Server {
                            child,
                            url: String::new(),
                            log,
                        };
                        return Err(format!(
                            "{what} exited ({status}) before listening: {}",
                            server.log_tail()
                        ));
                    }
                }
            }
        }
        let server = Server {
            child,
            url: String::new(),
            log,
        };
        Err(format!(
            "{what} printed no address in {START_DEADLINE:?}: {}",
            server.log_tail()
        ))
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The last lines the server printed on stderr.
    pub fn log_tail(&self) -> String {
        let log = self.log.lock().expect("log lock");
        log[log.len().saturating_sub(TAIL_LINES)..].join("\n")
    }

    /// How many of the lines the server printed on stderr contain `text`.
    pub fn log_lines_containing(&self, text: &str) -> usize {
        let log = self.log.lock().expect("log lock");
        log.iter().filter(|l| l.contains(text)).count()
    }

    /// Sends `SIGTERM` and waits for the exit; returns the status and how long it took.
    ///
    /// # Errors
    /// When the signal cannot be sent or the process does not exit within `deadline` (it is
    /// then killed).
    pub fn terminate(
        &mut self,
        deadline: Duration,
    ) -> Result<(ExitStatus, Duration), crate::BenchError> {
        let started = Instant::now();
        self.sigterm()?;
        let status = self.wait(deadline)?;
        Ok((status, started.elapsed()))
    }

    /// Sends `SIGTERM`.
    ///
    /// # Errors
    /// When it cannot be sent.
    pub fn sigterm(&self) -> Result<(), crate::BenchError> {
        let signal = libc::SIGTERM;
        // SAFETY: kill(2) with the pid of our own child, which has not been reaped yet (it is
        // reaped only by `wait` or `drop`, which take `&mut self`).
        let sent = unsafe { libc::kill(self.child.id() as libc::pid_t, signal) };
        if sent != 0 {
            return Err(format!("signal {signal}: {}", std::io::Error::last_os_error()).into());
        }
        Ok(())
    }

    /// Waits for the process to exit.
    ///
    /// # Errors
    /// When it does not exit within `deadline` (it is then killed).
    pub fn wait(&mut self, deadline: Duration) -> Result<ExitStatus, crate::BenchError> {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().map_err(|e| e.to_string())? {
                return Ok(status);
            }
            if started.elapsed() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Err(format!("no exit within {deadline:?}; killed").into());
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
