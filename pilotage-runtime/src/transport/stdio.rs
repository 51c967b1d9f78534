//! Newline-delimited JSON-RPC over a reader/writer pair (stdio in production).
//!
//! rmcp's async read/write transport silently ignores a line that is not JSON, and answers a
//! line it cannot read as a client message with an error that has no `id`, notifications
//! included. [`serve_lines`] serves rmcp through a transport of its own, `Lines`, instead:
//! rmcp's loop asks it for the next message, and it reads lines until one is a client message,
//! answering the others itself.
//!
//! Every line is judged with `frame::judge`: a client message goes to
//! rmcp (the line's only parse); anything else is answered as JSON-RPC 2.0 requires (`-32700`
//! for a line that is not JSON, `-32600`/`-32602` with the request's id, no reply to a
//! notification), and a `tools/call` nested too deep to parse gets the runtime's
//! `bounds_exceeded` result. Replies and rmcp's messages are written as whole lines under one
//! lock, so they never interleave; a reply is written in full before the next line is read, so
//! replies keep the order of their lines. No task or channel stands between the reader, rmcp
//! and the writer.

use std::future::Future;
use std::io;
use std::sync::Arc;

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::{RoleServer, ServerInitializeError};
use rmcp::transport::Transport;
use rmcp::{ServerHandler, ServiceExt};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::frame::{self, Judged};
use super::parse_error;

/// Longest accepted input line, the same 16 MiB limit rmcp applies.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// UTF-8 byte order mark, which rmcp (and RFC 8259) tolerate before JSON.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

type SharedWriter<W> = Arc<Mutex<W>>;

/// The first I/O failure of a session, which [`serve_lines`] returns.
type Failure = Arc<std::sync::Mutex<Option<io::Error>>>;

/// Serves `handler` over the process's stdin and stdout until stdin closes.
///
/// See [`serve_lines`] for the behaviour; nothing but protocol messages is
/// written to stdout. The two are read and written as [`process_stdio`] says.
pub async fn serve_stdio<S: ServerHandler>(handler: S) -> io::Result<()> {
    let (reader, writer) = process_stdio();
    serve_lines(handler, reader, writer).await
}

/// The process's stdin, as [`process_stdio`] reads it.
pub type StdinReader = Box<dyn AsyncRead + Send + Unpin>;
/// The process's stdout, as [`process_stdio`] writes it.
pub type StdoutWriter = Box<dyn AsyncWrite + Send + Unpin>;

/// The process's stdin and stdout for a protocol spoken over them. A pipe (as a host or a
/// client spawns a server) is read and written non-blocking by the runtime's own workers;
/// anything else (a terminal, a file) goes through tokio's stdio, which hands every read and
/// write to a blocking thread and back. Those two thread hand-offs were a visible part of a
/// short call's time (`benches/postgres.rs`: `run_sql` of `SELECT 1` answers in about half a
/// millisecond).
///
/// A pipe is made non-blocking for the whole process: code that writes to stdout itself (which
/// would corrupt the protocol anyway) may then see `WouldBlock` when the pipe is full.
///
/// ```no_run
/// # async fn f() -> std::io::Result<()> {
/// use tokio::io::AsyncWriteExt;
/// let (_stdin, mut stdout) = pilotage::transport::stdio::process_stdio();
/// stdout.write_all(b"{}\n").await?;
/// # Ok(()) }
/// ```
pub fn process_stdio() -> (StdinReader, StdoutWriter) {
    use std::os::fd::AsFd;
    use tokio::net::unix::pipe;
    // Outside a runtime there is no reactor to register a pipe with (tokio would panic): the
    // pipes are only tried inside one.
    let inside = tokio::runtime::Handle::try_current().is_ok();
    let own = |fd: std::os::fd::BorrowedFd<'_>| if inside { fd.try_clone_to_owned().ok() } else { None };
    let read: StdinReader = match own(std::io::stdin().as_fd()).map(pipe::Receiver::from_owned_fd) {
        Some(Ok(pipe)) => Box::new(pipe),
        _ => Box::new(tokio::io::stdin()),
    };
    let write: StdoutWriter = match own(std::io::stdout().as_fd()).map(pipe::Sender::from_owned_fd) {
        Some(Ok(pipe)) => Box::new(pipe),
        _ => Box::new(tokio::io::stdout()),
    };
    (read, write)
}

/// Serves `handler` as MCP over newline-delimited JSON-RPC on `reader`/`writer`.
///
/// Every line read is either handed to rmcp (when it is a client message) or judged here:
/// a line that is not JSON gets `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,...}}`,
/// JSON that is not a JSON-RPC 2.0 request gets `-32600` and a request whose params do not
/// fit its method `-32602`, each with the request's id where it is readable; a notification
/// that rmcp cannot read gets no reply. Blank lines are ignored, and a line longer than
/// 16 MiB is discarded and answered with a parse error. Each reply line is flushed as written.
///
/// Returns `Ok(())` once `reader` reaches EOF and rmcp has answered the
/// requests already in flight, including when EOF comes before `initialize`.
/// Returns an error when reading or writing fails, or when rmcp refuses to
/// start the session (for example a notification sent before `initialize`).
pub async fn serve_lines<S, R, W>(handler: S, reader: R, writer: W) -> io::Result<()>
where
    S: ServerHandler,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    // Cancelled when the writer fails, which stops rmcp.
    let stop = CancellationToken::new();
    let failure = Failure::default();
    let lines = Lines {
        reader: BufReader::new(reader),
        line: Vec::new(),
        discarding: false,
        writer: Arc::new(Mutex::new(writer)),
        replying: None,
        stop: stop.clone(),
        failure: failure.clone(),
    };
    let served = match handler.serve_with_ct(lines, stop).await {
        Ok(running) => running.waiting().await.map(drop).map_err(io::Error::other),
        // The input ended, or the output failed, before a session started.
        Err(ServerInitializeError::ConnectionClosed(_) | ServerInitializeError::Cancelled) => Ok(()),
        Err(refused) => Err(io::Error::new(io::ErrorKind::InvalidData, refused.to_string())),
    };
    let failed = failure.lock().unwrap_or_else(|e| e.into_inner()).take();
    failed.map_or(served, Err)
}

/// rmcp's transport over newline-delimited JSON-RPC (see the module).
struct Lines<R, W> {
    reader: BufReader<R>,
    /// The line being read: kept between calls, since rmcp drops an unfinished
    /// [`Transport::receive`] whenever it has something else to do, and reading resumes.
    line: Vec<u8>,
    /// The rest of an over-long line is being skipped.
    discarding: bool,
    writer: SharedWriter<W>,
    /// The reply to the last line judged here, being written.
    replying: Option<JoinHandle<()>>,
    stop: CancellationToken,
    failure: Failure,
}

/// What one [`Lines::read_line`] found.
enum LineRead {
    /// A whole line is in [`Lines::line`] (the last one may lack its newline).
    Line,
    /// The line was longer than [`MAX_LINE_BYTES`]; it is being skipped.
    TooLong,
    /// The input has ended.
    Eof,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin + Send + 'static> Lines<R, W> {
    /// The next client message, answering every other line; `None` at the end of the input or
    /// once reading fails.
    async fn next_message(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            if let Some(replying) = self.replying.as_mut() {
                let _ = replying.await;
                self.replying = None;
            }
            let reply = match self.read_line().await {
                Ok(LineRead::Eof) => return None,
                Err(e) => {
                    fail(&self.failure, &self.stop, e);
                    return None;
                }
                Ok(LineRead::TooLong) => parse_error(format!("line exceeds {MAX_LINE_BYTES} bytes")),
                Ok(LineRead::Line) => {
                    // Nothing awaits from here to the message's return, so a line judged is
                    // never lost to a dropped call; the buffer keeps its capacity.
                    let judged = judge(&self.line);
                    self.line.clear();
                    match judged {
                        Some(Judged::Message(message)) => return Some(*message),
                        Some(Judged::Reply(reply)) => reply,
                        Some(Judged::Silent) | None => continue,
                    }
                }
            };
            let writing = self.write(Ok(reply.to_string().into_bytes()));
            self.replying = Some(tokio::spawn(async move {
                let _ = writing.await;
            }));
        }
    }

    /// Writes `text` (a message that could not be serialised is logged and skipped) as one
    /// line; a failure is kept for [`serve_lines`] and stops rmcp. Runs to completion even when
    /// its caller is dropped, as a spawned task.
    fn write(
        &self,
        text: serde_json::Result<Vec<u8>>,
    ) -> impl Future<Output = io::Result<()>> + Send + 'static {
        let (writer, stop, failure) = (self.writer.clone(), self.stop.clone(), self.failure.clone());
        async move {
            let text = match text {
                Ok(text) => text,
                Err(e) => {
                    tracing::error!(error = %e, "cannot serialize an outgoing message");
                    return Ok(());
                }
            };
            let written = write_line(&writer, &text).await;
            if let Err(e) = &written {
                fail(&failure, &stop, io::Error::new(e.kind(), e.to_string()));
            }
            written
        }
    }

    /// Reads up to the end of the next line, resuming a line a dropped call left unfinished.
    async fn read_line(&mut self) -> io::Result<LineRead> {
        loop {
            if self.discarding {
                let buffer = self.reader.fill_buf().await?;
                if buffer.is_empty() {
                    return Ok(LineRead::Eof);
                }
                let (len, end) = match buffer.iter().position(|&b| b == b'\n') {
                    Some(end) => (end + 1, true),
                    None => (buffer.len(), false),
                };
                self.reader.consume(len);
                self.discarding = !end;
                continue;
            }
            // Reading one byte past the limit tells an oversized line apart.
            let left = (MAX_LINE_BYTES + 1).saturating_sub(self.line.len()) as u64;
            let read = (&mut self.reader).take(left).read_until(b'\n', &mut self.line).await?;
            if self.line.ends_with(b"\n") {
                return Ok(LineRead::Line);
            }
            if self.line.len() > MAX_LINE_BYTES {
                self.line.clear();
                self.discarding = true;
                return Ok(LineRead::TooLong);
            }
            if read == 0 {
                // The input ended, after a last line without its newline or none.
                return Ok(if self.line.is_empty() { LineRead::Eof } else { LineRead::Line });
            }
        }
    }
}

/// A line without its ending and byte order mark, judged; `None` for a blank one.
fn judge(line: &[u8]) -> Option<Judged> {
    let text = line.strip_suffix(b"\n").unwrap_or(line);
    let text = text.strip_suffix(b"\r").unwrap_or(text);
    let text = text.strip_prefix(UTF8_BOM).unwrap_or(text);
    if text.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    // A session over lines opens with `initialize`, which ends at revision 2025-11-25
    // (rmcp's `ProtocolVersion::LATEST_WITH_INITIALIZE`): results carry no `resultType`.
    Some(frame::judge(text, false))
}

impl<R, W> Transport<RoleServer> for Lines<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = io::Error;

    fn send(&mut self, item: ServerJsonRpcMessage) -> impl Future<Output = io::Result<()>> + Send + 'static {
        self.write(serde_json::to_vec(&item))
    }

    fn receive(&mut self) -> impl Future<Output = Option<ClientJsonRpcMessage>> + Send {
        self.next_message()
    }

    async fn close(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Keeps the session's first I/O failure and stops rmcp.
fn fail(failure: &Failure, stop: &CancellationToken, e: io::Error) {
    failure.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
    stop.cancel();
}

/// Writes `text` plus a newline under the shared lock, then flushes.
async fn write_line<W: AsyncWrite + Unpin>(writer: &SharedWriter<W>, text: &[u8]) -> io::Result<()> {
    let mut writer = writer.lock().await;
    writer.write_all(text).await?;
    writer.write_all(b"\n").await?;
    writer.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ServerCapabilities, ServerConfig};
    use serde_json::{json, Value};
    use tokio::io::{DuplexStream, Lines};

    /// A server with the tools capability and no tools.
    struct Trivial;

    impl ServerHandler for Trivial {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        }
    }

    const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#;

    struct Client {
        input: DuplexStream,
        output: Lines<BufReader<DuplexStream>>,
        server: tokio::task::JoinHandle<io::Result<()>>,
    }

    impl Client {
        fn start() -> Self {
            let (input, server_reader) = tokio::io::duplex(4096);
            let (server_writer, output) = tokio::io::duplex(4096);
            let server = tokio::spawn(serve_lines(Trivial, server_reader, server_writer));
            Client { input, output: BufReader::new(output).lines(), server }
        }

        /// A client whose `initialize` (id 1) the server has answered.
        async fn initialized() -> Self {
            let mut client = Client::start();
            client.send(INITIALIZE).await;
            assert_eq!(client.receive().await["id"], 1);
            client
        }

        async fn send(&mut self, line: &str) {
            self.input.write_all(line.as_bytes()).await.unwrap();
            self.input.write_all(b"\n").await.unwrap();
        }

        async fn receive(&mut self) -> Value {
            let line = tokio::time::timeout(std::time::Duration::from_secs(5), self.output.next_line())
                .await
                .expect("reply within 5 s")
                .unwrap()
                .expect("a reply line");
            serde_json::from_str(&line).expect("reply is JSON")
        }

        async fn finish(self) -> io::Result<()> {
            drop(self.input);
            tokio::time::timeout(std::time::Duration::from_secs(10), self.server)
                .await
                .expect("server ends after EOF")
                .unwrap()
        }
    }

    #[tokio::test]
    async fn malformed_line_gets_parse_error_then_initialize_works() {
        let mut client = Client::start();
        client.send("{not json").await;
        let reply = client.receive().await;
        assert_eq!(reply["jsonrpc"], "2.0");
        assert_eq!(reply["id"], Value::Null);
        assert_eq!(reply["error"]["code"], -32700);
        let message = reply["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("Parse error: "), "{message}");

        client.send("").await; // blank lines are ignored
        client.send(INITIALIZE).await;
        let reply = client.receive().await;
        assert_eq!(reply["id"], 1);
        assert_eq!(reply["result"]["protocolVersion"], "2025-06-18");
        assert!(reply["result"]["capabilities"]["tools"].is_object());

        client.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
        client.send("\u{feff}\u{1}").await; // BOM then garbage: still a parse error
        assert_eq!(client.receive().await["error"]["code"], -32700);
        client.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#).await;
        assert_eq!(client.receive().await, json!({"jsonrpc":"2.0","id":2,"result":{"tools":[]}}));
        client.finish().await.unwrap();
    }

    #[tokio::test]
    async fn json_that_is_not_a_message_is_invalid_request() {
        let mut client = Client::initialized().await;
        client.send(r#"{"hello":"world"}"#).await;
        let reply = client.receive().await;
        assert_eq!(reply["error"]["code"], -32600, "{reply}");
        client.finish().await.unwrap();
    }

    /// Both sides of the line bound: a line of exactly [`MAX_LINE_BYTES`] before its newline is
    /// read (and is not JSON), one byte more is skipped and answered; the session goes on after
    /// either.
    #[tokio::test]
    async fn a_line_past_the_bound_is_answered_and_skipped() {
        let mut client = Client::initialized().await;
        for (len, exceeds) in [(MAX_LINE_BYTES, false), (MAX_LINE_BYTES + 1, true)] {
            // `len` bytes, then the newline.
            client.send(&"x".repeat(len)).await;
            let reply = client.receive().await;
            assert_eq!(reply["error"]["code"], -32700, "{len}");
            let message = reply["error"]["message"].as_str().unwrap_or_default();
            assert_eq!(message.contains("line exceeds 16777216 bytes"), exceeds, "{len}: {message}");
            client.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#).await;
            assert_eq!(client.receive().await["id"], 2, "{len}");
        }
        client.finish().await.unwrap();
    }

    /// rmcp drops an unfinished read whenever it writes a reply; a line that arrives in parts
    /// meanwhile is still read whole.
    #[tokio::test]
    async fn a_line_arriving_in_parts_while_replies_are_written_is_read_whole() {
        let mut client = Client::initialized().await;
        client.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
        let later = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#;
        let (first, rest) = later.split_at(20);
        for id in [2, 4] {
            let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/list\"}}\n{first}");
            client.input.write_all(line.as_bytes()).await.unwrap();
            assert_eq!(client.receive().await["id"], id);
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            client.send(rest.replace('3', &(id + 1).to_string()).as_str()).await;
            assert_eq!(client.receive().await, json!({"jsonrpc":"2.0","id":id + 1,"result":{"tools":[]}}));
        }
        client.finish().await.unwrap();
    }

    #[tokio::test]
    async fn eof_before_initialize_ends_cleanly() {
        let mut client = Client::start();
        client.send("garbage").await;
        assert_eq!(client.receive().await["error"]["code"], -32700);
        client.finish().await.unwrap();
    }

    #[test]
    fn the_process_stdio_outside_a_runtime_falls_back_without_a_panic() {
        // A pipe needs a reactor: outside a runtime it is never tried (before, registering a
        // piped stdin there panicked). Under `cargo test` stdin is a pipe or /dev/null.
        let (_stdin, _stdout) = process_stdio();
    }
}
