//! The closed-sets guide check (Part II §5.2) counts whole-word mentions only: wire names with
//! `-` or `.`, mentions at the very start and end of the body, next to non-ASCII text or inside
//! punctuation. The same const functions the macro evaluates are exercised here at run time.

use pilotage::__private::GuideSet;
use pilotage::engine::Engine;
use pilotage::prelude::*;

#[derive(Clone, Copy, pilotage::Codes)]
enum Code {
    Opening,
    #[code(rename = "bad-ref")]
    BadRef,
    #[code(rename = "v2.unknown")]
    Unknown,
    Closing,
}

#[derive(Clone, Copy, pilotage::RiskLevels)]
enum Risk {
    #[risk(read_only)]
    Safe,
}

struct Words;

#[pilotage::language(
    name = "words/v1",
    title = "Words",
    program = "text",
    locator = "text-range",
    capabilities(guides, validate),
    guides = "../../../../tests/ui/guides/words",
    codes = Code,
    risk = Risk,
)]
impl Words {
    /// Accepts everything.
    #[loop_tool(validate, name = "validate_words")]
    fn validate(&self, _text: &Json, _v: &mut Validation<Code, Risk>) {}
}

/// The message for `guide`, or `None` when every code is named.
fn missing(guide: &str) -> Option<String> {
    let set = GuideSet::codes::<Code>();
    let len = set.message_len("g.md", guide);
    (len > 0).then(|| {
        let bytes = set.message::<512>("g.md", guide);
        GuideSet::text(&bytes[..len]).to_owned()
    })
}

fn main() {
    assert_eq!(Words.language_spec().sets.codes.len(), 7);
    let all = "opening bad-ref v2.unknown constraint input_binding context_binding closing";
    assert_eq!(missing(all), None);
    assert_eq!(missing("opening,bad-ref;(v2.unknown)|constraint|input_binding|context_binding|closing"), None);
    assert_eq!(missing("éopening bad-ref·v2.unknown\nconstraint input_binding context_binding\tclosingé"), None);
    let near = missing("openings bad-refs xv2.unknown constraint_ input_binding context_binding closing");
    let near = near.expect("near misses are not mentions");
    assert!(
        near.starts_with(
            "the closed-sets guide `g.md` never mentions the diagnostic codes `opening`, `bad-ref`, `v2.unknown`, `constraint` (reserved): "
        ),
        "{near}"
    );
    let one = missing("opening bad-ref v2.unknown constraint input_binding context_binding").unwrap();
    assert!(one.contains("never mentions the diagnostic code `closing`: "), "{one}");
    assert!(missing("").unwrap().contains("`context_binding` (reserved)"));

    let statuses = GuideSet::statuses::<NoStatus>();
    let text = "success validation_error catalog_drift promotion_drift partial";
    let len = statuses.message_len("g.md", text);
    let message = statuses.message::<300>("g.md", text);
    assert!(GuideSet::text(&message[..len]).contains("the status `error` (reserved)"));
}
