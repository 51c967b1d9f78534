//! [`HostLimits`]: what the Host accepts from a server and how long it waits, so that a broken
//! or hostile server costs it bounded time and memory.

use std::time::Duration;

/// The bounds a [`Host`](super::Host) holds every server to.
///
/// Every answer larger than its bound, and every request slower than its timeout, is a typed
/// [`HostError`](super::HostError), never a panic nor an unbounded wait.
///
/// ```
/// use std::time::Duration;
/// use pilotage_runtime::host::HostLimits;
/// let limits = HostLimits { request_timeout: Duration::from_secs(5), ..HostLimits::default() };
/// assert_eq!(limits.max_response_bytes, 16 * 1024 * 1024);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostLimits {
    /// The largest message the Host reads from the server (a stdio line, an HTTP body or one
    /// event of it), in bytes. Default 16 MiB.
    pub max_response_bytes: usize,
    /// The longest guide body the Host accepts, in bytes. Default 1 MiB.
    pub max_guide_bytes: usize,
    /// The largest inline trace (its JSON text) the Host accepts, in bytes. Default 8 MiB.
    pub max_trace_bytes: usize,
    /// The most tools a `tools/list` may name, all pages together. Default 1 000.
    pub max_tools: usize,
    /// How long one request may wait for its answer. Default 30 s.
    pub request_timeout: Duration,
    /// How long an execute request may wait for its answer (Runs take longer than lookups).
    /// Default 300 s.
    pub execute_timeout: Duration,
    /// How long connecting (spawning, the handshake, discovery) may take. Default 30 s.
    pub connect_timeout: Duration,
    /// How many times one [`Language::run`](super::Language::run) resumes after `catalog_drift`
    /// before it hands the drift back to the caller. Default 2.
    pub max_drift_recoveries: u32,
    /// Over HTTP (stateless, or sessionful while no standalone GET stream is open, where
    /// notifications may not arrive), the Host rediscovers when its manifest is older than this
    /// (Part III §3.3). Default 60 s.
    pub rediscover_after: Duration,
}

impl Default for HostLimits {
    fn default() -> Self {
        HostLimits {
            max_response_bytes: 16 * 1024 * 1024,
            max_guide_bytes: 1024 * 1024,
            max_trace_bytes: 8 * 1024 * 1024,
            max_tools: 1_000,
            request_timeout: Duration::from_secs(30),
            execute_timeout: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(30),
            max_drift_recoveries: 2,
            rediscover_after: Duration::from_secs(60),
        }
    }
}
