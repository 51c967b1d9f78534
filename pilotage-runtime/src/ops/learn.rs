//! The learn operation (Part III §4.1): the manifest (Part II §5.1), derived entirely from
//! the hosted Languages, and the guides (Part II §5.2): the index, a guide, or one topic of it.

use serde_json::Value;

use super::{by_name, str_arg, Args, Hosted, Reply};
use crate::engine::LanguageSpec;
use crate::model::capabilities::{Capability, CapabilityDeclaration, SubFeature};
use crate::model::declaration::{PromotionAuthority, TraceSubprogram};
use crate::model::errors::RequestError;
use crate::model::guide::{GuideFetch, GuideIndex, GuideSource};
use crate::model::manifest::{
    LanguageEntry, LongRuns, LoopObject, Manifest, CATALOG_TOOL, GUIDE_TOOL, PILOTAGE_VERSION,
};

/// The manifest of a server hosting `langs` with server-level `defaults`.
pub(crate) fn manifest(langs: &[Hosted], defaults: Option<CapabilityDeclaration>) -> Manifest {
    Manifest {
        pilotage: PILOTAGE_VERSION.to_owned(),
        languages: langs.iter().map(|l| manifest_entry(l.spec, &l.effective)).collect(),
        capabilities: defaults,
    }
}

/// The manifest entry of `spec` under effective map `effective`.
pub(crate) fn manifest_entry(spec: &LanguageSpec, effective: &CapabilityDeclaration) -> LanguageEntry {
    let exec = effective.declares(Capability::Execute);
    LanguageEntry {
        name: spec.name.to_owned(),
        title: spec.title.to_owned(),
        guides: GUIDE_TOOL.to_owned(),
        catalog: effective.declares(Capability::Catalog).then(|| CATALOG_TOOL.to_owned()),
        loop_tools: LoopObject {
            validate: spec.tools.validate.name.to_owned(),
            execute: exec.then(|| spec.tools.execute.as_ref().map(|t| t.name.to_owned())).flatten(),
            trace: effective
                .declares(Capability::TraceFetch)
                .then(|| spec.tools.trace.as_ref().map(|t| t.name.to_owned()))
                .flatten(),
        },
        capabilities: effective.clone(),
        locator: spec.locator.as_str().to_owned(),
        context_schema: spec.context_schema.clone(),
        execution: exec.then(|| spec.execution.map(|e| e.as_str().to_owned())).flatten(),
        trace: exec.then(|| spec.trace.map(|t| t.as_str().to_owned())).flatten(),
        trace_subprogram: spec.trace_subprogram.map(|t| {
            match t {
                TraceSubprogram::Opaque => "opaque",
                TraceSubprogram::Expanded => "expanded",
            }
            .to_owned()
        }),
        retention: exec.then(|| spec.retention.as_ref().map(|r| r.as_str().to_owned())).flatten(),
        promotion_authority: spec.promotion_authority.map(|p| {
            match p {
                PromotionAuthority::Caller => "caller",
                PromotionAuthority::Promoter => "promoter",
            }
            .to_owned()
        }),
        long_runs: (exec && spec.tasks).then(|| LongRuns {
            progress: true,
            cancellation: true,
            tasks: rmcp::model::TASKS_EXTENSION_ID.to_owned(),
        }),
        validation: spec.tools.validate.inline.then(|| "inline".to_owned()),
    }
}

/// The guide tool: `learn` for the Language named by `language`.
pub(crate) fn guide(langs: &[Hosted], args: &Args) -> Reply {
    let found = by_name(langs, args).and_then(|(_, l)| {
        learn(
            l.spec.name,
            &l.spec.guides,
            l.effective.declares_sub(SubFeature::TopicFetch),
            str_arg(args, "id"),
            str_arg(args, "topic"),
        )
    });
    match found {
        Err(e) => Reply::error(e),
        Ok(v) => {
            let text = match (v.get("guides"), v.pointer("/guide/id")) {
                (Some(Value::Array(g)), _) => format!("{} guide(s)", g.len()),
                (_, Some(id)) => format!("guide {}", id.as_str().unwrap_or_default()),
                _ => "guide".to_owned(),
            };
            Reply { structured: v, text, ..Reply::default() }
        }
    }
}

/// Serve `learn` for one Language: the index when `id` is absent, the fetch form otherwise, the
/// topic form when `topic` is given and `topic_fetch` is declared.
fn learn(
    language: &str,
    guides: &[GuideSource],
    topic_fetch: bool,
    id: Option<&str>,
    topic: Option<&str>,
) -> Result<Value, RequestError> {
    let Some(id) = id else {
        if topic.is_some() {
            return Err(RequestError::invalid("`topic` needs `id`: name the guide whose topic you want"));
        }
        let index = GuideIndex { guides: guides.iter().map(|g| g.to_guide(language, None)).collect() };
        return Ok(serde_json::to_value(index).unwrap_or_default());
    };
    let Some(source) = guides.iter().find(|g| g.id == id) else {
        let ids: Vec<&str> = guides.iter().map(|g| g.id).collect();
        return Err(RequestError::not_found(format!(
            "unknown guide '{id}' for {language}; guides: {}",
            ids.join(", ")
        )));
    };
    let body = match topic {
        None => source.body.to_owned(),
        Some(topic) => {
            if !topic_fetch {
                return Err(RequestError::invalid(format!(
                    "{language} does not declare guides.topic_fetch: fetch the whole guide '{id}' without `topic`"
                )));
            }
            match source.topic_section(topic) {
                Some(section) if source.topics.contains(&topic) => section.to_owned(),
                _ => {
                    return Err(RequestError::not_found(format!(
                        "guide '{id}' has no topic '{topic}'; topics: {}",
                        source.topics.join(", ")
                    )))
                }
            }
        }
    };
    let fetch = GuideFetch { guide: source.to_guide(language, Some(body)) };
    Ok(serde_json::to_value(fetch).unwrap_or_default())
}
