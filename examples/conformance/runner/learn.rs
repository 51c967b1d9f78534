//! Learn (guides) and lookup (catalog), with catalog versions and visibility.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::assert::{is_error, structured, Stop, R};
use super::ctx::Ctx;
use super::vectors::Vector;

/// PIL-LEARN-INDEX-G
pub async fn index(c: &mut Ctx<'_>, v: &Vector) -> R {
    let response = c.call("learn", c.action(v, &[])?).await?;
    let guides = structured(&response)["guides"].as_array().cloned().unwrap_or_default();
    c.primary.push(response);
    for g in &guides {
        c.prose.check(0, g.get("body").is_none(), g)?;
    }
    c.prose.check(1, guides.iter().any(|g| g["level"] == "core"), json!(guides))?;
    let closed: Vec<&Value> = guides
        .iter()
        .filter(|g| g["topics"].as_array().is_some_and(|t| t.iter().any(|t| t == "closed-sets")))
        .collect();
    c.prose.check(
        2,
        closed.len() == 1 && closed[0]["level"] == "reference",
        format!("guides with the closed-sets topic: {}", json!(closed)),
    )
}

/// A guide id from the index: the core guide, else the first.
async fn some_guide(c: &mut Ctx<'_>) -> Result<Value, Stop> {
    let index = c.guide_index().await?;
    index
        .iter()
        .find(|g| g["level"] == "core")
        .or_else(|| index.first())
        .cloned()
        .ok_or_else(|| Stop::Fail(format!("{} has no guide", c.name())))
}

/// PIL-LEARN-FETCH-G
pub async fn fetch(c: &mut Ctx<'_>, v: &Vector) -> R {
    let guide = some_guide(c).await?;
    let args = c.action(v, &[("<guide-id>", guide["id"].clone())])?;
    let response = c.call("learn", args).await?;
    let fetched = structured(&response)["guide"].clone();
    c.primary.push(response);
    let format = guide["format"].as_str().unwrap_or("text/markdown");
    let body = fetched["body"].as_str();
    let in_format = match (body, format) {
        (Some(b), f) if f.contains("json") => serde_json::from_str::<Value>(b).is_ok(),
        (Some(b), _) => !b.is_empty(),
        (None, _) => false,
    };
    c.prose.check(0, in_format, format!("format {format}, guide {fetched}"))
}

/// PIL-LEARN-UNKNOWN-ID-B
pub async fn unknown_id(c: &mut Ctx<'_>, v: &Vector) -> R {
    let response = c.call("learn", c.action(v, &[])?).await?;
    c.primary.push(response);
    Ok(())
}

/// PIL-LEARN-TOPIC-UNDECLARED-B
pub async fn topic_undeclared(c: &mut Ctx<'_>, v: &Vector) -> R {
    if c.declares("guides.topic_fetch") {
        return Err(Stop::Skip(format!("{} declares guides.topic_fetch", c.name())));
    }
    let index = c.guide_index().await?;
    let guide = index
        .iter()
        .find(|g| g["topics"].as_array().is_some_and(|t| !t.is_empty()))
        .cloned()
        .ok_or("no guide has a topic")?;
    let args =
        c.action(v, &[("<guide-id>", guide["id"].clone()), ("<topic>", guide["topics"][0].clone())])?;
    let response = c.call("learn", args).await?;
    c.primary.push(response);
    Ok(())
}

/// PIL-LOOKUP-LIST-G
pub async fn list(c: &mut Ctx<'_>, v: &Vector) -> R {
    let response = c.call("lookup", c.action(v, &[])?).await?;
    let s = structured(&response).clone();
    c.primary.push(response);
    c.prose.check(0, s["catalog_version"].as_str().is_some_and(|t| !t.is_empty()), &s)?;
    for e in s["items"].as_array().into_iter().flatten() {
        c.prose.check(1, e["risk"].is_string() && e["risk_hints"].is_object(), e)?;
    }
    Ok(())
}

/// Every visible entry id, following `next_cursor` from a list with `args`.
async fn all_ids(c: &mut Ctx<'_>, args: Value) -> Result<Vec<String>, Stop> {
    let mut ids = Vec::new();
    let mut args = args;
    for _ in 0..10_000 {
        let page = c.call_ok("lookup", args.clone()).await?;
        ids.extend(
            page["items"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e["id"].as_str())
                .map(str::to_owned),
        );
        match page["next_cursor"].as_str() {
            Some(cursor) => args["cursor"] = json!(cursor),
            None => return Ok(ids),
        }
    }
    Err(Stop::Fail("list pagination does not end".into()))
}

/// PIL-LOOKUP-PAGINATION-G
pub async fn pagination(c: &mut Ctx<'_>, v: &Vector) -> R {
    let everything = all_ids(c, json!({"language": c.name(), "verb": "list"})).await?;
    if everything.len() < 2 {
        return Err(Stop::Skip(format!(
            "{} has {} catalog entr(y/ies): a catalog with more entries than a page of 1 cannot be constructed",
            c.name(),
            everything.len()
        )));
    }
    let mut args = c.action(v, &[])?;
    let mut seen: Vec<String> = Vec::new();
    let mut pages = 0;
    loop {
        pages += 1;
        ensure!(pages <= everything.len() + 1, "more pages than entries: the cursor does not advance");
        let response = c.call("lookup", args.clone()).await?;
        ensure!(!is_error(&response), "a page request failed: {response}");
        let page = structured(&response).clone();
        let items: Vec<String> = page["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e["id"].as_str())
            .map(str::to_owned)
            .collect();
        if pages > 1 {
            c.prose.check(
                1,
                !items.is_empty(),
                format!("page {pages} after a next_cursor is empty: {page}"),
            )?;
        }
        seen.extend(items);
        let remaining = everything.iter().filter(|id| !seen.contains(id)).count();
        match page["next_cursor"].as_str() {
            Some(cursor) => {
                c.prose.check(2, remaining > 0, format!("a next_cursor on the final page: {page}"))?;
                c.prose.check(0, true, "")?;
                args["cursor"] = json!(cursor);
            }
            None => {
                c.prose.check(
                    0,
                    remaining == 0,
                    format!("no next_cursor, yet {remaining} entries remain"),
                )?;
                c.prose.check(2, true, "")?;
                break;
            }
        }
    }
    ensure!(pages >= 2, "a limit of 1 over {} entries returned one page", everything.len());
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for id in &seen {
        *counts.entry(id.as_str()).or_default() += 1;
    }
    let mut expected = everything.clone();
    expected.sort();
    let mut got = seen.clone();
    got.sort();
    c.prose.check(
        3,
        got == expected && counts.values().all(|n| *n == 1),
        format!("pages covered {got:?}, the catalog holds {expected:?}"),
    )
}

/// PIL-LOOKUP-GET-UNKNOWN-B
pub async fn get_unknown(c: &mut Ctx<'_>, v: &Vector) -> R {
    let response = c.call("lookup", c.action(v, &[])?).await?;
    let s = structured(&response).clone();
    c.primary.push(response);
    c.prose.check(0, s["catalog_version"].as_str().is_some_and(|t| !t.is_empty()), &s)
}

/// PIL-LOOKUP-CHANGED-UNDECLARED-B
pub async fn changed_undeclared(c: &mut Ctx<'_>, v: &Vector) -> R {
    if c.declares("catalog.changed_since") {
        return Err(Stop::Skip(format!("{} declares catalog.changed_since", c.name())));
    }
    let token = c.catalog_version().await?;
    let response = c.call("lookup", c.action(v, &[("<token>", json!(token))])?).await?;
    c.primary.push(response);
    Ok(())
}

/// PIL-LOOKUP-UNKNOWN-BASELINE-B
pub async fn unknown_baseline(c: &mut Ctx<'_>, v: &Vector) -> R {
    let response = c.call("lookup", c.action(v, &[])?).await?;
    c.primary.push(response);
    // The accepted counterpart of the same verb: a delta from a token the server issued.
    let token = c.catalog_version().await?;
    let delta = c
        .call("lookup", json!({"language": c.name(), "verb": "changed_since", "catalog_version": token}))
        .await?;
    ensure!(!is_error(&delta), "changed_since from the server's own current token failed: {delta}");
    Ok(())
}

/// PIL-CATALOG-VERSION-STABLE-G
pub async fn version_stable(c: &mut Ctx<'_>, v: &Vector) -> R {
    let args = c.action(v, &[])?;
    let first = c.call_ok("lookup", args.clone()).await?;
    let second = c.call_ok("lookup", args).await?;
    c.prose.check(
        0,
        first["catalog_version"].is_string() && first["catalog_version"] == second["catalog_version"],
        format!("{} then {}", first["catalog_version"], second["catalog_version"]),
    )
}

/// PIL-CATALOG-VERSION-BUMPS-G
pub async fn version_bumps(c: &mut Ctx<'_>, v: &Vector) -> R {
    let perturb = c.bound(&c.binding.perturb_catalog, "a catalog change")?;
    let args = c.action(v, &[])?;
    let first = c.call_ok("lookup", args.clone()).await?;
    c.hook(&perturb).await?;
    let second = c.call_ok("lookup", args).await?;
    c.prose.check(
        0,
        first["catalog_version"].is_string() && first["catalog_version"] != second["catalog_version"],
        format!("{} then {}", first["catalog_version"], second["catalog_version"]),
    )
}

/// PIL-AUTHZ-INVISIBLE-ENTRY-B
pub async fn invisible_entry(c: &mut Ctx<'_>, v: &Vector) -> R {
    let invisible = c.bound(&c.binding.invisible, "an invisible entry")?;
    let response = c.call("lookup", c.action(v, &[])?).await?;
    c.primary.push(response.clone());
    let unknown = "no-such-entry";
    let nonexistent = c.call("lookup", json!({"language": c.name(), "verb": "get", "id": unknown})).await?;
    // Both results echo the requested id; apart from it they must be identical.
    let masked = |r: &Value, id: &str| r["result"].to_string().replace(id, "<requested id>");
    let (a, b) = (masked(&response, invisible.id), masked(&nonexistent, unknown));
    c.prose.check(0, a == b, format!("invisible: {a}\nnonexistent: {b}"))?;
    let mut seen = Vec::new();
    let validated = c.call("validate", json!({"program": invisible.near_miss})).await?;
    seen.push(validated["result"].to_string());
    let listed = all_ids(c, json!({"language": c.name(), "verb": "list"})).await?;
    seen.push(listed.join(","));
    if c.declares("catalog.search") {
        let q = c.call("lookup", json!({"language": c.name(), "verb": "list", "q": invisible.id})).await?;
        seen.push(q["result"].to_string());
    }
    let leaked = seen.iter().find(|s| s.contains(invisible.id));
    c.prose.check(
        1,
        leaked.is_none(),
        format!("{} is named in: {}", invisible.id, leaked.cloned().unwrap_or_default()),
    )
}
