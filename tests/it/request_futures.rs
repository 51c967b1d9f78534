//! The futures the handler gives rmcp stay small. rmcp spawns every request's handling as a
//! task and moves its future whole on the way (into the task, into the task's cell, out as it
//! completes), so every byte of it is copied several times per request; and that future holds
//! whichever of the handler's futures the request needs, so it is as large as the largest of
//! them, for every request. The operations' state inline in `call_tool` once cost a trivial
//! call 80 000 instructions of copying, more than the rest of the call. The handler boxes its
//! large futures, so each stays a few hundred bytes whatever the operations hold; and what it
//! boxes, one call's state, is copied whole once more as it is boxed and stays a few kilobytes:
//! the request's wrappers lend or wrap the futures they are given rather than holding them twice,
//! as an `async fn` holds its arguments, and the largest operation (execute) is boxed on its own.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use pilotage::server::PilotageHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CustomRequest, GetTaskParams,
    InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use std::mem::size_of_val;

use crate::{support, workflow};

use support::{scenario, Conn};

/// The largest handler future a test may see, in bytes (unoptimised builds).
const BOUND: usize = 1024;

/// The most bytes of state a `tools/call` may carry in the box `call_tool` puts it in
/// (unoptimised builds). About 3,900 today; it was 12,600 while the request
/// wrappers were `async fn`s holding the futures they were given twice, and every call copies
/// it whole at least once.
const STATE_BOUND: usize = 6 * 1024;

/// A server's own handler, recording the size of the largest future it makes and of the
/// largest state a `tools/call` carries.
struct Measured {
    inner: PilotageHandler,
    largest: Arc<AtomicUsize>,
    state: Arc<AtomicUsize>,
}

impl Measured {
    /// The size of each of the handler's futures, made for `request` and left unpolled.
    fn measure(&self, request: &CallToolRequestParams, context: &RequestContext<RoleServer>) {
        let inner = &self.inner;
        let c = || context.clone();
        let sizes = [
            size_of_val(&inner.call_tool(request.clone(), c())),
            size_of_val(&inner.list_tools(None, c())),
            size_of_val(&inner.initialize(InitializeRequestParams::default(), c())),
            size_of_val(&inner.get_task(GetTaskParams::new("t"), c())),
            size_of_val(&inner.cancel_task(CancelTaskParams::new("t"), c())),
            size_of_val(&inner.on_custom_request(CustomRequest::new("m", None), c())),
        ];
        self.largest.fetch_max(sizes.into_iter().max().unwrap_or(0), Ordering::SeqCst);
        self.state.fetch_max(inner.call_state_bytes(request.clone(), c()), Ordering::SeqCst);
    }
}

impl ServerHandler for Measured {
    fn get_info(&self) -> ServerConfig {
        ServerHandler::get_info(&self.inner)
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.inner.initialize(request, context).await
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.inner.list_tools(request, context).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.measure(&request, &context);
        self.inner.call_tool(request, context).await
    }
}

/// Every tool of the loop (manifest, guides, catalog, validate, execute, trace) through a real
/// transport: none of the handler's futures outgrows the bound.
#[tokio::test]
async fn the_handler_futures_stay_small() {
    let server =
        pilotage::Server::builder().name("test", "0").language(workflow::Workflow::new).build().unwrap();
    let (largest, state) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let measured = Measured { inner: server.handler(), largest: largest.clone(), state: state.clone() };
    let mut conn = Conn::duplex_handler(measured);
    scenario::full_loop(&mut conn).await;
    let (largest, state) = (largest.load(Ordering::SeqCst), state.load(Ordering::SeqCst));
    assert!(largest > 0, "no tools/call was measured");
    assert!(largest <= BOUND, "a handler future is {largest} bytes; the bound is {BOUND}");
    assert!(state <= STATE_BOUND, "a tools/call carries {state} bytes of state; the bound is {STATE_BOUND}");
}
