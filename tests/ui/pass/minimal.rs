//! The smallest Language: guides and validate only.

use pilotage::engine::Engine;
use pilotage::prelude::*;

#[derive(Clone, Copy, pilotage::Codes)]
enum Code {
    Malformed,
}

#[derive(Clone, Copy, pilotage::RiskLevels)]
enum Risk {
    #[risk(read_only)]
    Safe,
}

struct Minimal;

#[pilotage::language(
    name = "minimal/v1",
    title = "Minimal documents",
    program = "document",
    locator = "json-pointer",
    capabilities(guides, validate),
    guides = "../../../../tests/ui/guides/minimal",
    codes = Code,
    risk = Risk,
)]
impl Minimal {
    /// Checks that the document is an object.
    #[loop_tool(validate, name = "validate_minimal")]
    fn validate(&self, program: &Json, v: &mut Validation<Code, Risk>) {
        if !program.is_object() {
            v.error(Code::Malformed, "", "a document is a JSON object");
        } else {
            v.step("whole", Risk::Safe);
        }
    }
}

fn main() {
    let engine = Minimal;
    let spec = engine.language_spec();
    assert_eq!(spec.name, "minimal/v1");
    assert_eq!(spec.program_argument, "document");
    assert_eq!(spec.tools.validate.name, "validate_minimal");
    assert_eq!(spec.tools.validate.doc, "Checks that the document is an object.");
    assert!(spec.tools.execute.is_none() && spec.tools.trace.is_none());
    assert!(spec.execution.is_none() && spec.retention.is_none() && spec.context_schema.is_none());
    assert_eq!(spec.guides.len(), 2);
    assert_eq!(spec.guides[0].id, "core");
    assert!(spec.guides[0].body.starts_with("# Documents"));
    assert_eq!(spec.sets.codes, ["malformed", "constraint", "input_binding", "context_binding"]);
    assert!(spec.sets.kinds.is_empty());
    assert!(spec.plain_tools.is_empty());
    assert!(engine.catalog_snapshot(&Caller::new("me")).is_none());

    let request = pilotage::engine::ValidateRequest {
        program: std::sync::Arc::new(json!([1])),
        context: None,
        catalog: None,
        caller: Caller::new("me"),
    };
    let core = engine.validate_program(&request);
    assert_eq!(core.diagnostics.len(), 1);
    assert_eq!(core.diagnostics[0].code, "malformed");
    assert!(engine.call_plain_tool("nope", &json!({}), &Caller::new("me")).is_none());
}
