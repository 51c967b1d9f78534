//! Long runs with the official MCP client SDKs, installed by `tests/clients/install.sh` (which
//! `cargo xtask test` calls first): the Python SDK (`mcp` 2.x) and the TypeScript SDK
//! (`@modelcontextprotocol/sdk`) each run `tests/clients/long_run.{py,mjs}` against the
//! `automation` example, over stdio and over Streamable HTTP on 127.0.0.1: a long program with
//! a progress callback, one cancelled, one polled as a task. A missing SDK skips the test, saying
//! the command that installs it, unless `PILOTAGE_REQUIRE_SERVICES` is set (`cargo xtask test`
//! sets it), when it fails.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use pilotage::state::suite::service_or_skip;
use pilotage::testkit::TempStore;
use serde_json::Value;

use crate::support::{example_binary, free_port};

pub(crate) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Python SDK's interpreter, or `None` (the test skipped, saying how to install it) when
/// it is not installed.
pub(crate) fn python(test: &str) -> Option<PathBuf> {
    let p = root().join("target/clients/py/bin/python");
    let missing = (!p.exists())
        .then(|| format!("nothing at {}: `bash tests/clients/install.sh` installs it", p.display()));
    service_or_skip(test, "the Python MCP SDK", missing).then_some(p)
}

/// The TypeScript SDK's `node_modules`, or `None` as for [`python`].
pub(crate) fn node_modules(test: &str) -> Option<PathBuf> {
    let m = root().join("target/clients/node/node_modules");
    let missing = (!m.join("@modelcontextprotocol/sdk/package.json").exists())
        .then(|| format!("nothing in {}: `bash tests/clients/install.sh` installs it", m.display()));
    service_or_skip(test, "the TypeScript MCP SDK", missing).then_some(m)
}

/// Run a client script to its end (at most two minutes) and return its findings.
pub(crate) async fn run_client(program: &Path, args: &[String]) -> Value {
    let child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
    let out = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{} {args:?} did not finish within 120 s", program.display()))
        .expect("the client script's output");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "{} {args:?} failed ({}):\n{stdout}\n{stderr}",
        program.display(),
        out.status
    );
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("findings are not JSON ({e}): {stdout}\n{stderr}"))
}

/// The automation example over Streamable HTTP (MCP sessions) on a free loopback port.
struct HttpExample {
    url: String,
    _child: tokio::process::Child,
}

async fn http_example(store: &Path) -> HttpExample {
    let port = free_port();
    let mut child = tokio::process::Command::new(example_binary("automation"))
        .args(["--http", &format!("127.0.0.1:{port}"), "--store"])
        .arg(store)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the automation example");
    for _ in 0..400 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return HttpExample { url: format!("http://127.0.0.1:{port}/mcp"), _child: child };
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the automation example exited ({status}) before listening");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the automation example did not listen on port {port} within 20 s");
}

/// The findings every run must show: progress, a cancelled run stopped early, a task polled.
fn check(findings: &Value) {
    assert_eq!(
        findings["progress_notifications"], 43,
        "2000 steps: 11 powers of two and 32 slices: {findings}"
    );
    let steps = findings["cancelled_steps"].as_u64().unwrap_or(0);
    assert!((1..41).contains(&steps), "the cancelled run stopped early: {findings}");
    assert_eq!(findings["task_saw_working"], true, "{findings}");
}

fn script(name: &str) -> String {
    root().join("tests/clients").join(name).display().to_string()
}

fn binary() -> String {
    example_binary("automation").display().to_string()
}

#[tokio::test]
async fn python_sdk_over_stdio() {
    let Some(python) = python("long_run_clients::python_sdk_over_stdio") else { return };
    let store = TempStore::new("clients-py-stdio");
    let args = [script("long_run.py"), "stdio".into(), binary(), store.path().display().to_string()];
    check(&run_client(&python, &args).await);
}

#[tokio::test]
async fn python_sdk_over_http() {
    let Some(python) = python("long_run_clients::python_sdk_over_http") else { return };
    let store = TempStore::new("clients-py-http");
    let server = http_example(store.path()).await;
    let args = [script("long_run.py"), "http".into(), server.url.clone()];
    check(&run_client(&python, &args).await);
}

#[tokio::test]
async fn typescript_sdk_over_stdio() {
    let Some(modules) = node_modules("long_run_clients::typescript_sdk_over_stdio") else { return };
    let store = TempStore::new("clients-ts-stdio");
    let modules = modules.display().to_string();
    let args =
        [script("long_run.mjs"), modules, "stdio".into(), binary(), store.path().display().to_string()];
    check(&run_client(Path::new("node"), &args).await);
}

#[tokio::test]
async fn typescript_sdk_over_http() {
    let Some(modules) = node_modules("long_run_clients::typescript_sdk_over_http") else { return };
    let store = TempStore::new("clients-ts-http");
    let server = http_example(store.path()).await;
    let modules = modules.display().to_string();
    let args = [script("long_run.mjs"), modules, "http".into(), server.url.clone()];
    check(&run_client(Path::new("node"), &args).await);
}
