//! A stdio upstream's stdout, read one message (line) at a time within [`MAX_MESSAGE`] bytes.
//!
//! rmcp drops a longer line itself, but silently to the caller: the call it answered then
//! waits for its timeout (a minute by default) and fails as "did not answer". An upstream can
//! send such a line with no malice — a 50 MB image is 67 MB of base64 on one line — so this
//! reader drops it first, without keeping more than [`MAX_MESSAGE`] bytes of it, and in its
//! place hands rmcp a JSON-RPC error answering the same request: the call fails at once,
//! saying how large the answer was ([`TOO_LARGE`]), and the connection goes on.
//!
//! The request is found by the `id` next to the line's outer braces — first (`{"jsonrpc":
//! "2.0","id":3,"result":…`, the Python SDK's order) or last (`{"result":…,"jsonrpc":"2.0",
//! "id":3}`, the TypeScript SDK's) — where it is a member of the outer object whatever the
//! middle holds. A line that is not a result, or whose `id` is elsewhere, is dropped with a
//! log line only.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use codemode_policies::neutralize;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, ReadBuf};

/// The longest message read from a stdio upstream: rmcp's own bound
/// ([`rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH`], 16 MiB), also its streamable-HTTP
/// client's bound on one event.
pub(crate) const MAX_MESSAGE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;
/// The `data.codemode` of the error that stands for a dropped answer.
pub(crate) const TOO_LARGE: &str = "message_too_large";
/// Bytes of a dropped line's start and end kept to find its `id`.
const EDGE: usize = 256;

/// `inner`, each line longer than `max` bytes replaced (see the module docs).
pub(crate) struct BoundedLines<R> {
    inner: R,
    max: usize,
    server: String,
    /// The line being read (at most `max` bytes).
    line: Vec<u8>,
    /// Whole lines ready for the reader.
    ready: VecDeque<u8>,
    /// The line being dropped.
    dropping: Option<Dropped>,
    eof: bool,
    chunk: Box<[u8]>,
}

struct Dropped {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    len: u64,
}

impl<R> BoundedLines<R> {
    /// `inner`, the stdout of upstream `server`, with lines of at most `max` bytes.
    pub(crate) fn new(inner: R, server: &str, max: usize) -> Self {
        BoundedLines {
            inner,
            max,
            server: server.to_string(),
            line: Vec::new(),
            ready: VecDeque::new(),
            dropping: None,
            eof: false,
            chunk: vec![0; 64 * 1024].into_boxed_slice(),
        }
    }

    /// Takes in bytes read from `inner`.
    fn take_in(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let newline = bytes.iter().position(|&b| b == b'\n');
            let (part, rest) = match newline {
                Some(i) => (&bytes[..i], &bytes[i + 1..]),
                None => (bytes, &[][..]),
            };
            bytes = rest;
            match &mut self.dropping {
                Some(dropped) => dropped.extend(part),
                None => {
                    self.line.extend_from_slice(part);
                    if self.line.len() > self.max {
                        let mut dropped = Dropped {
                            head: Vec::new(),
                            tail: VecDeque::new(),
                            len: 0,
                        };
                        dropped.extend(&std::mem::take(&mut self.line));
                        self.line.shrink_to_fit();
                        self.dropping = Some(dropped);
                    }
                }
            }
            if newline.is_some() {
                self.end_line();
            }
        }
    }

    /// A newline came: the line is ready, or its replacement is.
    fn end_line(&mut self) {
        match self.dropping.take() {
            Some(mut dropped) => {
                let id = response_id(&dropped.head, dropped.tail.make_contiguous());
                tracing::warn!(
                    "upstream server `{}` sent a message of {} bytes, over the {} codemode reads in one message: it was dropped{}",
                    neutralize(&self.server),
                    dropped.len,
                    self.max,
                    if id.is_some() {
                        ""
                    } else {
                        " (not a result codemode could match to its call)"
                    }
                );
                if let Some(id) = id {
                    let message = format!(
                        "its answer was {} bytes, over the {} bytes codemode reads in one message from a stdio server (a large image or file?); it was dropped",
                        dropped.len, self.max
                    );
                    let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603,
                        "message": message, "data": {"codemode": TOO_LARGE, "bytes": dropped.len}}});
                    self.ready.extend(error.to_string().bytes());
                    self.ready.push_back(b'\n');
                }
            }
            None => {
                self.ready.extend(self.line.drain(..));
                self.ready.push_back(b'\n');
            }
        }
    }
}

impl Dropped {
    fn extend(&mut self, part: &[u8]) {
        let room = EDGE.saturating_sub(self.head.len());
        self.head.extend_from_slice(&part[..room.min(part.len())]);
        self.tail
            .extend(part[part.len().saturating_sub(EDGE)..].iter());
        while self.tail.len() > EDGE {
            self.tail.pop_front();
        }
        self.len += part.len() as u64;
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        loop {
            if !this.ready.is_empty() {
                let n = buf.remaining().min(this.ready.len());
                let (a, b) = this.ready.as_slices();
                let from_a = n.min(a.len());
                buf.put_slice(&a[..from_a]);
                buf.put_slice(&b[..n - from_a]);
                this.ready.drain(..n);
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                // A last line without a newline goes as it is (rmcp reads it at the end).
                if this.dropping.take().is_none() && !this.line.is_empty() {
                    this.ready.extend(this.line.drain(..));
                    continue;
                }
                return Poll::Ready(Ok(()));
            }
            let mut chunk = ReadBuf::new(&mut this.chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut chunk) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => {
                    let n = chunk.filled().len();
                    if n == 0 {
                        this.eof = true;
                    } else {
                        let bytes = this.chunk[..n].to_vec();
                        this.take_in(&bytes);
                    }
                }
            }
        }
    }
}

/// The `id` of a JSON-RPC result whose text starts with `head` and ends with `tail`, when it is
/// next to the outer braces (see the module docs).
fn response_id(head: &[u8], tail: &[u8]) -> Option<Value> {
    let text = String::from_utf8_lossy(head);
    let mut rest = text.trim_start().strip_prefix('{')?;
    let mut id = None;
    // Up to `jsonrpc` and `id` in any order, then `result`.
    loop {
        let (key, after) = key(rest)?;
        if key == "result" {
            break;
        }
        if key != "jsonrpc" && key != "id" {
            return None;
        }
        let mut values = serde_json::Deserializer::from_str(after).into_iter::<Value>();
        let value = values.next()?.ok()?;
        let used = values.byte_offset();
        if key == "id" {
            id = Some(value);
        }
        rest = after[used..].trim_start().strip_prefix(',')?;
    }
    id.or_else(|| last_id(&String::from_utf8_lossy(tail)))
        .filter(|id| id.is_number() || id.is_string())
}

/// `"key":` at the start of `text` (after blanks): the key and what follows the colon.
fn key(text: &str) -> Option<(&str, &str)> {
    let text = text.trim_start().strip_prefix('"')?;
    let end = text.find('"')?;
    let (key, rest) = (&text[..end], &text[end + 1..]);
    Some((key, rest.trim_start().strip_prefix(':')?))
}

/// The `id` of an object whose text ends with `tail`, when `id` is its last member or the one
/// before a last `"jsonrpc":"2.0"`.
fn last_id(tail: &str) -> Option<Value> {
    let body = tail.trim_end().strip_suffix('}')?.trim_end();
    let body = match body.strip_suffix("\"2.0\"") {
        Some(before) => {
            let before = before.trim_end().strip_suffix(':')?.trim_end();
            before
                .strip_suffix("\"jsonrpc\"")?
                .trim_end()
                .strip_suffix(',')?
        }
        None => body,
    };
    let body = body.trim_end();
    // The value: a number, or a string without quotes or escapes inside.
    let start = if let Some(inner) = body.strip_suffix('"') {
        let open = inner.rfind('"')?;
        if inner[open + 1..].contains('\\') {
            return None;
        }
        open
    } else {
        body.rfind(|c: char| !(c.is_ascii_digit() || c == '-'))? + 1
    };
    let value: Value = serde_json::from_str(&body[start..]).ok()?;
    let before = body[..start].trim_end().strip_suffix(':')?.trim_end();
    let before = before.strip_suffix("\"id\"")?.trim_end();
    (before.ends_with(',') || before.ends_with('{')).then_some(value)
}

#[cfg(test)]
#[path = "bounded_tests.rs"]
mod tests;
