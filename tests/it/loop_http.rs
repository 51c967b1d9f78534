//! The full Pilotage loop over Streamable HTTP, with a plain-JSON client and an SSE client.

use crate::{support, workflow};

use support::{scenario, HttpServer, HttpStyle};

fn server() -> pilotage::Server {
    pilotage::Server::builder().name("test", "0").language(workflow::Workflow::new).build().unwrap()
}

#[tokio::test]
async fn full_loop_over_http_plain_json() {
    let http = HttpServer::start(&server()).await;
    let mut conn = http.connect(HttpStyle::Plain);
    scenario::full_loop(&mut conn).await;
    let session = conn.session_id().expect("the server issued an mcp-session-id");
    assert!(!session.is_empty());
    assert_eq!(conn.last_http_status(), Some(200));
    assert_eq!(conn.last_content_type(), Some("application/json"), "a plain client gets JSON bodies");
}

#[tokio::test]
async fn full_loop_over_http_sse() {
    let http = HttpServer::start(&server()).await;
    let mut conn = http.connect(HttpStyle::Full);
    scenario::full_loop(&mut conn).await;
    let session = conn.session_id().expect("the server issued an mcp-session-id");
    assert!(!session.is_empty());
    assert_eq!(conn.last_http_status(), Some(200));
    assert_eq!(conn.last_content_type(), Some("text/event-stream"), "an SSE client gets SSE");
}

/// Two sessions on one endpoint: distinct session ids and separate worlds.
#[tokio::test]
async fn http_sessions_are_separate() {
    let http = HttpServer::start(&server()).await;
    let mut plain = http.connect(HttpStyle::Plain);
    let a = scenario::full_loop(&mut plain).await;
    let mut full = http.connect(HttpStyle::Full);
    let b = scenario::full_loop(&mut full).await;
    assert_ne!(plain.session_id(), full.session_id());
    assert_eq!(
        a.first_catalog_version, b.first_catalog_version,
        "the second session sees the seeded catalog"
    );
    assert_ne!(a.run_id, b.run_id);
}
