//! [`Kit`]: one engine behind a real server and an in-process [`Client`], for synchronous
//! `#[test]` functions.

use std::sync::Arc;

use serde_json::Value;

use super::client::{Client, ToolResult};
use super::ran::Ran;
#[cfg(feature = "sqlite")]
use super::store::TempStore;
use crate::engine::Engine;
use crate::model::declaration::Retention;
use crate::model::errors::RequestError;
use crate::model::plan::ValidateResponse;
use crate::model::trace::TraceFetchResponse;
use crate::server::{Server, ServerBuilder};

/// One engine instance served by a [`Server`] of its own, with an initialized [`Client`]
/// session, driven from synchronous tests (it owns the Tokio runtime it needs; inside an async
/// test use [`Client`] directly). Every session of that server shares the one instance, which
/// the test reaches through [`Kit::engine`] to arrange or inspect its world.
///
/// Each call is the [`Client`] method of the same name, run to completion.
///
/// ```
/// # use pilotage::prelude::*;
/// # #[derive(Clone, Copy, pilotage::Codes)]
/// # enum CalcCode { UnknownOp }
/// # #[derive(Clone, Copy, pilotage::RiskLevels)]
/// # enum CalcRisk { #[risk(read_only)] Safe }
/// # struct Calc;
/// # #[pilotage::language(
/// #     name = "calc/v1", title = "Arithmetic programs", program = "calc", locator = "json-pointer",
/// #     capabilities(guides, validate, plan, execute), execution = "immediate", trace = "full",
/// #     retention = "none", guides = "../examples/calc/guides", codes = CalcCode, risk = CalcRisk,
/// # )]
/// # impl Calc {
/// #     #[loop_tool(validate, name = "validate_calc")]
/// #     fn validate(&self, program: &Json, v: &mut Validation<CalcCode, CalcRisk>) {
/// #         if program["op"] != "add" { v.error(CalcCode::UnknownOp, "/op", "only `add` exists"); }
/// #         v.step("sum", CalcRisk::Safe);
/// #     }
/// #     #[loop_tool(execute, name = "run_calc")]
/// #     async fn run(&self, program: &Json, run: &mut Run) -> Finish {
/// #         let sum: f64 = program["args"].as_array().into_iter().flatten().filter_map(Json::as_f64).sum();
/// #         run.step("sum").output(json!(sum)).succeeded();
/// #         Finish::output(json!({ "sum": sum }))
/// #     }
/// # }
///
/// let mut kit = pilotage::testkit::Kit::new(Calc);
/// assert!(!kit.validate(&json!({"op": "mul"})).valid);
/// let ran = kit.execute(&json!({"op": "add", "args": [1, 2]}));
/// assert_eq!(ran.output(), Some(&json!({"sum": 3.0})));
/// ```
pub struct Kit<E: Engine> {
    engine: Arc<E>,
    client: Client,
    runtime: tokio::runtime::Runtime,
    /// The durable store of a Language with a duration retention (dropped after the server).
    _store: KeptStore,
}

/// What a kit keeps of its temporary durable store.
#[cfg(feature = "sqlite")]
type KeptStore = Option<TempStore>;
/// What a kit keeps of its temporary durable store: nothing without the feature `sqlite`.
#[cfg(not(feature = "sqlite"))]
type KeptStore = ();

/// A [`TempStore`] behind `builder` when the Language's retention is `durable`.
#[cfg(feature = "sqlite")]
fn durable_store(builder: ServerBuilder, durable: bool) -> (ServerBuilder, KeptStore) {
    match durable.then(|| TempStore::new("testkit")) {
        Some(store) => (builder.state(Arc::new(store.open())), Some(store)),
        None => (builder, None),
    }
}

/// Without the feature `sqlite`, a durable retention is left to the builder (which refuses it
/// unless `configure` gives it a durable store).
#[cfg(not(feature = "sqlite"))]
fn durable_store(builder: ServerBuilder, _durable: bool) -> (ServerBuilder, KeptStore) {
    (builder, ())
}

impl<E: Engine> Kit<E> {
    /// Serve `engine` with the default builder. A Language whose retention is an ISO 8601
    /// duration gets a durable store in a `TempStore` (feature `sqlite`), deleted with the kit.
    ///
    /// # Panics
    /// When the server does not build.
    pub fn new(engine: E) -> Kit<E> {
        Kit::with(engine, |builder| builder)
    }

    /// Serve `engine` with the builder `configure` returns (limits, a store, other Languages,
    /// ...); the engine, and the temporary store of a duration retention, are added to the
    /// builder first.
    ///
    /// # Panics
    /// When the server does not build, or the Tokio runtime cannot start.
    pub fn with(engine: E, configure: impl FnOnce(ServerBuilder) -> ServerBuilder) -> Kit<E> {
        let engine = Arc::new(engine);
        let shared = engine.clone();
        let builder =
            Server::builder().name("pilotage-testkit", "0").engine(move || shared.clone() as Arc<dyn Engine>);
        let durable = matches!(engine.language_spec().retention, Some(Retention::Duration { .. }));
        let (builder, store) = durable_store(builder, durable);
        let server = configure(builder).build().unwrap_or_else(|e| panic!("the server does not build: {e}"));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("cannot start a Tokio runtime: {e}"));
        let client = runtime.block_on(Client::connect(&server));
        Kit { engine, client, runtime, _store: store }
    }

    /// The engine instance every session is served by.
    pub fn engine(&self) -> &E {
        &self.engine
    }

    /// The client session, for what the shortcuts below do not cover.
    pub fn client(&mut self) -> &mut Client {
        &mut self.client
    }

    /// [`Client::request`]: any JSON-RPC request, its `result` or its `error` object.
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        self.runtime.block_on(self.client.request(method, params))
    }

    /// [`Client::args`].
    pub fn args(&self, program: &Value) -> Value {
        self.client.args(program)
    }

    /// Validate `program`.
    ///
    /// # Panics
    /// When validation is answered with a request error.
    pub fn validate(&mut self, program: &Value) -> ValidateResponse {
        let args = self.args(program);
        self.validate_args(args).unwrap_or_else(|e| panic!("validation was refused: {e}"))
    }

    /// [`Client::validate_args`].
    pub fn validate_args(&mut self, args: Value) -> Result<ValidateResponse, RequestError> {
        self.runtime.block_on(self.client.validate_args(args))
    }

    /// Execute `program`, its trace checked against its plan in debug builds.
    ///
    /// # Panics
    /// When the run is answered with a request error.
    pub fn execute(&mut self, program: &Value) -> Ran {
        let args = self.args(program);
        self.execute_args(args).unwrap_or_else(|e| panic!("the run was refused: {e}"))
    }

    /// [`Client::execute_args`].
    pub fn execute_args(&mut self, args: Value) -> Result<Ran, RequestError> {
        self.runtime.block_on(self.client.execute_args(args))
    }

    /// [`Client::trace`].
    pub fn trace(&mut self, run_id: &str) -> Result<TraceFetchResponse, RequestError> {
        self.runtime.block_on(self.client.trace(run_id))
    }

    /// [`Client::catalog`].
    pub fn catalog(&mut self, args: Value) -> Result<Value, RequestError> {
        self.runtime.block_on(self.client.catalog(args))
    }

    /// [`Client::call`].
    pub fn call(&mut self, tool: &str, args: Value) -> ToolResult {
        self.runtime.block_on(self.client.call(tool, args))
    }
}
