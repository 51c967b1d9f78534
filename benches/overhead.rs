//! What pilotage costs over a hand-written rmcp server doing the same work.
//!
//! Both servers expose a validate tool for the same tiny Language and are driven the same way:
//! newline-delimited JSON-RPC over an in-process duplex pipe, one request at a time. The
//! pilotage server adds what conformance requires (structural checks against the advertised
//! input schema, the bounded engine call, derived fields, the envelope); the hand-written one
//! checks the program inline. Reported as a ratio, never asserted: `cargo bench --bench overhead`.

use std::time::{Duration, Instant};

use pilotage::prelude::*;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[derive(Clone, Copy, pilotage::Codes)]
enum CalcCode {
    UnknownOp,
}

#[derive(Clone, Copy, pilotage::RiskLevels)]
enum CalcRisk {
    #[risk(read_only)]
    Safe,
}

struct Calc;

#[pilotage::language(
    name = "calc/v1", title = "Arithmetic programs", program = "calc", locator = "json-pointer",
    capabilities(guides, validate, plan), guides = "examples/calc/guides", codes = CalcCode, risk = CalcRisk,
)]
impl Calc {
    #[loop_tool(validate, name = "validate_calc")]
    fn validate(&self, program: &Json, v: &mut Validation<CalcCode, CalcRisk>) {
        if program["op"] != "add" {
            v.error(CalcCode::UnknownOp, "/op", "only `add` exists").hint("use \"add\"");
        }
        v.step("sum", CalcRisk::Safe);
    }
}

/// The same validate tool written directly on rmcp.
#[derive(Clone)]
struct HandWritten;

impl ServerHandler for HandWritten {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tool = Tool::default();
        tool.name = "validate_calc".into();
        let schema = json!({"type": "object", "properties": {"calc": {}}, "required": ["calc"]});
        tool.input_schema = std::sync::Arc::new(schema.as_object().cloned().unwrap_or_default());
        Ok(ListToolsResult::with_all_items(vec![tool]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let program = request.arguments.and_then(|a| a.get("calc").cloned()).unwrap_or_default();
        let result = if program["op"] != "add" {
            json!({"valid": false, "diagnostics": [{"severity": "error", "code": "unknown_op", "path": "/op",
                   "message": "only `add` exists", "hint": "use \"add\""}]})
        } else {
            json!({"valid": true, "diagnostics": [], "plan": {"steps": [{"id": "sum", "risk": "safe",
                   "risk_hints": {"readOnly": true, "destructive": false, "openWorld": false}}], "max_risk": "safe",
                   "max_risk_hints": {"readOnly": true, "destructive": false, "openWorld": false}}})
        };
        let mut r = CallToolResult::structured(result);
        r.content = vec![ContentBlock::text("validated")];
        Ok(r.into())
    }
}

const REQUESTS: usize = 2_000;

async fn drive<F, Fut>(serve: F) -> Duration
where
    F: FnOnce(tokio::io::DuplexStream, tokio::io::DuplexStream) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (client_out, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, client_in) = tokio::io::duplex(1 << 16);
    tokio::spawn(serve(server_in, server_out));
    let mut writer = client_out;
    let mut reader = BufReader::new(client_in).lines();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
                      "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}});
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    for m in [init, initialized] {
        writer.write_all(format!("{m}\n").as_bytes()).await.expect("write");
    }
    reader.next_line().await.expect("read").expect("initialize reply");
    let start = Instant::now();
    for i in 1..=REQUESTS {
        let op = if i % 2 == 0 { "add" } else { "mul" };
        let call = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                          "params": {"name": "validate_calc", "arguments": {"calc": {"op": op, "args": [1, 2]}}}});
        writer.write_all(format!("{call}\n").as_bytes()).await.expect("write");
        let line = reader.next_line().await.expect("read").expect("reply");
        assert!(line.contains("\"valid\""), "unexpected reply: {line}");
    }
    start.elapsed()
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    runtime.block_on(async {
        for isolate_validation in [true, false] {
            let limits = Limits { isolate_validation, ..Limits::default() };
            let server = Server::builder().language(|| Calc).limits(limits).build().expect("server");
            let mut ratios = Vec::new();
            for round in 1..=3 {
                let s = server.clone();
                let ours = drive(move |r, w| async move {
                    let _ = s.serve_lines(r, w).await;
                })
                .await;
                let theirs = drive(|r, w| async move {
                    if let Ok(running) = rmcp::ServiceExt::serve(HandWritten, (r, w)).await {
                        let _ = running.waiting().await;
                    }
                })
                .await;
                let ratio = ours.as_secs_f64() / theirs.as_secs_f64();
                ratios.push(ratio);
                println!(
                    "isolate_validation={isolate_validation} round {round}: {REQUESTS} validate calls: pilotage {:.1} µs/call, hand-written rmcp {:.1} µs/call, ratio {ratio:.2}",
                    ours.as_secs_f64() * 1e6 / REQUESTS as f64,
                    theirs.as_secs_f64() * 1e6 / REQUESTS as f64,
                );
            }
            ratios.sort_by(f64::total_cmp);
            println!("isolate_validation={isolate_validation}: median ratio pilotage / hand-written {:.2}", ratios[1]);
        }
    });
}
