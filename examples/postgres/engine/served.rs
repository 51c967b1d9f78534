//! The engine as a server serves it: with the harness tools (`--admin-tools`), or as agents
//! get it, where `pg_world_fingerprint` and `pg_schema_apply` are absent from `tools/list`
//! (a call to them is an unknown tool) rather than listed and answering "disabled".

use std::sync::{Arc, OnceLock};

use futures::future::BoxFuture;
use pilotage::engine::{
    Caller, CatalogSnapshot, Engine, ExecuteRequest, FinishCore, LanguageSpec, PlainToolError, Recorder,
    ValidateRequest, ValidationCore,
};
use pilotage::model::trace::TraceFetchResponse;
use serde_json::Value;

use super::Pg;

/// `Pg` without its plain tools.
struct ForAgents(Pg);

impl Engine for ForAgents {
    fn language_spec(&self) -> &'static LanguageSpec {
        static SPEC: OnceLock<LanguageSpec> = OnceLock::new();
        SPEC.get_or_init(|| {
            let mut spec = Engine::language_spec(&self.0).clone();
            spec.plain_tools.clear();
            spec
        })
    }

    fn catalog_snapshot(&self, caller: &Caller) -> Option<Arc<CatalogSnapshot>> {
        Engine::catalog_snapshot(&self.0, caller)
    }

    fn validate_program(&self, request: &ValidateRequest) -> ValidationCore {
        Engine::validate_program(&self.0, request)
    }

    fn execute_program<'a>(
        &'a self,
        request: &'a ExecuteRequest,
        recorder: Recorder,
    ) -> BoxFuture<'a, FinishCore> {
        Engine::execute_program(&self.0, request, recorder)
    }

    fn narrate(&self, run: &TraceFetchResponse, question: Option<&str>) -> Option<String> {
        Engine::narrate(&self.0, run, question)
    }

    fn call_plain_tool(&self, _: &str, _: &Value, _: &Caller) -> Option<Result<Value, PlainToolError>> {
        None
    }
}

/// A factory for `ServerBuilder::engine`: every session shares `pg`'s database; the harness
/// tools are served only with `admin_tools`.
pub fn factory(
    db: Arc<super::Db>,
    admin_tools: bool,
) -> impl Fn() -> Arc<dyn Engine> + Send + Sync + 'static {
    move || -> Arc<dyn Engine> {
        let pg = Pg { db: db.clone() };
        if admin_tools {
            Arc::new(pg)
        } else {
            Arc::new(ForAgents(pg))
        }
    }
}
