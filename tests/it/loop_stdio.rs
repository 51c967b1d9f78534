//! The full Pilotage loop over stdio: the `workflow` example binary as a child process.

use crate::support;

use support::{scenario, Conn};

#[tokio::test]
async fn full_loop_over_stdio() {
    let mut conn = Conn::stdio("workflow", &[]);
    scenario::full_loop(&mut conn).await;
    assert_eq!(conn.unsolicited(), &[] as &[serde_json::Value], "no server-initiated messages");
}
