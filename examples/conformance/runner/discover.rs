//! Discovery, cold start and the carrier channel.

use serde_json::{json, Value};

use super::assert::{structured, validates, Stop, R};
use super::ctx::{declares, language_entry, Ctx};
use super::vectors::Vector;
use crate::support::EXT;

/// PIL-DISCOVER-MANIFEST-G
pub async fn manifest(c: &mut Ctx<'_>, _v: &Vector) -> R {
    let before = c.observe().await?;
    let response = c.call("discover", json!({})).await?;
    let m = structured(&response).clone();
    c.primary.push(response);
    let languages = m["languages"].as_array().cloned().unwrap_or_default();
    c.prose.check(0, !languages.is_empty(), &m)?;
    let names: Vec<String> = c.tools.iter().filter_map(|t| t["name"].as_str()).map(str::to_owned).collect();
    for l in &languages {
        let name = l["name"].as_str().unwrap_or_default();
        let (_, effective) = language_entry(&m, name).ok_or("a Language entry without a name")?;
        for (member, tool) in l["loop"].as_object().into_iter().flatten() {
            let tool = tool.as_str().unwrap_or_default();
            c.prose.check(
                1,
                names.iter().any(|n| n == tool),
                format!("{name}: loop.{member} `{tool}` is not in tools/list"),
            )?;
        }
        for (member, capability) in
            [("validate", "validate"), ("execute", "execute"), ("trace", "trace_fetch")]
        {
            let listed = l["loop"].get(member).is_some();
            let expected = member == "validate" || declares(&effective, capability);
            c.prose.check(
                2,
                listed == expected,
                format!("{name}: loop.{member} present: {listed}, {capability} declared: {expected}"),
            )?;
        }
        c.prose.check(3, l["guides"] == "pilotage_get_guide", format!("{name}: guides = {}", l["guides"]))?;
        let catalog = declares(&effective, "catalog");
        let bound = if catalog { l["catalog"] == "pilotage_catalog" } else { l.get("catalog").is_none() };
        c.prose.check(3, bound, format!("{name}: catalog declared {catalog}, catalog = {}", l["catalog"]))?;
    }
    c.unchanged(4, &before).await
}

/// PIL-DISCOVER-INITMETA-G
pub async fn init_meta(c: &mut Ctx<'_>, _v: &Vector) -> R {
    let meta = c.host.accelerator().unwrap_or(Value::Null);
    if meta.is_null() {
        return Err(Stop::Skip(
            "the initialize result carries no _meta accelerator (Part III 3.2 makes it a MAY)".into(),
        ));
    }
    c.prose.check(0, meta.get("manifest").is_some() || meta.get("manifest_uri").is_some(), &meta)?;
    validates(&meta, "InitializeMetaValue", "the initialize _meta value")?;
    match meta.get("manifest") {
        Some(inline) => {
            validates(inline, "Manifest", "the inline manifest")?;
            c.prose.check(1, true, "")?;
            let tool = c.manifest.clone();
            c.prose.check(
                2,
                inline == &tool,
                format!("on a fresh session the inline manifest must equal pilotage_manifest:\ninline {inline}\ntool {tool}"),
            )?;
        }
        None => {
            c.prose.justify(1, "no inline manifest: the accelerator carries manifest_uri only");
            c.prose.justify(2, "no inline manifest to compare");
        }
    }
    Ok(())
}

fn description(c: &Ctx<'_>, tool: &str) -> Result<String, Stop> {
    c.tool(tool)
        .and_then(|t| t["description"].as_str())
        .map(str::to_owned)
        .ok_or_else(|| Stop::Fail(format!("tool `{tool}` is not listed or has no description")))
}

/// PIL-COLDSTART-SIGNPOSTS-G
pub async fn cold_start(c: &mut Ctx<'_>, _v: &Vector) -> R {
    let instructions = c.host.instructions().unwrap_or_default();
    c.prose.check(
        0,
        (instructions.contains("Pilotage") || instructions.contains(EXT))
            && instructions.contains("pilotage_manifest"),
        format!("instructions: {instructions:?}"),
    )?;
    let entry = description(c, "pilotage_manifest")?;
    let lower = entry.to_lowercase();
    c.prose.check(
        1,
        lower.contains("first") || lower.contains("start here") || lower.contains("starting point"),
        format!("pilotage_manifest: {entry:?}"),
    )?;
    let learn = description(c, "pilotage_get_guide")?.to_lowercase();
    c.prose.check(
        2,
        learn.contains("learn") && learn.contains("guide"),
        format!("pilotage_get_guide: {learn:?}"),
    )?;
    let languages = c.manifest["languages"].as_array().cloned().unwrap_or_default();
    let manifest = c.manifest.clone();
    let any_catalog = languages.iter().any(|l| {
        let name = l["name"].as_str().unwrap_or_default();
        language_entry(&manifest, name).is_some_and(|(_, e)| declares(&e, "catalog"))
    });
    if any_catalog {
        let lookup = description(c, "pilotage_catalog")?.to_lowercase();
        c.prose.check(
            2,
            (lookup.contains("lookup") || lookup.contains("look up")) && lookup.contains("catalog"),
            format!("pilotage_catalog: {lookup:?}"),
        )?;
    }
    for l in &languages {
        let name = l["name"].as_str().unwrap_or_default();
        for (member, stage) in [("validate", "validat"), ("execute", "execut"), ("trace", "trace")] {
            let Some(tool) = l["loop"][member].as_str() else { continue };
            let d = description(c, tool)?;
            c.prose.check(
                3,
                d.to_lowercase().contains(stage) && d.contains(name),
                format!("`{tool}` must state the {member} stage and name {name}: {d:?}"),
            )?;
        }
    }
    c.prose.justify(
        4,
        "bound by construction: every check above tests communicated content, never exact wording",
    );
    Ok(())
}

/// PIL-CARRIER-UNKNOWN-TOOL-B
pub async fn unknown_tool(c: &mut Ctx<'_>, v: &Vector) -> R {
    let name = v.arguments["name"].as_str().ok_or("the vector names no tool")?;
    let response = c.tool_call(name, json!({})).await?;
    c.primary.push(response);
    Ok(())
}

/// PIL-CARRIER-MALFORMED-B
pub async fn malformed(c: &mut Ctx<'_>, v: &Vector) -> R {
    let body = v.body.clone().ok_or("the vector has no action.body")?;
    // Not a tool call, not even JSON-RPC: the one request no conformant client (the Host
    // included) can be made to send, so it goes over the raw client, on its own connection.
    let mut raw = (c.connector.raw)();
    if !c.connector.stateless {
        raw.initialize(true).await;
    }
    let response = raw.raw(&body).await;
    c.primary.push(response);
    Ok(())
}
