//! Execute: outcomes, the processing order, runnable selection, reserved members.

use serde_json::{json, Value};

use super::assert::{base_id, error_kind, is_error, structured, validates, Stop, R};
use super::binding::Observe;
use super::ctx::Ctx;
use super::vectors::Vector;

/// The plan of `program` (`None` when the Language does not declare `plan`).
pub async fn plan_of(c: &mut Ctx<'_>, program: &Value) -> Result<Option<Vec<Value>>, Stop> {
    if !c.declares("plan") {
        return Ok(None);
    }
    let verdict = c.call_ok("validate", json!({"program": program})).await?;
    ensure!(verdict["valid"] == true, "the bound program is not valid: {verdict}");
    validates(&verdict["plan"], "Plan", "plan")?;
    Ok(verdict["plan"]["steps"].as_array().cloned())
}

/// The effective trace level of a request for `requested`: the lower of it and the declared
/// level.
pub fn effective_level(c: &Ctx<'_>, requested: &str) -> String {
    let declared = c.lang["trace"].as_str().unwrap_or("summary");
    if requested == "full" { declared } else { "summary" }.to_owned()
}

/// The action of `v` with `<current-token>` bound (dropped, with a note, for a Language
/// without a catalog, where the member has no meaning and is refused).
async fn with_current_token(c: &mut Ctx<'_>, v: &Vector) -> Result<Value, Stop> {
    if c.declares("catalog") {
        let token = c.catalog_version().await?;
        c.action(v, &[("<current-token>", json!(token))])
    } else {
        let mut args = c.action(v, &[("<current-token>", Value::Null)])?;
        if let Some(o) = args.as_object_mut() {
            if o.remove("expected_catalog_version").is_some() {
                c.prose.notes.push(format!("{} has no catalog: expected_catalog_version omitted", c.name()));
            }
        }
        Ok(args)
    }
}

/// PIL-EXECUTE-SUCCESS-G
pub async fn success(c: &mut Ctx<'_>, v: &Vector) -> R {
    let args = with_current_token(c, v).await?;
    let plan = plan_of(c, &args["program"]).await?;
    let response = c.call("execute", args.clone()).await?;
    let s = structured(&response).clone();
    c.primary.push(response);
    c.prose.check(0, s["outcome"] == json!({"ok": true, "status": "success", "error": null}), &s)?;
    let level = effective_level(c, args["trace_level"].as_str().unwrap_or("summary"));
    c.prose.check(1, s["trace"]["level"] == json!(level), format!("expected level {level}: {s}"))?;
    let steps = s["trace"]["steps"].as_array().cloned().unwrap_or_default();
    let ids: Vec<&str> = steps.iter().filter_map(|t| t["id"].as_str()).collect();
    let unique = ids.iter().enumerate().all(|(i, id)| !ids[..i].contains(id));
    c.prose.check(2, unique && ids.len() == steps.len(), format!("trace ids {ids:?}"))?;
    match &plan {
        Some(plan) => {
            let order: Vec<&str> = plan.iter().filter_map(|p| p["id"].as_str()).collect();
            let positions: Vec<Option<usize>> =
                ids.iter().map(|id| order.iter().position(|p| *p == base_id(id))).collect();
            let ordered = positions.iter().all(Option::is_some) && positions.windows(2).all(|w| w[0] <= w[1]);
            c.prose.check(2, ordered, format!("trace {ids:?} against plan order {order:?}"))?;
            for t in &steps {
                let id = base_id(t["id"].as_str().unwrap_or_default());
                let p = plan.iter().find(|p| p["id"] == id).cloned().unwrap_or_default();
                c.prose.check(
                    3,
                    t.get("calls") == p.get("calls"),
                    format!("trace step {t} against plan step {p}"),
                )?;
            }
        }
        None => {
            c.prose.justify(2, "plan undeclared: checked that every trace id is unique");
            for t in &steps {
                c.prose.check(3, t.get("calls").is_none_or(Value::is_string), t)?;
            }
        }
    }
    Ok(())
}

/// PIL-EXECUTE-GUARD-B
pub async fn guard(c: &mut Ctx<'_>, v: &Vector) -> R {
    let before = c.observe().await?;
    let response = c.call("execute", c.action(v, &[])?).await?;
    let s = structured(&response).clone();
    c.primary.push(response);
    c.prose.check(0, s["outcome"]["status"] == "validation_error", &s)?;
    c.prose.check(1, s["diagnostics"].as_array().is_some_and(|d| !d.is_empty()), &s)?;
    c.unchanged(2, &before).await?;
    c.prose.check(3, s["run_id"].as_str().is_some_and(|r| !r.is_empty()), &s)
}

/// A stale token: the current one, then a catalog change.
async fn stale_token(c: &mut Ctx<'_>) -> Result<String, Stop> {
    let perturb = c.bound(&c.binding.perturb_catalog, "a catalog change")?;
    let token = c.catalog_version().await?;
    c.hook(&perturb).await?;
    let now = c.catalog_version().await?;
    ensure!(now != token, "the catalog change did not move catalog_version");
    Ok(token)
}

/// PIL-EXECUTE-DRIFT-B
pub async fn drift(c: &mut Ctx<'_>, v: &Vector) -> R {
    let stale = stale_token(c).await?;
    let before = c.observe().await?;
    let response = c.call("execute", c.action(v, &[("<stale-token>", json!(stale))])?).await?;
    let s = structured(&response).clone();
    c.primary.push(response);
    c.prose.check(0, s["outcome"]["status"] == "catalog_drift", &s)?;
    c.unchanged(1, &before).await
}

/// PIL-EXECUTE-DRIFT-BEFORE-VALIDATION-B
pub async fn drift_before_validation(c: &mut Ctx<'_>, v: &Vector) -> R {
    let stale = stale_token(c).await?;
    let response = c.call("execute", c.action(v, &[("<stale-token>", json!(stale))])?).await?;
    let s = structured(&response).clone();
    c.prose.check(0, !is_error(&response) && s["outcome"]["status"] == "catalog_drift", &s)
}

/// Promote the bound program; its `program_ref`.
pub async fn promote(c: &mut Ctx<'_>) -> Result<String, Stop> {
    let p = c.bound(&c.binding.promotion, "a promoted program")?;
    let mut args = p.args.clone();
    args[c.argument.as_str()] = p.program.clone();
    if c.lang.get("context_schema").is_some() {
        if let Some(ctx) = &c.binding.context {
            args["context"] = ctx.clone();
        }
    }
    let response = c.tool_call(p.tool, args).await?;
    ensure!(response.get("result").is_some() && !is_error(&response), "promotion failed: {response}");
    structured(&response)["program_ref"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| Stop::Fail(format!("the promote result has no program_ref: {response}")))
}

/// PIL-EXECUTE-PROMOTION-DRIFT-B
pub async fn promotion_drift(c: &mut Ctx<'_>, v: &Vector) -> R {
    let p = c.bound(&c.binding.promotion, "a promoted program")?;
    let reference = promote(c).await?;
    c.hook(&p.drift).await?;
    let before = c.observe().await?;
    let args = c.action(v, &[("<promoted-ref>", json!(reference)), ("<input>", p.input.clone())])?;
    let response = c.call("execute", args).await?;
    let s = structured(&response).clone();
    c.primary.push(response);
    c.prose.check(0, s["outcome"]["status"] == "promotion_drift", &s)?;
    c.unchanged(1, &before).await
}

/// PIL-EXECUTE-BOTH-RUNNABLES-B
pub async fn both_runnables(c: &mut Ctx<'_>, v: &Vector) -> R {
    let reference = match &c.binding.promotion {
        Ok(_) => promote(c).await?,
        Err(why) => {
            c.prose.notes.push(format!(
                "<promoted-ref> is a made-up reference ({why}); runnable selection precedes its resolution"
            ));
            "prog_0000000000000000".to_owned()
        }
    };
    let response = c.call("execute", c.action(v, &[("<promoted-ref>", json!(reference))])?).await?;
    c.primary.push(response);
    Ok(())
}

/// PIL-EXECUTE-NO-RUNNABLE-B
pub async fn no_runnable(c: &mut Ctx<'_>, v: &Vector) -> R {
    let response = c.call("execute", c.action(v, &[])?).await?;
    c.primary.push(response);
    Ok(())
}

/// PIL-EXECUTE-INPUT-BINDING-B
pub async fn input_binding(c: &mut Ctx<'_>, v: &Vector) -> R {
    let p = c.bound(&c.binding.promotion, "a promoted program")?;
    let reference = promote(c).await?;
    let response = c.call("execute", c.action(v, &[("<promoted-ref>", json!(reference))])?).await?;
    let s = structured(&response).clone();
    c.primary.push(response);
    c.prose.check(0, s["outcome"]["status"] == "validation_error", &s)?;
    let points_in = s["diagnostics"].as_array().into_iter().flatten().any(|d| {
        d["code"] == "input_binding"
            && d["path"].as_str().is_some_and(|path| p.bad_input.pointer(path).is_some())
    });
    c.prose.check(1, points_in, &s)
}

/// PIL-EXECUTE-UNKNOWN-TRACE-LEVEL-B
pub async fn unknown_trace_level(c: &mut Ctx<'_>, v: &Vector) -> R {
    let response = c.call("execute", c.action(v, &[])?).await?;
    c.prose.check(0, response.get("error").is_none(), &response)?;
    c.primary.push(response);
    Ok(())
}

/// PIL-EXECUTE-TEST-RUN-UNDECLARED-B
pub async fn test_run_undeclared(c: &mut Ctx<'_>, v: &Vector) -> R {
    if c.declares("execute.test_run") {
        return Err(Stop::Skip(format!("{} declares execute.test_run", c.name())));
    }
    let response = c.call("execute", c.action(v, &[])?).await?;
    c.primary.push(response);
    Ok(())
}

/// PIL-EXECUTE-MODE-MISSING-B
pub async fn mode_missing(c: &mut Ctx<'_>, v: &Vector) -> R {
    let execution = c.lang["execution"].as_str().unwrap_or_default().to_owned();
    if execution != "both" {
        return Err(Stop::Skip(format!("{} executes in mode \"{execution}\", not \"both\"", c.name())));
    }
    let response = c.call_leaving("execute", c.action(v, &[])?, &["mode"]).await?;
    c.primary.push(response);
    Ok(())
}

/// PIL-EXECUTE-IDEMPOTENT-REPLAY-G
pub async fn idempotent_replay(c: &mut Ctx<'_>, v: &Vector) -> R {
    let args = c.action(v, &[])?;
    let before = c.observe().await?;
    let first = c.call("execute", args.clone()).await?;
    let once = c.observe().await?;
    let second = c.call("execute", args).await?;
    let twice = c.observe().await?;
    match &c.binding.observe {
        Observe::Tool(_) => c.prose.check(
            0,
            once != before && twice == once,
            format!("world before {before:?}, after one request {once:?}, after two {twice:?}"),
        )?,
        Observe::Stateless(why) => {
            c.verify_stateless().await?;
            c.prose.justify(0, format!("stateless Language: {why}"))
        }
    }
    c.prose.check(1, first["result"] == second["result"], format!("first {first}\nsecond {second}"))
}

/// PIL-EXECUTE-IDEMPOTENT-CONFLICT-B
pub async fn idempotent_conflict(c: &mut Ctx<'_>, v: &Vector) -> R {
    let args = c.action(v, &[])?;
    let mut first = args.clone();
    first["input"] = c.binding.valid.input.clone().unwrap_or(json!({}));
    let claimed = c.call("execute", first).await?;
    ensure!(!is_error(&claimed), "the first request with the key failed: {claimed}");
    let response = c.call("execute", args).await?;
    c.primary.push(response);
    Ok(())
}

/// PIL-EXECUTE-TRACE-NONE-G
pub async fn trace_none(c: &mut Ctx<'_>, v: &Vector) -> R {
    let response = c.call("execute", c.action(v, &[])?).await?;
    ensure!(!is_error(&response), "a request error: {response}");
    let s = structured(&response).clone();
    c.prose.check(0, s["run_id"].is_string() && s["outcome"].is_object(), &s)?;
    c.prose.check(1, s.get("trace").is_none(), &s)
}

/// Fetch the trace of `run_id` (with `trace_level` when given).
pub async fn fetch(c: &mut Ctx<'_>, run_id: &str, level: Option<&str>) -> Result<Value, Stop> {
    let mut args = json!({"run_id": run_id});
    if let Some(l) = level {
        args["trace_level"] = json!(l);
    }
    c.call("trace_fetch", args).await
}

/// PIL-EXECUTE-STORE-FALSE-G
pub async fn store_false(c: &mut Ctx<'_>, v: &Vector) -> R {
    let response = c.call("execute", c.action(v, &[])?).await?;
    let s = structured(&response).clone();
    c.primary.push(response);
    let run_id = s["run_id"].as_str().unwrap_or_default().to_owned();
    c.prose.check(0, !run_id.is_empty(), &s)?;
    let fetched = fetch(c, &run_id, None).await?;
    c.prose.check(1, error_kind(&fetched) == Some("not_found"), &fetched)
}

/// PIL-EXECUTE-STORE-RETAIN-G
pub async fn store_retain(c: &mut Ctx<'_>, v: &Vector) -> R {
    let response = c.call("execute", c.action(v, &[])?).await?;
    let s = structured(&response).clone();
    c.prose.check(0, !is_error(&response), &response)?;
    c.primary.push(response);
    let run_id = s["run_id"].as_str().unwrap_or_default().to_owned();
    c.prose.check(1, !run_id.is_empty() && s["outcome"].is_object() && s.get("trace").is_none(), &s)?;
    let fetched = fetch(c, &run_id, None).await?;
    ensure!(!is_error(&fetched), "the stored run is not fetchable: {fetched}");
    let f = structured(&fetched).clone();
    validates(&f, "TraceFetchResponse", "the fetched run")?;
    let recorded = c.lang["trace"].clone();
    c.prose.check(
        2,
        f["trace"]["level"] == recorded && f["run_id"] == json!(run_id),
        format!("declared level {recorded}: {f}"),
    )
}

/// PIL-EXECUTE-STORE-UNSUPPORTED-B
pub async fn store_unsupported(c: &mut Ctx<'_>, v: &Vector) -> R {
    let retention = c.lang["retention"].clone();
    if retention != "none" {
        return Err(Stop::Skip(format!("{} declares retention {retention}, not \"none\"", c.name())));
    }
    let before = c.observe().await?;
    let response = c.call("execute", c.action(v, &[])?).await?;
    c.primary.push(response.clone());
    c.prose.check(0, error_kind(&response) == Some("unsupported"), &response)?;
    if before.is_some() {
        let after = c.observe().await?;
        c.prose.check(0, after == before, "the rejected request ran the program")?;
    }
    Ok(())
}

/// PIL-EXECUTE-ENGINE-ERROR-B
pub async fn engine_error(c: &mut Ctx<'_>, v: &Vector) -> R {
    let response = c.call("execute", c.action(v, &[])?).await?;
    let s = structured(&response).clone();
    c.primary.push(response.clone());
    c.prose.check(0, s["outcome"]["ok"] == false && s["outcome"]["status"] == "error", &s)?;
    c.prose.check(1, s["outcome"]["error"].as_str().is_some_and(|e| !e.is_empty()), &s)?;
    c.prose.check(2, response.get("result").is_some() && !is_error(&response), &response)
}

/// PIL-EXECUTE-INTERNAL-B
pub async fn internal(c: &mut Ctx<'_>, v: &Vector) -> R {
    let fault = c.bound(&c.binding.fault, "a server-machinery fault")?;
    let args = c.action(v, &[])?;
    let before = c.observe().await?;
    c.hook(&fault.on).await?;
    let response = c.call("execute", args).await?;
    c.hook(&fault.off).await?;
    c.primary.push(response.clone());
    c.unchanged(0, &before).await?;
    c.prose.check(1, response.get("result").is_some(), &response)
}
