//! A PostgreSQL server at the tests' URL: the one that answers there, or a throwaway cluster of
//! our own under `target/xtask-postgres/<port>` made with the distribution's binaries (installed
//! with apt-get where none are found), listening only on the URL's host and port.

use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::Result;

/// The parts of a `postgres://user@host:port/database` URL a cluster is made from.
struct Url {
    user: String,
    host: String,
    port: u16,
    database: String,
}

fn parse(url: &str) -> Result<Url> {
    let bad = || format!("PILOTAGE_TEST_POSTGRES={url}: expected postgres://user@host:port/database");
    let rest =
        url.strip_prefix("postgres://").or_else(|| url.strip_prefix("postgresql://")).ok_or_else(bad)?;
    let rest = rest.split('?').next().unwrap_or(rest);
    let (who, place) = rest.rsplit_once('@').unwrap_or(("postgres", rest));
    let user = who.split(':').next().unwrap_or("postgres").to_owned();
    let (address, database) = place.split_once('/').unwrap_or((place, "postgres"));
    let (host, port) = match address.rsplit_once(':') {
        Some((host, port)) => (host.to_owned(), port.parse().map_err(|_| bad())?),
        None => (address.to_owned(), 5432),
    };
    if host.is_empty() || user.is_empty() || database.is_empty() {
        return Err(bad());
    }
    Ok(Url { user, host, port, database: database.to_owned() })
}

/// Whether a server accepts a TCP connection at the URL's host and port within 2 s.
pub fn answers(url: &str) -> Result<bool> {
    let url = parse(url)?;
    let addrs = (url.host.as_str(), url.port).to_socket_addrs().map_err(|e| format!("{}: {e}", url.host))?;
    Ok(addrs.into_iter().any(|a| TcpStream::connect_timeout(&a, Duration::from_secs(2)).is_ok()))
}

/// A loopback port nothing listens on (at the moment of asking).
pub fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    listener.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

/// A cluster this run started; stopped (and its files kept for the next run) when dropped.
pub struct Cluster {
    bin: PathBuf,
    base: PathBuf,
    data: PathBuf,
}

impl Cluster {
    /// The command that stops it by hand.
    pub fn stop_command(&self) -> String {
        let owner = if is_root() { "runuser -u postgres -- " } else { "" };
        format!("{owner}{} -D {} stop", self.bin.join("pg_ctl").display(), self.data.display())
    }

    /// Stops it and removes its files.
    pub fn discard(self) {
        let base = self.base.clone();
        drop(self);
        let _ = std::fs::remove_dir_all(base);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let pg_ctl = self.bin.join("pg_ctl");
        let _ = as_owner(&pg_ctl).arg("-D").arg(&self.data).args(["-m", "fast", "-w", "stop"]).status();
    }
}

/// A server answers at `url` afterwards: the one already there (answers `None`), or a cluster
/// started here (answered, so that the caller decides how long it lives).
pub fn ensure(url: &str, root: &Path) -> Result<Option<Cluster>> {
    if answers(url)? {
        eprintln!("xtask: PostgreSQL answers at {url}");
        return Ok(None);
    }
    let parsed = parse(url)?;
    let bin = binaries()?;
    let base = root.join("target/xtask-postgres").join(parsed.port.to_string());
    let data = base.join("data");
    std::fs::create_dir_all(&base).map_err(|e| format!("{}: {e}", base.display()))?;
    if is_root() {
        // initdb and postgres refuse to run as root: the cluster belongs to `postgres`.
        crate::run(Command::new("chown").arg("-R").arg("postgres").arg(&base))?;
    }
    if !data.join("PG_VERSION").exists() {
        eprintln!("xtask: a throwaway cluster in {}", data.display());
        crate::run(as_owner(&bin.join("initdb")).arg("-D").arg(&data).args([
            "-A",
            "trust",
            "-U",
            &parsed.user,
            "--no-sync",
        ]))?;
    }
    let options = format!("-p {} -k {} -c listen_addresses={}", parsed.port, base.display(), parsed.host);
    crate::run(
        as_owner(&bin.join("pg_ctl"))
            .arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(base.join("log"))
            .args(["-o", &options, "-w", "start"]),
    )?;
    let cluster = Cluster { bin: bin.clone(), base, data };
    let port = parsed.port.to_string();
    let created = Command::new(bin.join("createdb"))
        .args(["-h", &parsed.host, "-p", &port, "-U", &parsed.user, &parsed.database])
        .output()
        .map_err(|e| format!("createdb: {e}"))?;
    let stderr = String::from_utf8_lossy(&created.stderr);
    if !created.status.success() && !stderr.contains("already exists") {
        return Err(format!("createdb {} failed: {stderr}", parsed.database));
    }
    eprintln!("xtask: PostgreSQL started at {url}");
    Ok(Some(cluster))
}

/// The folder of the distribution's PostgreSQL server binaries: `initdb` on the PATH, else the
/// newest `/usr/lib/postgresql/<version>/bin`; installed with apt-get where neither exists.
fn binaries() -> Result<PathBuf> {
    if let Some(bin) = found() {
        return Ok(bin);
    }
    if Command::new("apt-get").arg("--version").output().is_err() || !is_root() {
        return Err(
            "no PostgreSQL answers at PILOTAGE_TEST_POSTGRES and no PostgreSQL binaries are installed: \
                    install the distribution's PostgreSQL (its `initdb` and `pg_ctl`), or point \
                    PILOTAGE_TEST_POSTGRES at a server"
                .to_owned(),
        );
    }
    eprintln!("xtask: installing the distribution's PostgreSQL (apt-get)");
    crate::run(Command::new("apt-get").arg("update"))?;
    crate::run(
        Command::new("apt-get")
            .args(["install", "-y", "postgresql"])
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )?;
    found().ok_or_else(|| "apt-get installed postgresql, but no initdb was found".to_owned())
}

fn found() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .find(|dir| dir.join("initdb").exists() && dir.join("pg_ctl").exists());
    if let Some(dir) = on_path {
        // A link into the distribution's folder (Debian's /usr/local/bin/initdb): use that
        // folder, where psql and createdb live beside the server binaries.
        let real = std::fs::canonicalize(dir.join("initdb")).ok();
        return Some(real.and_then(|r| r.parent().map(Path::to_path_buf)).unwrap_or(dir));
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|bin| bin.join("initdb").exists())
        .collect();
    versions.sort_by_key(|p| p.to_string_lossy().split('/').rev().nth(1).and_then(|v| v.parse::<u32>().ok()));
    versions.pop()
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// `program`, run as the cluster's owner: `postgres` when we are root, else ourselves.
fn as_owner(program: &Path) -> Command {
    if is_root() {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}
