//! The `automation` example as a separate server process: stateless Streamable HTTP on a
//! loopback port, verifying callers with the test JWT secret, over the state store its extra
//! flags name (`--store FILE`, `--postgres URL`). For tests that restart or kill a server.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{auth, example_binary};

/// One running server process; killed when dropped.
pub struct Served {
    pub port: u16,
    child: Option<tokio::process::Child>,
    secret: PathBuf,
    log: PathBuf,
}

impl Served {
    /// Start the automation binary on `port` with `store_flags`, verifying callers with the
    /// secret written to `secret`, and wait until it listens. Its stderr goes to a log file
    /// next to `secret`, shown if it exits before listening.
    pub async fn start(port: u16, store_flags: &[&std::ffi::OsStr], secret: &Path) -> Served {
        std::fs::write(secret, format!("{}\n", auth::SECRET)).expect("write the secret file");
        let log = secret.with_extension(format!("{port}.log"));
        let mut child = tokio::process::Command::new(example_binary("automation"))
            .args(["--http", &format!("127.0.0.1:{port}"), "--stateless"])
            .args(store_flags)
            .arg("--jwt-secret-file")
            .arg(secret)
            .args(["--jwt-issuer", auth::ISSUER, "--jwt-audience", auth::AUDIENCE])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).expect("create the server's log"))
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the automation binary");
        for _ in 0..400 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return Served { port, child: Some(child), secret: secret.to_owned(), log };
            }
            if let Ok(Some(status)) = child.try_wait() {
                let printed = std::fs::read_to_string(&log).unwrap_or_default();
                panic!("the server on port {port} exited ({status}) before listening:\n{printed}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the server on port {port} did not listen within 20 s");
    }

    /// Its MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// SIGKILL: the process gets no chance to flush or clean anything up. It is reaped, and
    /// its log and secret file removed (a start writes the secret again).
    pub async fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().await.expect("SIGKILL the server");
        }
        let _ = std::fs::remove_file(&self.log);
        let _ = std::fs::remove_file(&self.secret);
    }
}
