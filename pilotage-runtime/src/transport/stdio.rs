//! Newline-delimited JSON-RPC over a reader/writer pair (stdio in production).
//!
//! rmcp's async read/write transport silently ignores a line that is not JSON, and answers a
//! line it cannot read as a client message with an error that has no `id`, notifications
//! included. [`serve_lines`] reads the lines itself instead and hands rmcp typed messages:
//!
//! ```text
//! reader ──pump──▶ channel ──▶ rmcp ──▶ channel ──copier──▶ writer
//!          └── judged: an error reply, a bounds_exceeded result, or nothing ──▶ writer
//! ```
//!
//! The pump judges every line with [`frame::judge`](super::frame::judge): a client message
//! goes to rmcp (the line's only parse); anything else is answered as JSON-RPC 2.0 requires
//! (`-32700` for a line that is not JSON, `-32600`/`-32602` with the request's id, no reply
//! to a notification), and a `tools/call` nested too deep to parse gets the runtime's
//! `bounds_exceeded` result. Both the pump and the copier write whole lines under one lock,
//! so replies never interleave.

use std::io;
use std::sync::Arc;

use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::ServerInitializeError;
use rmcp::{ServerHandler, ServiceExt};
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader,
};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::frame::{self, Judged};
use super::parse_error;

/// Longest accepted input line, the same 16 MiB limit rmcp applies.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// Messages each channel between the pump, rmcp and the copier holds.
const QUEUE: usize = 64;
/// UTF-8 byte order mark, which rmcp (and RFC 8259) tolerate before JSON.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

type SharedWriter<W> = Arc<Mutex<W>>;

/// Serves `handler` over the process's stdin and stdout until stdin closes.
///
/// See [`serve_lines`] for the behaviour; nothing but protocol messages is
/// written to stdout.
pub async fn serve_stdio<S: ServerHandler>(handler: S) -> io::Result<()> {
    serve_lines(handler, tokio::io::stdin(), tokio::io::stdout()).await
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
    let writer = Arc::new(Mutex::new(writer));
    // Client to rmcp: the pump sends on `to_rmcp`, rmcp receives on `rmcp_in`.
    let (to_rmcp, rmcp_in) = mpsc::channel::<ClientJsonRpcMessage>(QUEUE);
    // rmcp to client: rmcp sends on `rmcp_out`, the copier receives on `from_rmcp`.
    let (rmcp_out, from_rmcp) = mpsc::channel::<ServerJsonRpcMessage>(QUEUE);
    // Cancelled by the copier when the real writer fails, which stops rmcp.
    let stop = CancellationToken::new();

    let pump = tokio::spawn(pump_input(reader, to_rmcp, writer.clone()));
    let copier = tokio::spawn(copy_output(from_rmcp, writer, stop.clone()));

    let served = match handler.serve_with_ct((rmcp_out, rmcp_in), stop).await {
        Ok(running) => running.waiting().await.map(drop).map_err(io::Error::other),
        // The input ended, or the output failed, before a session started.
        Err(ServerInitializeError::ConnectionClosed(_) | ServerInitializeError::Cancelled) => Ok(()),
        Err(refused) => Err(io::Error::new(io::ErrorKind::InvalidData, refused.to_string())),
    };

    // rmcp has dropped its sender, so the copier drains and ends.
    let copied = copier.await.unwrap_or_else(|e| Err(io::Error::other(e)));
    // The pump normally ended at EOF already; if rmcp stopped first, stop reading.
    pump.abort();
    let pumped = match pump.await {
        Ok(result) => result,
        Err(e) if e.is_cancelled() => Ok(()),
        Err(e) => Err(io::Error::other(e)),
    };
    copied.and(pumped).and(served)
}

/// Reads `reader` line by line: client messages go to rmcp, the rest is judged here.
///
/// Returning (at EOF) drops `to_rmcp`, which rmcp sees as the end of input.
async fn pump_input<R, W>(
    reader: R,
    mut to_rmcp: mpsc::Sender<ClientJsonRpcMessage>,
    writer: SharedWriter<W>,
) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = BufReader::new(reader);
    let mut line = Vec::new();
    loop {
        line.clear();
        // Reading one byte past the limit tells an oversized line apart.
        let mut bounded = (&mut reader).take(MAX_LINE_BYTES as u64 + 1);
        if bounded.read_until(b'\n', &mut line).await? == 0 {
            return Ok(());
        }
        if line.len() > MAX_LINE_BYTES && !line.ends_with(b"\n") {
            skip_rest_of_line(&mut reader).await?;
            let detail = format!("line exceeds {MAX_LINE_BYTES} bytes");
            write_line(&writer, parse_error(detail).to_string().as_bytes()).await?;
            continue;
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        let text = text.strip_prefix(UTF8_BOM).unwrap_or(text);
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        // A session over lines opens with `initialize`, which ends at revision 2025-11-25
        // (rmcp's `ProtocolVersion::LATEST_WITH_INITIALIZE`): results carry no `resultType`.
        match frame::judge(text, false) {
            Judged::Message(message) => {
                if to_rmcp.send(*message).await.is_err() {
                    // rmcp has stopped receiving: the service is over.
                    return Ok(());
                }
            }
            Judged::Reply(reply) => write_line(&writer, reply.to_string().as_bytes()).await?,
            Judged::Silent => {}
        }
    }
}

/// Writes rmcp's messages to the real writer, one line each.
async fn copy_output<W>(
    mut from_rmcp: mpsc::Receiver<ServerJsonRpcMessage>,
    writer: SharedWriter<W>,
    stop: CancellationToken,
) -> io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    while let Some(message) = from_rmcp.next().await {
        let text = match serde_json::to_vec(&message) {
            Ok(text) => text,
            Err(e) => {
                tracing::error!(error = %e, "cannot serialize an outgoing message");
                continue;
            }
        };
        if let Err(e) = write_line(&writer, &text).await {
            stop.cancel();
            return Err(e);
        }
    }
    Ok(())
}

/// Writes `text` plus a newline under the shared lock, then flushes.
async fn write_line<W: AsyncWrite + Unpin>(writer: &SharedWriter<W>, text: &[u8]) -> io::Result<()> {
    let mut writer = writer.lock().await;
    writer.write_all(text).await?;
    writer.write_all(b"\n").await?;
    writer.flush().await
}

/// Consumes input up to and including the next newline (or EOF).
async fn skip_rest_of_line<R: AsyncBufRead + Unpin>(reader: &mut R) -> io::Result<()> {
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(());
        }
        match buffer.iter().position(|&b| b == b'\n') {
            Some(end) => {
                reader.consume(end + 1);
                return Ok(());
            }
            None => {
                let len = buffer.len();
                reader.consume(len);
            }
        }
    }
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
        let mut client = Client::start();
        client.send(INITIALIZE).await;
        assert_eq!(client.receive().await["id"], 1);
        client.send(r#"{"hello":"world"}"#).await;
        let reply = client.receive().await;
        assert_eq!(reply["error"]["code"], -32600, "{reply}");
        client.finish().await.unwrap();
    }

    #[tokio::test]
    async fn eof_before_initialize_ends_cleanly() {
        let mut client = Client::start();
        client.send("garbage").await;
        assert_eq!(client.receive().await["error"]["code"], -32700);
        client.finish().await.unwrap();
    }
}
