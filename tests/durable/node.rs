//! One `codemode serve --http` child process with an environment of the test's choosing (the
//! nodes of a cluster share a sealing key through it).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::harness::{CODEMODE, PATIENCE};

/// One `codemode serve --http` child process; killed (`SIGKILL`) when dropped.
pub struct Node {
    /// `node0`, `node1`, … (also its server name in HAProxy).
    pub name: String,
    child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Node {
    /// Starts `codemode serve --http 127.0.0.1:0 --config CONFIG` with `env` added, and waits
    /// until it prints `listening on http://ADDR/mcp`.
    pub fn start(name: &str, config: &Path, env: &[(&str, &str)]) -> Node {
        let config = config.to_str().expect("a UTF-8 config path");
        Node::start_with_args(
            name,
            &["serve", "--http", "127.0.0.1:0", "--config", config],
            env,
        )
    }

    /// Starts `codemode ARGS` (a `serve --http` command line) with `env` added, and waits until
    /// it prints `listening on http://ADDR/mcp`; a wildcard address is reached on loopback.
    pub fn start_with_args(name: &str, args: &[&str], env: &[(&str, &str)]) -> Node {
        let mut cmd = Command::new(CODEMODE);
        cmd.args(args)
            .env_remove("CODEMODE_CONFIG")
            .env_remove("CODEMODE_STATE_KEY")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (key, value) in env {
            cmd.env(key, value);
        }
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("{name}: could not start {CODEMODE}: {e}"));
        let stderr = child.stderr.take().expect("stderr is piped");
        let log = Arc::new(Mutex::new(Vec::new()));
        let kept = log.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        // Drains stderr for the node's whole life: a full pipe would block it.
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(addr) = line
                    .split_once("listening on http://")
                    .and_then(|(_, rest)| rest.strip_suffix("/mcp"))
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(addr.trim().to_string());
                }
                kept.lock().expect("log lock").push(line);
            }
        });
        let started = Instant::now();
        loop {
            if let Ok(addr) = rx.recv_timeout(Duration::from_millis(50)) {
                let addr = match addr.strip_prefix("0.0.0.0:") {
                    Some(port) => format!("127.0.0.1:{port}"),
                    None => addr,
                };
                return Node {
                    name: name.to_string(),
                    child,
                    addr,
                    log,
                };
            }
            let exited = child.try_wait().expect("poll the node");
            if exited.is_some() || started.elapsed() > PATIENCE {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{name} did not start ({exited:?}):\n{}",
                    log.lock().expect("log lock").join("\n")
                );
            }
        }
    }

    /// Runs `codemode serve --http 127.0.0.1:0 --config CONFIG` with `env` added, expecting it
    /// to refuse to start; returns its exit status and what it printed on stderr.
    pub fn refused(config: &Path, env: &[(&str, &str)]) -> (std::process::ExitStatus, String) {
        let mut cmd = Command::new(CODEMODE);
        cmd.args(["serve", "--http", "127.0.0.1:0", "--config"])
            .arg(config)
            .env_remove("CODEMODE_CONFIG")
            .env_remove("CODEMODE_STATE_KEY")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (key, value) in env {
            cmd.env(key, value);
        }
        let mut child = cmd.spawn().expect("start codemode");
        let stderr = child.stderr.take().expect("piped");
        let printed = Arc::new(Mutex::new(String::new()));
        let kept = printed.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut kept = kept.lock().expect("log lock");
                kept.push_str(&line);
                kept.push('\n');
            }
        });
        let started = Instant::now();
        loop {
            if let Some(status) = child.try_wait().expect("poll codemode") {
                let _ = reader.join();
                return (status, printed.lock().expect("log lock").clone());
            }
            let text = printed.lock().expect("log lock").clone();
            if text.contains("listening on") || started.elapsed() > PATIENCE {
                let _ = child.kill();
                let _ = child.wait();
                panic!("codemode started instead of refusing:\n{text}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `http://127.0.0.1:PORT/mcp`.
    pub fn mcp_url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// `http://127.0.0.1:PORT` (the approval API is under `/approvals`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.addr
            .rsplit_once(':')
            .and_then(|(_, p)| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {}", self.addr))
    }

    /// Everything it printed on stderr so far.
    pub fn log(&self) -> String {
        self.log.lock().expect("log lock").join("\n")
    }

    /// Sends `signal` (`STOP`, `CONT`, …) to the process.
    pub fn signal(&self, signal: &str) {
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -{signal} failed");
    }

    /// `SIGKILL`: no chance to save anything.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// `SIGTERM`, then waits for the exit (a graceful shutdown: waiting evals are saved).
    /// Returns the exit status and what it printed.
    pub fn terminate(mut self) -> (std::process::ExitStatus, String) {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -TERM {} failed", self.child.id());
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("poll the node") {
                return (status, self.log());
            }
            assert!(
                started.elapsed() < PATIENCE,
                "{} did not exit within {PATIENCE:?} of SIGTERM:\n{}",
                self.name,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
