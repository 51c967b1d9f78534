//! The integration tests, as one test binary (`cargo test --test it`): one module per topic.
//!
//! They used to be one binary per file, each linking the whole runtime and compiling the
//! example engines it included again; now the runtime is linked once and each example engine,
//! the automation test kit and the conformance runner are compiled once, here, and reached by
//! the modules as `crate::workflow`, `crate::sql`, ... The example engines' own unit tests
//! (`examples/*/engine/tests.rs`) are not part of this binary: they run once, in each example's
//! test target.
//!
//! Run one module with `cargo test --test it loop_duplex::`.

#[path = "../support/mod.rs"]
mod support;

#[allow(dead_code)]
#[path = "../../examples/workflow/engine/mod.rs"]
mod workflow;

#[allow(dead_code)]
#[path = "../../examples/sql/engine/mod.rs"]
mod sql;

#[cfg(feature = "postgres")]
#[allow(dead_code)]
#[path = "../../examples/postgres/engine/mod.rs"]
mod postgres;

#[allow(dead_code)]
#[path = "../../examples/automation/engine/mod.rs"]
mod automation;

#[allow(dead_code)]
#[path = "../../examples/automation/testkit.rs"]
mod kit;

#[allow(dead_code)]
#[path = "../../examples/calc/main.rs"]
mod calc;

#[allow(dead_code)]
#[path = "../../examples/conformance/runner/mod.rs"]
mod runner;

#[allow(dead_code)]
#[path = "../../examples/conformance/bindings/mod.rs"]
mod bindings;

mod auth;
mod automation_context;
mod automation_idempotency;
mod automation_modes;
mod automation_promoted;
mod automation_restart;
mod automation_trace;
mod binding_checklist;
mod carrier;
mod combined_server;
mod combined_shared_tools;
mod completeness;
mod conformance;
mod deferred_catalog;
mod engine_bounds;
mod execution_bounds;
mod expansion;
mod fair_slots;
mod frames;
#[cfg(feature = "host")]
mod gate;
#[cfg(feature = "host")]
mod gate_bounds;
#[cfg(feature = "host")]
mod gate_passthrough;
#[cfg(all(feature = "host", feature = "postgres"))]
mod gate_postgres;
#[cfg(feature = "host")]
mod gate_splice;
#[cfg(feature = "host")]
mod host_discovery;
#[cfg(feature = "host")]
mod host_examples;
#[cfg(feature = "host")]
mod host_hostile;
#[cfg(feature = "host")]
mod host_kit;
#[cfg(feature = "host")]
mod host_loop;
#[cfg(feature = "host")]
mod host_python;
#[cfg(feature = "host")]
mod host_vectors;
mod hostile_calls;
mod hostile_state;
mod http_edge;
mod inline_validation;
mod long_run_clients;
mod long_runs;
mod loop_duplex;
mod loop_http;
mod loop_stdio;
#[cfg(feature = "postgres")]
mod postgres_confirm;
#[cfg(feature = "postgres")]
mod postgres_load;
#[cfg(feature = "postgres")]
mod postgres_loop;
#[cfg(feature = "postgres")]
mod postgres_safety;
mod quiet_logs;
mod readme;
mod replicas;
mod request_futures;
mod revalidation;
mod schema_portability;
mod schemas;
mod sql_loop;
mod standard_schemas;
mod store_faults;
mod testkit;
mod typed_tools;
mod ui;
