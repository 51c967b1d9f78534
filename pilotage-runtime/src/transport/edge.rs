//! The TCP edge of the HTTP endpoint: an accept loop that caps live connections, sets
//! `TCP_NODELAY`, and serves each connection with hyper's HTTP/1.1 server and its header read
//! timeout; plus raising the process's open-file limit.
//!
//! `axum::serve` cannot express a connection cap or hyper's header read timeout, so this loop
//! replaces it; everything per request stays in the axum [`Router`].

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// Descriptors kept free of connections for the listener, session stores, logs and the like.
const FD_RESERVE: u64 = 64;

/// The connection-level settings of [`serve_connections`].
pub(crate) struct EdgeLimits {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
}

/// Accepts connections on `listener` and serves `app` on each until `shutdown` completes, then
/// stops accepting and waits for open connections to finish (idle ones close at once).
///
/// At most `max_connections` (lowered to the open-file limit minus a reserve) connections are
/// served at a time; past that the loop stops accepting, so new connections wait in the
/// kernel's listen backlog until a served one closes.
pub(crate) async fn serve_connections(
    listener: TcpListener,
    app: Router,
    limits: EdgeLimits,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let max_connections = effective_max_connections(limits.max_connections);
    let slots = Arc::new(Semaphore::new(max_connections));
    let graceful = GracefulShutdown::new();
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout).keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(%peer, error = %e, "cannot set TCP_NODELAY");
        }
        let service = TowerToHyperService::new(app.clone());
        let connection = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(%peer, error = %e, "HTTP connection ended with an error");
            }
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// Per-connection accept errors (the peer gave up) are skipped; others, such as running out of
/// descriptors, are logged and retried after a pause rather than spinning.
async fn accept_failed(e: io::Error) {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(e.kind(), ConnectionAborted | ConnectionRefused | ConnectionReset) {
        return;
    }
    tracing::warn!(error = %e, "accept failed; retrying in 100 ms");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// `wanted`, lowered so that connections cannot exhaust the open-file limit.
fn effective_max_connections(wanted: usize) -> usize {
    let Ok((soft, _)) = nofile_limit() else {
        return wanted.max(1);
    };
    let room = usize::try_from(soft.saturating_sub(FD_RESERVE)).unwrap_or(usize::MAX).max(1);
    if room < wanted {
        tracing::warn!(
            max_connections = wanted,
            open_file_limit = soft,
            effective = room,
            "max_connections lowered to fit the open-file limit"
        );
    }
    wanted.min(room).max(1)
}

/// The soft and hard `RLIMIT_NOFILE` of this process.
#[cfg(unix)]
#[allow(clippy::unnecessary_cast, reason = "rlim_t is u64 on Linux, not on every unix")]
pub(crate) fn nofile_limit() -> io::Result<(u64, u64)> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `limit` is a valid, writable `rlimit`.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((limit.rlim_cur as u64, limit.rlim_max as u64))
}

#[cfg(not(unix))]
pub(crate) fn nofile_limit() -> io::Result<(u64, u64)> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "no RLIMIT_NOFILE on this platform"))
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; returns the soft limit before and after.
#[cfg(unix)]
pub(crate) fn raise_nofile_limit() -> io::Result<(u64, u64)> {
    let (soft, hard) = nofile_limit()?;
    if soft >= hard {
        return Ok((soft, soft));
    }
    let limit = libc::rlimit { rlim_cur: hard as libc::rlim_t, rlim_max: hard as libc::rlim_t };
    // SAFETY: `limit` is a valid `rlimit`; raising the soft limit up to the hard one is allowed.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((soft, nofile_limit()?.0))
}

#[cfg(not(unix))]
pub(crate) fn raise_nofile_limit() -> io::Result<(u64, u64)> {
    nofile_limit()
}
