//! The Streamable HTTP edge under hostile traffic: every bound of `HttpOptions` exceeded once.
//!
//! Servers run in this process through `Server::serve_listener` on 127.0.0.1, except the
//! 1,100-connection one, which runs `Server::serve_http` in a child process (this test binary,
//! re-executed) under an address-space cap and a 1,024 soft descriptor limit.

use crate::{support, workflow};

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use pilotage::transport::HttpOptions;
use serde_json::{json, Value};
use support::{Conn, HttpStyle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn server() -> pilotage::Server {
    pilotage::Server::builder().name("test", "0").language(workflow::Workflow::new).build().unwrap()
}

/// A server on an ephemeral 127.0.0.1 port, stopped when dropped.
struct Edge {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Edge {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Edge {
    async fn start(options: HttpOptions) -> Edge {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = server();
        let task = tokio::spawn(async move {
            server.serve_listener(listener, options, std::future::pending()).await.unwrap();
        });
        Edge { addr, task }
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }
}

fn initialize(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": support::PROTOCOL, "capabilities": {},
        "clientInfo": {"name": "http-edge", "version": "0"}}})
    .to_string()
}

/// A bare POST of `body` to `url` with `headers`; the status and the body text.
async fn post(url: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .timeout(Duration::from_secs(5))
        .body(body.to_owned());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// Reads `stream` until the peer closes it (EOF or reset); what was read and when it closed.
async fn read_until_closed(
    stream: &mut tokio::net::tcp::OwnedReadHalf,
    limit: Duration,
) -> (String, Duration) {
    let start = Instant::now();
    let mut text = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        match tokio::time::timeout(limit.saturating_sub(start.elapsed()), stream.read(&mut buffer)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (String::from_utf8_lossy(&text).into_owned(), start.elapsed()),
            Ok(Ok(n)) => text.extend_from_slice(&buffer[..n]),
            Err(_) => panic!("the connection was still open after {limit:?}; read {text:?}"),
        }
    }
}

/// Writes `bytes` one per second in the background (until the server hangs up).
fn trickle(mut writer: tokio::net::tcp::OwnedWriteHalf, bytes: Vec<u8>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        for byte in bytes {
            if writer.write_all(&[byte]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    })
}

#[tokio::test]
async fn the_session_past_the_cap_is_refused_until_one_closes() {
    let options = HttpOptions { max_sessions: 8, ..HttpOptions::default() };
    let edge = Edge::start(options).await;
    let mut conns = Vec::new();
    for _ in 0..8 {
        let mut conn = Conn::http(&edge.url(), HttpStyle::Plain);
        conn.initialize(false).await;
        conns.push(conn);
    }
    for style in [HttpStyle::Plain, HttpStyle::Full] {
        let mut ninth = Conn::http(&edge.url(), style);
        let refusal = ninth.raw(&initialize(9)).await;
        assert_eq!(ninth.last_http_status(), Some(503), "{refusal}");
        assert_eq!(refusal["id"], 9, "{refusal}");
        assert_eq!(refusal["error"]["code"], -32000, "{refusal}");
        let message = refusal["error"]["message"].as_str().unwrap();
        assert!(message.contains("session limit reached (8 live sessions)"), "{message}");
        assert_eq!(ninth.session_id(), None);
    }
    let first = conns[0].session_id().unwrap().to_owned();
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let deleted = client.delete(edge.url()).header("mcp-session-id", &first).send().await.unwrap();
    assert!(deleted.status().is_success(), "DELETE: {}", deleted.status());
    let mut ninth = Conn::http(&edge.url(), HttpStyle::Plain);
    ninth.initialize(false).await;
    assert_eq!(ninth.tools_list().await.len(), conns[1].tools_list().await.len());
}

#[tokio::test]
async fn an_idle_session_expires() {
    let options = HttpOptions { session_idle: Duration::from_secs(1), ..HttpOptions::default() };
    let edge = Edge::start(options).await;
    let mut conn = Conn::http(&edge.url(), HttpStyle::Plain);
    conn.initialize(false).await;
    let session = conn.session_id().unwrap().to_owned();
    let list = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}).to_string();
    let headers = [("mcp-session-id", session.as_str()), ("mcp-protocol-version", support::PROTOCOL)];
    let (status, body) = post(&edge.url(), &headers, &list).await;
    assert_eq!(status, 200, "{body}");
    tokio::time::sleep(Duration::from_millis(1800)).await;
    let (status, body) = post(&edge.url(), &headers, &list).await;
    assert_eq!(status, 404, "the session outlived its 1 s idle expiry: {body}");
    // Its slot is free again: a cap of one session admits a new one (checked on a fresh server).
    let options =
        HttpOptions { max_sessions: 1, session_idle: Duration::from_secs(1), ..HttpOptions::default() };
    let edge = Edge::start(options).await;
    Conn::http(&edge.url(), HttpStyle::Plain).initialize(false).await;
    tokio::time::sleep(Duration::from_millis(1800)).await;
    Conn::http(&edge.url(), HttpStyle::Plain).initialize(false).await;
}

#[tokio::test]
async fn slow_headers_are_dropped_at_the_header_timeout() {
    let options = HttpOptions { header_read_timeout: Duration::from_secs(2), ..HttpOptions::default() };
    let edge = Edge::start(options).await;
    let (mut reader, writer) = TcpStream::connect(edge.addr).await.unwrap().into_split();
    let writing =
        trickle(writer, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}".to_vec());
    let (text, after) = read_until_closed(&mut reader, Duration::from_secs(6)).await;
    writing.abort();
    println!("slow headers: closed after {after:?}, reply {text:?}");
    assert!(after >= Duration::from_millis(1900) && after < Duration::from_millis(3500), "{after:?}");
    assert!(text.is_empty() || text.starts_with("HTTP/1.1 408"), "{text:?}");
}

#[tokio::test]
async fn a_slow_body_is_dropped_at_the_body_timeout() {
    let options = HttpOptions { body_read_timeout: Duration::from_secs(2), ..HttpOptions::default() };
    let edge = Edge::start(options).await;
    let (mut reader, mut writer) = TcpStream::connect(edge.addr).await.unwrap().into_split();
    let body = initialize(1);
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    writer.write_all(head.as_bytes()).await.unwrap();
    let writing = trickle(writer, body.into_bytes());
    let (text, after) = read_until_closed(&mut reader, Duration::from_secs(6)).await;
    writing.abort();
    println!("slow body: closed after {after:?}");
    assert!(after >= Duration::from_millis(1900) && after < Duration::from_millis(3500), "{after:?}");
    assert!(text.starts_with("HTTP/1.1 408"), "{text:?}");
    assert!(text.contains("\"code\":-32600") && text.contains("body not received within 2s"), "{text}");
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_at_the_header_timeout() {
    let options = HttpOptions { header_read_timeout: Duration::from_secs(2), ..HttpOptions::default() };
    let edge = Edge::start(options).await;
    let (mut reader, mut writer) = TcpStream::connect(edge.addr).await.unwrap().into_split();
    let request = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1\r\n\r\n{";
    writer.write_all(request.as_bytes()).await.unwrap();
    let mut buffer = [0u8; 4096];
    let n = reader.read(&mut buffer).await.unwrap();
    assert!(buffer[..n].starts_with(b"HTTP/1.1 400"), "{:?}", String::from_utf8_lossy(&buffer[..n]));
    let (_, after) = read_until_closed(&mut reader, Duration::from_secs(6)).await;
    println!("idle keep-alive connection closed {after:?} after its response");
    assert!(after >= Duration::from_millis(1800) && after < Duration::from_millis(3500), "{after:?}");
}

#[tokio::test]
async fn a_foreign_origin_is_refused_and_loopback_or_none_accepted() {
    let edge = Edge::start(HttpOptions::default()).await;
    let (status, body) = post(&edge.url(), &[("origin", "http://evil.example")], &initialize(1)).await;
    assert_eq!(status, 403, "{body}");
    for origin in ["http://localhost:5173", "http://127.0.0.1:8080", "http://[::1]:3000"] {
        let (status, body) = post(&edge.url(), &[("origin", origin)], &initialize(1)).await;
        assert_eq!(status, 200, "{origin}: {body}");
    }
    let (status, body) = post(&edge.url(), &[], &initialize(1)).await;
    assert_eq!(status, 200, "no Origin: {body}");
    let reply: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(reply["result"]["protocolVersion"], support::PROTOCOL);
}

#[tokio::test]
async fn connections_past_the_cap_wait_for_a_free_slot() {
    let options = HttpOptions {
        max_connections: 2,
        header_read_timeout: Duration::from_secs(8),
        ..HttpOptions::default()
    };
    let edge = Edge::start(options).await;
    let idle_a = TcpStream::connect(edge.addr).await.unwrap();
    let _idle_b = TcpStream::connect(edge.addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The third connection completes in the kernel's backlog, but is not served...
    let mut third = TcpStream::connect(edge.addr).await.unwrap();
    let request = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1\r\n\r\n{";
    third.write_all(request.as_bytes()).await.unwrap();
    let mut buffer = [0u8; 4096];
    let waited = tokio::time::timeout(Duration::from_secs(1), third.read(&mut buffer)).await;
    assert!(waited.is_err(), "the connection past the cap was served: {waited:?}");
    // ...until a served one closes.
    drop(idle_a);
    let start = Instant::now();
    let n = tokio::time::timeout(Duration::from_secs(1), third.read(&mut buffer))
        .await
        .expect("served within 1 s of a slot freeing")
        .unwrap();
    println!("third connection served {:?} after a slot freed", start.elapsed());
    assert!(buffer[..n].starts_with(b"HTTP/1.1 400"), "{:?}", String::from_utf8_lossy(&buffer[..n]));
}

/// Every accepted connection has `TCP_NODELAY`, so a small response is not held back by Nagle
/// and the client's delayed ACK (~40 ms a call). Checked on the server's own socket (this
/// process holds both ends), not by timing, which a loaded machine blurs.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn accepted_connections_set_tcp_nodelay() {
    let edge = Edge::start(HttpOptions::default()).await;
    let mut client = TcpStream::connect(edge.addr).await.unwrap();
    let request = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1\r\n\r\n{";
    client.write_all(request.as_bytes()).await.unwrap();
    let mut buffer = [0u8; 4096];
    let n = client.read(&mut buffer).await.unwrap();
    assert!(buffer[..n].starts_with(b"HTTP/1.1 400"), "served: {:?}", String::from_utf8_lossy(&buffer[..n]));
    assert!(
        !client.nodelay().unwrap(),
        "the client side keeps the default, so only the server's setting is measured"
    );
    let served =
        server_side(edge.addr, client.local_addr().unwrap()).expect("the accepted socket in /proc/self/fd");
    assert_eq!(served, Some(true), "TCP_NODELAY on the accepted socket");
}

/// `TCP_NODELAY` of this process's socket bound to `local` and connected to `peer`.
#[cfg(target_os = "linux")]
fn server_side(local: SocketAddr, peer: SocketAddr) -> Option<Option<bool>> {
    use std::os::fd::BorrowedFd;
    for entry in std::fs::read_dir("/proc/self/fd").ok()?.flatten() {
        let Ok(fd) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        // SAFETY: the descriptor is open while /proc lists it and is only read here; a
        // descriptor closed meanwhile makes the calls below fail, nothing worse.
        let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
        let socket = socket2::SockRef::from(&borrowed);
        let (Ok(l), Ok(p)) = (socket.local_addr(), socket.peer_addr()) else { continue };
        if l.as_socket() == Some(local) && p.as_socket() == Some(peer) {
            return Some(socket.tcp_nodelay().ok());
        }
    }
    None
}

/// Idle connections held open by the 1,100.
const IDLE: usize = 1_100;
/// The child server's address-space cap.
const CHILD_ADDRESS_SPACE: u64 = 2 << 30;

#[tokio::test]
async fn many_idle_connections_do_not_lock_out_a_new_client() {
    let (before, after) = pilotage::transport::raise_nofile_limit().unwrap();
    assert!(after as usize > IDLE + 200, "this test needs {IDLE}+ descriptors; limit {before} -> {after}");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = ChildServer::spawn(port);
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    child.wait_ready(addr).await;
    let (soft, hard) = child.nofile();
    assert_eq!(soft, hard, "serve_http raised the child's soft RLIMIT_NOFILE from 1024 to the hard limit");
    let mut idle = Vec::with_capacity(IDLE);
    for _ in 0..IDLE {
        idle.push(TcpStream::connect(addr).await.unwrap());
    }
    let deadline = Instant::now() + Duration::from_secs(3);
    while child.open_fds() < IDLE {
        assert!(Instant::now() < deadline, "the child accepted only {} descriptors", child.open_fds());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let start = Instant::now();
    let mut conn = Conn::http(&format!("http://{addr}/mcp"), HttpStyle::Plain);
    conn.initialize(false).await;
    let tools = conn.tools_list().await;
    let latency = start.elapsed();
    println!(
        "with {} descriptors open in the child: initialize + tools/list in {latency:?}; child VmPeak {}",
        child.open_fds(),
        child.vm_peak()
    );
    assert!(!tools.is_empty());
    assert!(latency < Duration::from_secs(1), "{latency:?}");
    drop(idle);
}

/// `serve_http` in a child process, killed when dropped.
struct ChildServer(std::process::Child);

impl ChildServer {
    fn spawn(port: u16) -> ChildServer {
        let exe = std::env::current_exe().unwrap();
        let child = std::process::Command::new("prlimit")
            .arg(format!("--as={CHILD_ADDRESS_SPACE}"))
            .arg(format!("--nofile=1024:{}", pilotage_hard_nofile()))
            .arg("--")
            .arg(exe)
            .args(["child_serve_http", "--ignored", "--nocapture", "--test-threads=1"])
            .env("PILOTAGE_EDGE_CHILD_PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("prlimit (util-linux) runs the child server");
        ChildServer(child)
    }

    async fn wait_ready(&self, addr: SocketAddr) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(addr).await.is_err() {
            assert!(Instant::now() < deadline, "the child server did not listen within 10 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn proc(&self, file: &str) -> String {
        std::fs::read_to_string(format!("/proc/{}/{file}", self.0.id())).unwrap()
    }

    fn nofile(&self) -> (String, String) {
        let limits = self.proc("limits");
        let line = limits.lines().find(|l| l.starts_with("Max open files")).unwrap();
        let fields: Vec<&str> = line.split_whitespace().collect();
        (fields[3].to_owned(), fields[4].to_owned())
    }

    fn open_fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.0.id())).unwrap().count()
    }

    fn vm_peak(&self) -> String {
        let status = self.proc("status");
        status.lines().find(|l| l.starts_with("VmPeak")).unwrap_or("VmPeak: ?").trim().to_owned()
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// This process's hard RLIMIT_NOFILE, read from /proc.
fn pilotage_hard_nofile() -> String {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
    let line = limits.lines().find(|l| l.starts_with("Max open files")).unwrap();
    line.split_whitespace().nth(4).unwrap().to_owned()
}

/// The child side of `many_idle_connections_do_not_lock_out_a_new_client`; does nothing unless
/// that test started this binary with `PILOTAGE_EDGE_CHILD_PORT`.
#[tokio::test]
#[ignore = "run in a child process by many_idle_connections_do_not_lock_out_a_new_client"]
async fn child_serve_http() {
    let Ok(port) = std::env::var("PILOTAGE_EDGE_CHILD_PORT") else {
        return;
    };
    let addr: SocketAddr = ([127, 0, 0, 1], port.parse().unwrap()).into();
    server().serve_http(addr, HttpOptions::default()).await.unwrap();
}

/// One raw request on a fresh connection; the whole reply up to the server's close, and
/// whether the close was clean (EOF, not a reset). `body` is written by a task of its own, so
/// a server that answers early is read while the client still sends.
async fn exchange(addr: SocketAddr, head: String, body: Vec<u8>) -> (String, bool) {
    let (mut reader, mut writer) = TcpStream::connect(addr).await.unwrap().into_split();
    let writing = tokio::spawn(async move {
        if writer.write_all(head.as_bytes()).await.is_ok() {
            let _ = writer.write_all(&body).await;
        }
        writer
    });
    let mut text = Vec::new();
    let mut buffer = [0u8; 8192];
    let clean = loop {
        match tokio::time::timeout(Duration::from_secs(10), reader.read(&mut buffer)).await {
            Ok(Ok(0)) => break true,
            Ok(Ok(n)) => text.extend_from_slice(&buffer[..n]),
            Ok(Err(_)) => break false,
            Err(_) => panic!("no close within 10 s; read {:?}", String::from_utf8_lossy(&text)),
        }
    };
    drop(writing.await);
    (String::from_utf8_lossy(&text).into_owned(), clean)
}

fn post_head(host: &str, length: u64) -> String {
    format!("POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: {length}\r\n\r\n")
}

#[tokio::test]
async fn a_host_is_read_exactly() {
    let edge = Edge::start(HttpOptions::default()).await;
    let port = edge.addr.port();
    let body = initialize(1).into_bytes();
    let length = body.len() as u64;
    let close = |head: String| head.replace("\r\n\r\n", "\r\nConnection: close\r\n\r\n");
    for host in
        [format!("127.0.0.1:{port}.evil.example"), format!("localhost:{port}0000"), "127.0.0.1:".into()]
    {
        let (reply, _) = exchange(edge.addr, close(post_head(&host, length)), body.clone()).await;
        assert!(reply.starts_with("HTTP/1.1 400"), "{host}: {reply}");
        assert!(reply.ends_with("Bad Request: Invalid Host header"), "{host}: {reply}");
    }
    let (reply, _) = exchange(edge.addr, close(post_head(&format!("127.0.0.1:{port}"), length)), body).await;
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
}

#[tokio::test]
async fn an_oversized_body_gets_413_and_a_clean_close() {
    let edge = Edge::start(HttpOptions::default()).await;
    let host = edge.addr.to_string();
    // Past the 4 MiB bound by a little: read to its end, refused, and closed cleanly.
    let body = format!("\"{}\"", "x".repeat(4 * 1024 * 1024 + 100)).into_bytes();
    let (reply, clean) = exchange(edge.addr, post_head(&host, body.len() as u64), body).await;
    assert!(reply.starts_with("HTTP/1.1 413"), "{:.200}", reply);
    assert!(reply.to_ascii_lowercase().contains("\r\nconnection: close\r\n"), "{reply}");
    assert!(reply.contains(r#""code":-32600"#) && reply.contains("body exceeds 4194304 bytes"), "{reply}");
    assert!(clean, "the connection was reset under the client after its 413");
    // Declared far past it (100 GiB) and never sent: refused at once, not after the body
    // read timeout (here 60 s, past the 10 s this exchange waits).
    let options = HttpOptions { body_read_timeout: Duration::from_secs(60), ..HttpOptions::default() };
    let edge = Edge::start(options).await;
    let (reply, _) = exchange(edge.addr, post_head(&host, 107_374_182_400), Vec::new()).await;
    assert!(reply.starts_with("HTTP/1.1 413"), "{reply}");
    assert!(reply.to_ascii_lowercase().contains("\r\nconnection: close\r\n"), "{reply}");
}

#[tokio::test]
async fn a_stateless_ping_is_answered() {
    let edge = Edge::start(HttpOptions { stateless: true, ..HttpOptions::default() }).await;
    let reply = support::stateless_request(&edge.url(), "ping", json!({}), json!({}), None).await;
    assert_eq!(reply, json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete"}}));
    // Another method rmcp does not know stays unknown.
    let reply = support::try_stateless_request(&edge.url(), "nope/nothing", json!({}), json!({}), None).await;
    assert!(reply.is_err() || reply.as_ref().unwrap()["error"]["code"] == -32601, "{reply:?}");
}
