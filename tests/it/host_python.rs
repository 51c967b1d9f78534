//! `pilotage::host` against a Pilotage server that shares no code with pilotage: a minimal one
//! written with the official Python MCP SDK (`tests/clients/pilotage_server.py`, `mcp` 2.x,
//! installed by `tests/clients/install.sh`), spawned over stdio. Its tools have names no
//! default would guess (`lines_check`, `lines_go`, program argument `script`), its Language is
//! text-valued, and a `FETCH` line makes the plan `openWorld`. It declares no extension
//! capability on `initialize`: the Host still finds Pilotage through `pilotage_manifest`.

use pilotage::host::{Attempt, ExecuteOptions, Execution, GateReason, Host, RunStatus, UNVERIFIED_CLAIMS};
use serde_json::json;

use crate::host_kit::Recording;

use crate::long_run_clients::{python, root};

#[tokio::test]
async fn a_python_sdk_server_is_driven_from_its_own_declarations() {
    let Some(python) = python("host_python::a_python_sdk_server_is_driven_from_its_own_declarations") else {
        return;
    };
    let python = python.display().to_string();
    let calls = std::env::temp_dir().join(format!("pilotage-host-python-{}.calls", std::process::id()));
    let _ = std::fs::remove_file(&calls);
    std::env::set_var("PILOTAGE_PY_CALLS", &calls);
    let script = root().join("tests/clients/pilotage_server.py").display().to_string();
    let approver = Recording::denying();
    let host =
        Host::command(python, vec![script.clone()]).approver(approver.clone()).connect().await.unwrap();
    assert_eq!(host.languages(), ["lines/v1"]);
    let lines = host.language("lines/v1").unwrap();
    assert_eq!(
        lines.guide("core").await.unwrap().body.unwrap().split(':').next(),
        Some("One command a line")
    );

    let invalid = lines.validate(json!("ECHO hi\nRM -rf /")).await.unwrap();
    assert!(!invalid.valid());
    assert_eq!(invalid.diagnostics()[0].code, "unknown_command");

    let echoed = lines.run(json!("ECHO hello"), &ExecuteOptions::default()).await.unwrap();
    let Attempt::Executed(Execution::Ran(ran)) = echoed else { panic!("{echoed:?}") };
    assert_eq!(ran.status, RunStatus::Success);
    assert_eq!(ran.response.output, Some(json!(["hello"])));
    assert!(approver.asked().is_empty());

    let fetch =
        lines.run(json!("ECHO a\nFETCH https://example.org/"), &ExecuteOptions::default()).await.unwrap();
    let Attempt::Executed(Execution::Denied(denial)) = fetch else { panic!("{fetch:?}") };
    assert_eq!(denial.request.reasons, [GateReason::OpenWorld]);
    assert_eq!(denial.request.program_text(), Some("ECHO a\nFETCH https://example.org/"));
    assert_eq!(approver.asked()[0].unverified_claims, UNVERIFIED_CLAIMS);

    let received = std::fs::read_to_string(&calls).unwrap();
    let received: Vec<&str> = received.lines().collect();
    assert_eq!(
        received,
        ["pilotage_manifest", "pilotage_get_guide", "lines_check", "lines_check", "lines_go", "lines_check"]
    );
    let _ = std::fs::remove_file(&calls);
}
