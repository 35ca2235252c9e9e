//! The transport of a stdio upstream: rmcp's `TokioChildProcess` made again around one change —
//! the child's stdout is read through [`BoundedLines`], so that an answer too large to read
//! fails its call at once instead of leaving it to time out.
//!
//! The rest is as rmcp does it: the child is killed when the transport is dropped, and
//! [`close`](Transport::close) follows MCP's stdio shutdown (close its stdin, wait for it to
//! exit, then `SIGTERM`, then kill).

use std::time::Duration;

use process_wrap::tokio::{ChildWrapper, CommandWrap};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

use super::bounded::{BoundedLines, MAX_MESSAGE};

/// How long [`close`](Transport::close) waits for the child at each step (rmcp's wait).
const EXIT_WAIT: Duration = Duration::from_secs(3);

/// A running stdio upstream and the transport over its stdin and (bounded) stdout.
pub(crate) struct ChildTransport {
    child: KillOnDrop,
    transport: AsyncRwTransport<RoleClient, BoundedLines<ChildStdout>, ChildStdin>,
}

/// Kills the child when dropped, unless it already exited.
struct KillOnDrop(Option<Box<dyn ChildWrapper>>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                if let Err(e) = Box::into_pin(child.kill()).await {
                    tracing::warn!("could not kill an upstream server: {e}");
                }
            });
        }
    }
}

impl ChildTransport {
    /// Spawns `command` (stdin and stdout piped, stderr as `stderr` says) for upstream
    /// `server`. Returns the transport, the child's pid and its stderr when piped.
    pub(crate) fn spawn(
        mut command: CommandWrap,
        server: &str,
        stderr: std::process::Stdio,
    ) -> std::io::Result<(Self, Option<u32>, Option<ChildStderr>)> {
        command
            .command_mut()
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(stderr);
        let mut child = command.spawn()?;
        let taken = (
            child.inner_mut().stdin().take(),
            child.inner_mut().stdout().take(),
        );
        let err = child.inner_mut().stderr().take();
        let pid = child.id();
        let child = KillOnDrop(Some(child));
        let (Some(stdin), Some(stdout)) = taken else {
            return Err(std::io::Error::other(
                "the child's stdin or stdout is not piped",
            ));
        };
        let stdout = BoundedLines::new(stdout, server, MAX_MESSAGE);
        let transport = AsyncRwTransport::new(stdout, stdin);
        Ok((ChildTransport { child, transport }, pid, err))
    }

    /// MCP's stdio shutdown: stdin closed, a wait, `SIGTERM`, a wait, kill.
    async fn shut_down(&mut self) -> std::io::Result<()> {
        let Some(child) = self.child.0.as_mut() else {
            return Ok(());
        };
        self.transport.close().await?;
        if exited(child).await {
            self.child.0 = None;
            return Ok(());
        }
        if child.signal(libc::SIGTERM).is_ok() && exited(child).await {
            self.child.0 = None;
            return Ok(());
        }
        let killed = Box::into_pin(child.kill()).await;
        self.child.0 = None;
        killed
    }
}

/// Whether `child` exits within [`EXIT_WAIT`].
async fn exited(child: &mut Box<dyn ChildWrapper>) -> bool {
    matches!(
        tokio::time::timeout(EXIT_WAIT, child.wait()).await,
        Ok(Ok(_))
    )
}

impl Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.transport.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.transport.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.shut_down()
    }
}
