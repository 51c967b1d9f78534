//! The gate's fast path, for a server it spawns: one thread owns the host's stdio and the
//! server's, reads every line itself and relays as bytes what it need not touch.
//!
//! Through rmcp on both sides every message costs the gate a typed parse, a serialization and
//! a few tasks (`benches/gate.rs`: about 0.5 ms of CPU per validate+execute, twice the direct
//! path on two cores). Here a line is read for its head only (`method`, `id`), and:
//!
//! - from the host, a `tools/call` the gate can settle from what it holds (a plain tool, a
//!   validate call, an execute whose kept validation finds it safe or pre-approved by the policy,
//!   [`crate::execute::settled_forward`]) goes to the server under the host's own id, progress
//!   token and `_meta`, as it came (an execute with the validation's catalog version added); its
//!   answer goes back as the bytes the server wrote (a validation's is kept once it is written,
//!   [`settle`]);
//! - everything else goes through the rmcp gate ([`crate::proxy`]) over a socket pair on each
//!   side: `initialize`, a question to the person, the gate's own validation or catalog lookup,
//!   the stateless revision, the server's own requests and notifications. The rmcp client's
//!   request ids and progress tokens are renamed on the way to the server
//!   (`pilotage-gate:<n>`, `pilotage-gate:p<n>`), so they never meet the host's, and named back on
//!   the way in; a host id or token of that form is never taken by the fast path.
//!
//! After a message the thread looks for the next one for [`Splice::linger`] (one `poll` of every
//! source a look, yielding the core between looks) before it sleeps in `poll`: waking a sleeping
//! process costs each hop more than the work. What one read's lines send is written in one
//! `write` per destination. At most [`MAX_FAST`] fast calls are in flight (beyond, calls take the
//! rmcp path); each destination's queue is bounded (a source is not read while its destinations
//! hold [`QUEUE_CAP`]); a line over [`MAX_LINE`] is discarded (the host gets a parse error; a
//! server answer's caller an error under its id).

use std::collections::HashMap;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::lines::{canon, progress_token, response_id, Head};
use crate::names::Names;
use crate::proxy::Inner;
use crate::surface::Language;

mod settle;
use settle::Later;

/// The longest line relayed, rmcp's own limit.
const MAX_LINE: usize = 16 << 20;
/// The most fast calls in flight; beyond, calls take the rmcp path.
const MAX_FAST: usize = 1024;
/// The most bytes queued for the destinations of a source before it is read again.
const QUEUE_CAP: usize = 8 << 20;
/// How long the server has to exit after the host closed its input, before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(5);

/// Where a line is read from (its reader's index, in the order of [`FROM`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Source {
    Host,
    Server,
    /// The rmcp gate, speaking to the host.
    Gate,
    /// The rmcp client, speaking to the server.
    Client,
}

/// Where a line is written to (its writer's index, in the order of [`TO`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sink {
    Host,
    Server,
    Gate,
    Client,
}

const FROM: [Source; 4] = [Source::Host, Source::Server, Source::Gate, Source::Client];
const TO: [Sink; 4] = [Sink::Host, Sink::Server, Sink::Gate, Sink::Client];

/// Where each source's lines may go (for its back-pressure).
fn destinations(from: Source) -> &'static [Sink] {
    match from {
        Source::Host => &[Sink::Server, Sink::Gate, Sink::Host],
        Source::Server => &[Sink::Host, Sink::Client],
        Source::Gate => &[Sink::Host],
        Source::Client => &[Sink::Server],
    }
}

struct Reader {
    fd: RawFd,
    buf: Vec<u8>,
    open: bool,
    /// Discarding an over-long line up to its end.
    skipping: bool,
}

struct Writer {
    fd: RawFd,
    queue: Vec<u8>,
    sent: usize,
    open: bool,
    /// Closed once its queue is written.
    closing: bool,
}

impl Writer {
    fn pending(&self) -> usize {
        self.queue.len() - self.sent
    }
}

/// A fast call in flight, by the host's id.
struct Fast {
    /// For a validate call: what its answer is kept for (the Language, the arguments, the
    /// program argument's name).
    validation: Option<(Language, Value, String)>,
    /// The host's progress token, as JSON text.
    token: Option<String>,
}

/// The fast path's state, owned by its thread.
pub struct Splice {
    inner: Arc<Inner>,
    child: std::process::Child,
    gate: UnixStream,
    client: UnixStream,
    readers: [Reader; 4],
    writers: [Writer; 4],
    /// How long to look for the next message before sleeping.
    linger: Duration,
    /// Whether the host initialized (a handshake revision): only then is the fast path taken.
    handshake: bool,
    fast: HashMap<String, Fast>,
    fast_tokens: HashMap<String, String>,
    /// The names of the rmcp client's requests to the server.
    names: Names,
    host_closed_at: Option<Instant>,
    /// What one `read` fills, allocated once.
    chunk: Vec<u8>,
    /// What the lines of the chunk being read left for after it is written.
    later: Vec<Later>,
}

impl Splice {
    /// The splice between the host (this process's stdin and stdout), the server `child` (its
    /// stdin and stdout piped) and the rmcp gate's two sockets.
    pub fn new(
        inner: Arc<Inner>,
        child: std::process::Child,
        gate: UnixStream,
        client: UnixStream,
        linger: Duration,
    ) -> std::io::Result<Splice> {
        let missing = || std::io::Error::other("the server's stdio is not piped");
        let to_server = child.stdin.as_ref().ok_or_else(missing)?.as_raw_fd();
        let from_server = child.stdout.as_ref().ok_or_else(missing)?.as_raw_fd();
        let reader = |fd| Reader { fd, buf: Vec::new(), open: true, skipping: false };
        let writer = |fd| Writer { fd, queue: Vec::new(), sent: 0, open: true, closing: false };
        let (g, c) = (gate.as_raw_fd(), client.as_raw_fd());
        for fd in [0, 1, to_server, from_server, g, c] {
            nonblocking(fd)?;
        }
        Ok(Splice {
            inner,
            readers: [reader(0), reader(from_server), reader(g), reader(c)],
            writers: [writer(1), writer(to_server), writer(g), writer(c)],
            child,
            gate,
            client,
            linger,
            handshake: false,
            fast: HashMap::new(),
            fast_tokens: HashMap::new(),
            names: Names::default(),
            host_closed_at: None,
            chunk: vec![0; 64 * 1024],
            later: Vec::new(),
        })
    }

    /// Relay until the host and the rmcp gate are done, then end the server.
    pub fn run(mut self) {
        let mut last = Instant::now();
        let mut ready = [true; 4];
        loop {
            let mut moved = false;
            for (k, from) in FROM.into_iter().enumerate() {
                if ready[k] && self.readers[k].open && self.room(from) {
                    moved |= self.read(k, from);
                }
            }
            for k in 0..4 {
                moved |= self.flush(k);
            }
            if self.done() {
                break;
            }
            if moved {
                last = Instant::now();
            }
            // One `poll` looks at every source (a `read` of each would take each pipe's lock,
            // which the peer writing into it waits for): at once while lingering, yielding the
            // core between looks, and asleep after.
            let lingering = last.elapsed() < self.linger;
            ready = self.wait(lingering);
            if lingering && ready == [false; 4] {
                std::thread::yield_now();
            }
        }
        for k in 0..4 {
            self.flush(k);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Whether the relay is over: the host is gone; or it closed its input and the server
    /// exited (or had [`EXIT_GRACE`] to); or the rmcp gate ended by itself.
    fn done(&self) -> bool {
        if !self.writers[slot(Sink::Host)].open {
            return true;
        }
        match self.host_closed_at {
            Some(at) => !self.readers[Source::Server as usize].open || at.elapsed() > EXIT_GRACE,
            None => !self.readers[Source::Gate as usize].open,
        }
    }

    /// Whether `from`'s destinations have room for more.
    fn room(&self, from: Source) -> bool {
        destinations(from).iter().map(|to| self.writers[slot(*to)].pending()).sum::<usize>() < QUEUE_CAP
    }

    /// Which sources have something to read (or reached their end): at once when `now`,
    /// else waiting until one has, or a writer can take more of its queue.
    fn wait(&mut self, now: bool) -> [bool; 4] {
        let mut fds = [libc::pollfd { fd: -1, events: 0, revents: 0 }; 8];
        for (k, from) in FROM.into_iter().enumerate() {
            if self.readers[k].open && self.room(from) {
                fds[k] = libc::pollfd { fd: self.readers[k].fd, events: libc::POLLIN, revents: 0 };
            }
        }
        for (k, w) in self.writers.iter().enumerate() {
            if w.open && w.pending() > 0 {
                fds[4 + k] = libc::pollfd { fd: w.fd, events: libc::POLLOUT, revents: 0 };
            }
        }
        let timeout = match (now, self.host_closed_at) {
            (true, _) => 0,
            (false, Some(at)) => EXIT_GRACE.saturating_sub(at.elapsed()).as_millis() as i32 + 1,
            (false, None) => -1,
        };
        // SAFETY: `fds` is a live array of `fds.len()` pollfd records (a negative fd is skipped).
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
        if n < 0 {
            // Interrupted: look at every source.
            return [true; 4];
        }
        std::array::from_fn(|k| fds[k].revents != 0)
    }

    /// Read what `from` has; route its complete lines. Whether anything was read.
    fn read(&mut self, k: usize, from: Source) -> bool {
        let mut chunk = std::mem::take(&mut self.chunk);
        let moved = self.read_into(k, from, &mut chunk);
        self.chunk = chunk;
        moved
    }

    fn read_into(&mut self, k: usize, from: Source, chunk: &mut [u8]) -> bool {
        let r = &mut self.readers[k];
        // SAFETY: `chunk` is writable for its length.
        let n = unsafe { libc::read(r.fd, chunk.as_mut_ptr().cast(), chunk.len()) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted) {
                return false;
            }
        }
        if n <= 0 {
            r.open = false;
            self.closed(from);
            return true;
        }
        let mut data = &chunk[..n as usize];
        let mut buf = std::mem::take(&mut self.readers[k].buf);
        while let Some(end) = data.iter().position(|b| *b == b'\n') {
            let (line, rest) = (&data[..end], &data[end + 1..]);
            data = rest;
            if self.readers[k].skipping {
                self.readers[k].skipping = false;
                continue;
            }
            if buf.is_empty() {
                self.route(from, line);
            } else if buf.len() + line.len() > MAX_LINE {
                self.too_long(from, &buf);
                buf = Vec::new();
            } else {
                buf.extend_from_slice(line);
                self.route(from, &buf);
                buf.clear();
            }
        }
        if !self.readers[k].skipping {
            buf.extend_from_slice(data);
            if buf.len() > MAX_LINE {
                self.readers[k].skipping = true;
                self.too_long(from, &buf);
                buf = Vec::new();
            }
        }
        self.readers[k].buf = buf;
        // What the chunk's lines are written in one `write` per destination (an answer and the
        // notification before it wake the host once), then the work they left for after.
        for k in 0..4 {
            self.flush(k);
        }
        self.after();
        true
    }

    /// A line from `from` that begins with `start` is longer than [`MAX_LINE`] and is
    /// discarded. The host is told with a parse error (as for a line that is not JSON); an
    /// answer of the server's whose id its first bytes give ([`response_id`]) is answered with
    /// an error in its place, to the host or the rmcp client that asked.
    fn too_long(&mut self, from: Source, start: &[u8]) {
        let (id, message) = match from {
            Source::Host => ("null".to_owned(), "a line longer than 16 MiB was discarded"),
            Source::Server => match response_id(start) {
                Some(id) => (id, "gate: the server's answer was longer than 16 MiB and was discarded"),
                None => return,
            },
            Source::Gate | Source::Client => return,
        };
        let code = if from == Source::Host { -32700 } else { -32603 };
        let error = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":{code},\"message\":\"{message}\"}}}}"
        );
        match from {
            Source::Server => self.server_answer(id, error.as_bytes()),
            _ => self.send(Sink::Host, error.as_bytes()),
        }
    }

    /// `from` reached its end.
    fn closed(&mut self, from: Source) {
        match from {
            Source::Host => {
                self.host_closed_at = Some(Instant::now());
                self.close(Sink::Gate);
                self.close(Sink::Server);
            }
            Source::Server => {
                // The fast calls in flight will never be answered: say so.
                for (id, _) in std::mem::take(&mut self.fast) {
                    let error = format!(
                        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":-32603,\"message\":\"gate: the server closed its output\"}}}}"
                    );
                    self.send(Sink::Host, error.as_bytes());
                }
                self.close(Sink::Client);
                self.close(Sink::Server);
            }
            Source::Gate | Source::Client => {}
        }
    }

    fn close(&mut self, to: Sink) {
        self.writers[slot(to)].closing = true;
        self.flush(slot(to));
    }

    /// Write what is queued for writer `k`; whether anything was written.
    fn flush(&mut self, k: usize) -> bool {
        let w = &mut self.writers[k];
        let mut wrote = false;
        while w.open && w.pending() > 0 {
            let rest = &w.queue[w.sent..];
            // SAFETY: `rest` is readable for its length.
            let n = unsafe { libc::write(w.fd, rest.as_ptr().cast(), rest.len()) };
            if n > 0 {
                w.sent += n as usize;
                wrote = true;
                continue;
            }
            let e = std::io::Error::last_os_error();
            match e.kind() {
                std::io::ErrorKind::WouldBlock => {
                    // A slow reader: what it took is let go, so that the queue holds only what
                    // it has not (bounded by QUEUE_CAP through the sources' back-pressure).
                    if w.sent >= 1 << 20 {
                        w.queue.drain(..w.sent);
                        w.sent = 0;
                    }
                    return wrote;
                }
                std::io::ErrorKind::Interrupted => continue,
                _ => w.open = false,
            }
        }
        w.queue.clear();
        w.sent = 0;
        if w.closing && w.open {
            w.open = false;
            self.shut(TO[k]);
        }
        wrote
    }

    /// End writing to `to`: the rmcp side sees its input end; the server its stdin close.
    fn shut(&mut self, to: Sink) {
        match to {
            Sink::Gate => drop(self.gate.shutdown(std::net::Shutdown::Write)),
            Sink::Client => drop(self.client.shutdown(std::net::Shutdown::Write)),
            Sink::Server => drop(self.child.stdin.take()),
            Sink::Host => {}
        }
    }

    fn send(&mut self, to: Sink, line: &[u8]) {
        let k = slot(to);
        let w = &mut self.writers[k];
        if !w.open || w.closing {
            return;
        }
        w.queue.extend_from_slice(line);
        w.queue.push(b'\n');
    }

    fn route(&mut self, from: Source, line: &[u8]) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        match from {
            Source::Host => self.host_line(line),
            Source::Server => self.server_line(line),
            Source::Gate => self.send(Sink::Host, line),
            Source::Client => self.client_line(line),
        }
    }

    fn host_line(&mut self, line: &[u8]) {
        let Ok(head) = serde_json::from_slice::<Head<'_>>(line) else {
            return self.send(Sink::Gate, line);
        };
        match (head.method.as_deref(), head.id.and_then(canon), head.params) {
            (Some("initialize"), Some(_), _) => {
                self.handshake = true;
                self.send(Sink::Gate, line)
            }
            (Some("tools/call"), Some(id), Some(params)) => match self.settle(&id, params, line) {
                Some(settled) => {
                    self.send(Sink::Server, settled.edited.as_deref().unwrap_or(line));
                    // What a validation is kept for is read once the call is on its way.
                    if let Some((surface, tool, arguments)) = settled.validation {
                        self.later.push(Later::Expect { id, surface, tool, arguments: arguments.to_owned() });
                    }
                }
                None => self.send(Sink::Gate, line),
            },
            (Some("notifications/cancelled"), None, Some(params)) => {
                let id = params.request_id.map(|id| id.to_string());
                match id.and_then(|id| self.fast.remove(&id)) {
                    Some(call) => {
                        call.token.map(|t| self.fast_tokens.remove(&t));
                        self.send(Sink::Server, line)
                    }
                    None => self.send(Sink::Gate, line),
                }
            }
            _ => self.send(Sink::Gate, line),
        }
    }

    fn server_line(&mut self, line: &[u8]) {
        if let Some(id) = response_id(line) {
            return self.server_answer(id, line);
        }
        // Progress, its token read from its params alone.
        if let Some(token) = progress_token(line) {
            return self.progress(&token, line);
        }
        let Ok(head) = serde_json::from_slice::<Head<'_>>(line) else {
            return self.send(Sink::Client, line);
        };
        match (head.method.as_deref(), head.id.and_then(canon), head.params) {
            (None, Some(id), _) => self.server_answer(id, line),
            (Some("notifications/progress"), None, Some(params)) => match params.progress_token {
                Some(token) => self.progress(&token.to_string(), line),
                None => self.send(Sink::Client, line),
            },
            (Some("notifications/tools/list_changed"), _, _) => {
                self.inner.surface_stale.store(true, Ordering::Release);
                self.send(Sink::Client, line)
            }
            _ => self.send(Sink::Client, line),
        }
    }

    /// The server's progress notification `line` under `token` (JSON text): a fast call's to
    /// the host, the rmcp client's under its own token.
    fn progress(&mut self, token: &str, line: &[u8]) {
        if self.fast_tokens.contains_key(token) {
            return self.send(Sink::Host, line);
        }
        match self.names.token(token) {
            Some(original) => {
                self.send_edited(Sink::Client, line, |m| m["params"]["progressToken"] = original)
            }
            None => self.send(Sink::Client, line),
        }
    }

    /// The server's answer to the request `id` (JSON text): a fast call's goes to the host (a
    /// validation's kept once it is on its way), the rmcp client's back under its own id.
    fn server_answer(&mut self, id: String, line: &[u8]) {
        if let Some(call) = self.fast.remove(&id) {
            call.token.map(|t| self.fast_tokens.remove(&t));
            self.send(Sink::Host, line);
            if let Some((language, arguments, argument)) = call.validation {
                self.later.push(Later::Keep { language, arguments, argument, answer: line.to_vec() });
            }
            return;
        }
        match self.names.answered(&id) {
            Some(original) => self.send_edited(Sink::Client, line, |m| m["id"] = original),
            None => self.send(Sink::Client, line),
        }
    }

    fn client_line(&mut self, line: &[u8]) {
        let Ok(head) = serde_json::from_slice::<Head<'_>>(line) else {
            return self.send(Sink::Server, line);
        };
        match (head.method.as_deref(), head.id.and_then(canon), head.params) {
            (Some(_), Some(_), _) => {
                let Ok(mut message) = serde_json::from_slice::<Value>(line) else {
                    return self.send(Sink::Server, line);
                };
                self.names.name(&mut message);
                match serde_json::to_vec(&message) {
                    Ok(bytes) => self.send(Sink::Server, &bytes),
                    Err(_) => self.send(Sink::Server, line),
                }
            }
            (Some("notifications/cancelled"), None, Some(params)) => {
                match params.request_id.and_then(|id| self.names.cancelled(&id.to_string())) {
                    Some(name) => self.send_edited(Sink::Server, line, |m| m["params"]["requestId"] = name),
                    None => self.send(Sink::Server, line),
                }
            }
            _ => self.send(Sink::Server, line),
        }
    }

    /// Send `line` to `to` with `edit` applied (unchanged when it is not JSON).
    fn send_edited(&mut self, to: Sink, line: &[u8], edit: impl FnOnce(&mut Value)) {
        match serde_json::from_slice::<Value>(line) {
            Ok(mut message) => {
                edit(&mut message);
                let bytes = serde_json::to_vec(&message).unwrap_or_else(|_| line.to_vec());
                self.send(to, &bytes)
            }
            Err(_) => self.send(to, line),
        }
    }
}

/// The writer of `to` (the order of [`TO`]).
fn slot(to: Sink) -> usize {
    to as usize
}

fn nonblocking(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: fcntl on a descriptor this process holds open.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
