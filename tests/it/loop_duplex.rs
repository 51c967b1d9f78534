//! The full Pilotage loop over newline-delimited JSON-RPC on an in-process `tokio::io::duplex`.

use crate::{support, workflow};

use support::{scenario, Conn};

fn server() -> pilotage::Server {
    pilotage::Server::builder().name("test", "0").language(workflow::Workflow::new).build().unwrap()
}

#[tokio::test]
async fn full_loop_over_duplex() {
    let mut conn = Conn::duplex(&server());
    scenario::full_loop(&mut conn).await;
    assert_eq!(conn.unsolicited(), &[] as &[serde_json::Value], "no server-initiated messages");
}

/// Each connection (MCP session) gets its own world: the second one still sees the seeded
/// catalog after the first changed its own.
#[tokio::test]
async fn sessions_have_separate_worlds() {
    let server = server();
    let mut first = Conn::duplex(&server);
    let a = scenario::full_loop(&mut first).await;
    let mut second = Conn::duplex(&server);
    let b = scenario::full_loop(&mut second).await;
    assert_eq!(a.first_catalog_version, b.first_catalog_version);
    assert_ne!(a.run_id, b.run_id);
}
