//! What the example servers' command lines share: the transport flags, logging to stderr
//! (stdout is the MCP channel over stdio), and serving over stdio or Streamable HTTP.
//!
//! Each example's `main.rs` includes it with `#[path = "../common/cli.rs"] mod cli;`, flattens
//! [`Transport`] first into its own flags and runs `cli::run(log, serve(cli))` with the parsed
//! `--log`.

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use pilotage::transport::http::HttpOptions;
use pilotage::transport::jwt::JwtAuthenticator;
use pilotage::{Server, ServerBuilder};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;

/// Where the server listens.
#[derive(clap::Args, Debug)]
pub struct Transport {
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// Accepted Host header values for HTTP (default: loopback names only).
    // Listed after the example's own flags (display order 100).
    #[arg(long = "allowed-host", value_name = "HOST", display_order = 100)]
    pub allowed_hosts: Vec<String>,
    /// Verify every HTTP request's `Authorization: Bearer` JWT (HS256/384/512) with the secret
    /// in this file; the caller is the token's `sub`, with the token's claims.
    #[arg(long, value_name = "PATH", display_order = 102, conflicts_with = "jwks")]
    pub jwt_secret_file: Option<PathBuf>,
    /// Verify every HTTP request's bearer JWT (RS256, ES256...) with the keys of this JWKS file,
    /// chosen by the token's `kid`.
    #[arg(long, value_name = "PATH", display_order = 103)]
    pub jwks: Option<PathBuf>,
    /// Require the verified tokens' `iss` to be ISS.
    #[arg(long, value_name = "ISS", display_order = 104)]
    pub jwt_issuer: Option<String>,
    /// Require the verified tokens' `aud` to name AUD.
    #[arg(long, value_name = "AUD", display_order = 105)]
    pub jwt_audience: Option<String>,
    /// Without JWT verification, serve every sessionless HTTP request as one shared anonymous
    /// caller, who sees every other's runs (default: each such request is its own world).
    #[arg(long, display_order = 106, conflicts_with_all = ["jwt_secret_file", "jwks"])]
    pub anonymous_sessionless: bool,
    /// What to log on stderr: a level (`info`, `debug`, ...) or a filter by target
    /// (`warn,pilotage=info`: our one structured event per tool call). Default: `$RUST_LOG`,
    /// else warnings (without rmcp's warning per JSON-RPC error answered).
    #[arg(long, value_name = "FILTER", display_order = 107)]
    pub log: Option<String>,
}

impl Transport {
    /// `builder` with the identity flags applied: a JWT authenticator from `--jwt-secret-file`
    /// or `--jwks` (with `--jwt-issuer`, `--jwt-audience`), or `--anonymous-sessionless`.
    pub fn identity(&self, builder: ServerBuilder) -> anyhow::Result<ServerBuilder> {
        let jwt = match (&self.jwt_secret_file, &self.jwks) {
            (Some(path), _) => Some(JwtAuthenticator::from_secret_file(path)?),
            (None, Some(path)) => Some(JwtAuthenticator::from_jwks_file(path)?),
            (None, None) => None,
        };
        let Some(mut jwt) = jwt else {
            if self.jwt_issuer.is_some() || self.jwt_audience.is_some() {
                anyhow::bail!("--jwt-issuer and --jwt-audience need --jwt-secret-file or --jwks");
            }
            return Ok(if self.anonymous_sessionless { builder.anonymous_sessionless() } else { builder });
        };
        if let Some(issuer) = &self.jwt_issuer {
            jwt = jwt.issuer(issuer);
        }
        if let Some(audience) = &self.jwt_audience {
            jwt = jwt.audience(audience);
        }
        Ok(builder.authenticator(jwt))
    }
}

/// Log to stderr as `log` (the `--log` flag) says, await `serve`, and report its error on
/// stderr with a failure exit code.
pub async fn run(log: Option<String>, serve: impl Future<Output = anyhow::Result<()>>) -> ExitCode {
    init_logging(log);
    match serve.await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Log to stderr what `flag` (`--log`), else `$RUST_LOG`, else the quiet default selects: warnings,
/// without rmcp's warning per JSON-RPC error answered (a client's mistake, already answered to
/// the client). Quiet because MCP hosts show a stdio server's stderr to people.
fn init_logging(flag: Option<String>) {
    let wanted = flag.or_else(|| std::env::var("RUST_LOG").ok()).filter(|f| !f.trim().is_empty());
    let quiet =
        Targets::new().with_default(LevelFilter::WARN).with_target("rmcp::service", LevelFilter::ERROR);
    let (filter, refused) = match wanted.as_deref().map(str::parse::<Targets>) {
        None => (quiet, None),
        Some(Ok(filter)) => (filter, None),
        Some(Err(e)) => (quiet, Some(e)),
    };
    let subscriber =
        tracing_subscriber::fmt().with_writer(std::io::stderr).with_ansi(false).finish().with(filter);
    let _ = tracing::subscriber::set_global_default(subscriber);
    if let Some(e) = refused {
        tracing::warn!("ignoring the log filter {:?} ({e}); logging warnings", wanted.unwrap_or_default());
    }
}

/// Serve `server` over stdio, or over Streamable HTTP when `transport.http` is given
/// (`stateless`: without MCP sessions). The log line names the Languages (`what`) and the
/// database file when there is one.
pub async fn serve(
    server: Server,
    transport: Transport,
    stateless: bool,
    what: &str,
    db: Option<&Path>,
) -> anyhow::Result<()> {
    let db = db.map(|p| tracing::field::display(p.display()));
    match transport.http {
        None => {
            tracing::info!(db, "serving {what} over stdio");
            server.serve_stdio().await.context("serving stdio")?;
        }
        Some(addr) => {
            let allowed_hosts = transport.allowed_hosts;
            let options = HttpOptions {
                stateless,
                allowed_hosts: (!allowed_hosts.is_empty()).then_some(allowed_hosts),
                ..HttpOptions::default()
            };
            tracing::info!(%addr, db, "serving {what} over Streamable HTTP at /mcp");
            server.serve_http(addr, options).await.with_context(|| format!("serving HTTP on {addr}"))?;
        }
    }
    Ok(())
}
