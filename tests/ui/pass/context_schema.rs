//! Rule 15 holds by construction: every validate method receives the validated context through
//! `Validation::context()`, so a Language with `context_schema` needs no other method shape.

use pilotage::engine::Engine;
use pilotage::prelude::*;
use pilotage::engine::ValidateRequest;

#[derive(Clone, Copy, pilotage::Codes)]
enum Code {
    WrongTenant,
}

#[derive(Clone, Copy, pilotage::RiskLevels)]
enum Risk {
    #[risk(read_only)]
    Safe,
}

struct Tenanted;

#[pilotage::language(
    name = "tenanted/v1",
    title = "Tenant-scoped documents",
    program = "document",
    locator = "json-pointer",
    capabilities(guides, validate),
    context_schema = "../../../../tests/ui/schemas/context.json",
    guides = "../../../../tests/ui/guides/context",
    codes = Code,
    risk = Risk,
)]
impl Tenanted {
    /// Checks that the document belongs to the caller's tenant.
    #[loop_tool(validate, name = "validate_tenanted")]
    fn validate(&self, program: &Json, v: &mut Validation<Code, Risk>) {
        let tenant = v.context().and_then(|c| c.get("tenant")).cloned();
        if program.get("tenant") != tenant.as_ref() {
            v.error(Code::WrongTenant, "/tenant", "the document belongs to another tenant");
        }
    }
}

fn main() {
    let spec = Tenanted.language_spec();
    assert_eq!(spec.context_schema.as_ref().unwrap()["required"], json!(["tenant"]));
    let validate = |program: Json, context: Json| {
        Tenanted.validate_program(&ValidateRequest {
            program: std::sync::Arc::new(program),
            context: Some(std::sync::Arc::new(context)),
            catalog: None,
            caller: Caller::new("me"),
        })
    };
    assert!(validate(json!({"tenant": "a"}), json!({"tenant": "a"})).diagnostics.is_empty());
    let other = validate(json!({"tenant": "a"}), json!({"tenant": "b"}));
    assert_eq!(other.diagnostics[0].code, "wrong_tenant");
}
