//! Traces: decisions, the expected set, partial runs, and the fetch door.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use super::assert::{base_id, is_error, prefixed, structured, validates, Stop, R};
use super::ctx::Ctx;
use super::execute::{effective_level, fetch, plan_of};
use super::vectors::Vector;

/// The plan steps a Run with `trace` was expected to activate (Part II 5.8.2): a step inside
/// an arm only when its branch was activated and took that arm; a step inside a loop body
/// only when its loop was activated and iterated at least once.
pub fn expected_set(plan: &[Value], trace: &[Value]) -> BTreeSet<String> {
    let mut took: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut iterated: BTreeSet<String> = BTreeSet::new();
    for t in trace {
        let id = base_id(t["id"].as_str().unwrap_or_default()).to_owned();
        for d in t["decisions"].as_array().into_iter().flatten() {
            match d["took"].as_str() {
                Some("continue") => {
                    iterated.insert(id.clone());
                }
                Some("exit") => {}
                Some(label) => {
                    took.entry(id.clone()).or_default().insert(label.to_owned());
                }
                None => {}
            }
        }
    }
    fn expected(
        id: &str,
        plan: &[Value],
        took: &BTreeMap<String, BTreeSet<String>>,
        iterated: &BTreeSet<String>,
        depth: usize,
    ) -> bool {
        let Some(step) = plan.iter().find(|p| p["id"] == id) else { return false };
        if depth > plan.len() {
            return false;
        }
        let arm_ok = match step["arm"]["branch"].as_str() {
            None => true,
            Some(branch) => {
                let label = step["arm"]["label"].as_str().unwrap_or_default();
                expected(branch, plan, took, iterated, depth + 1)
                    && took.get(branch).is_some_and(|l| l.contains(label))
            }
        };
        let loop_ok = match step["loop"].as_str() {
            None => true,
            Some(l) => expected(l, plan, took, iterated, depth + 1) && iterated.contains(l),
        };
        arm_ok && loop_ok
    }
    plan.iter()
        .filter_map(|p| p["id"].as_str())
        .filter(|id| expected(id, plan, &took, &iterated, 0))
        .map(str::to_owned)
        .collect()
}

fn steps(s: &Value) -> Vec<Value> {
    s["trace"]["steps"].as_array().cloned().unwrap_or_default()
}

fn base_ids(steps: &[Value]) -> Vec<String> {
    steps.iter().map(|t| base_id(t["id"].as_str().unwrap_or_default()).to_owned()).collect()
}

/// PIL-TRACE-BRANCH-DECISION-G
pub async fn branch_decision(c: &mut Ctx<'_>, v: &Vector) -> R {
    let b = c.bound(&c.binding.branching, "<branching-program>")?;
    let plan = plan_of(c, &b.program).await?.ok_or("plan is required")?;
    let response = c.call("execute", c.action(v, &[])?).await?;
    ensure!(!is_error(&response), "a request error: {response}");
    let s = structured(&response).clone();
    ensure!(s["outcome"]["ok"] == true, "the branching program did not succeed: {s}");
    let trace = steps(&s);
    let labels: BTreeSet<&str> = plan
        .iter()
        .filter(|p| p["arm"]["branch"] == b.branch)
        .filter_map(|p| p["arm"]["label"].as_str())
        .collect();
    ensure!(
        labels.contains(b.took),
        "the plan has no step in arm {:?} of {:?}: {}",
        b.took,
        b.branch,
        json!(plan)
    );
    let entry: Vec<&Value> =
        trace.iter().filter(|t| base_id(t["id"].as_str().unwrap_or_default()) == b.branch).collect();
    let decided = entry.len() == 1
        && entry[0]["decisions"].as_array().is_some_and(|d| d.len() == 1 && d[0]["took"] == b.took);
    c.prose.check(0, decided, format!("the entries of branch {}: {}", b.branch, json!(entry)))?;
    let ids = base_ids(&trace);
    for p in plan.iter().filter(|p| p["arm"]["branch"] == b.branch && p["arm"]["label"] != b.took) {
        let id = p["id"].as_str().unwrap_or_default();
        c.prose.check(1, !ids.iter().any(|t| t == id), format!("{id} of an untaken arm ran: {ids:?}"))?;
    }
    ensure!(labels.len() > 1, "the binding's branching program needs steps in an untaken arm too");
    for id in expected_set(&plan, &trace) {
        c.prose.check(
            2,
            ids.contains(&id),
            format!("expected-set member {id} is not in the trace {ids:?}"),
        )?;
    }
    Ok(())
}

/// PIL-TRACE-ZERO-ITERATION-LOOP-G
pub async fn zero_iteration_loop(c: &mut Ctx<'_>, v: &Vector) -> R {
    let z = c.bound(&c.binding.zero_loop, "<zero-iteration-loop-program>")?;
    let response = c.call("execute", c.action(v, &[])?).await?;
    ensure!(!is_error(&response), "a request error: {response}");
    let s = structured(&response).clone();
    let trace = steps(&s);
    let entries: Vec<&Value> =
        trace.iter().filter(|t| base_id(t["id"].as_str().unwrap_or_default()) == z.loop_id).collect();
    let one_exit = entries.len() == 1
        && entries[0]["decisions"].as_array().is_some_and(|d| d.len() == 1 && d[0]["took"] == "exit");
    c.prose.check(0, one_exit, format!("the entries of loop {}: {}", z.loop_id, json!(entries)))?;
    let ids = base_ids(&trace);
    for body in &z.body {
        c.prose.check(1, !ids.iter().any(|t| t == body), format!("body step {body} ran: {ids:?}"))?;
    }
    if let Some(plan) = plan_of(c, &z.program).await? {
        for p in plan.iter().filter(|p| p["loop"] == z.loop_id) {
            let id = p["id"].as_str().unwrap_or_default();
            c.prose.check(1, !ids.iter().any(|t| t == id), format!("body step {id} ran: {ids:?}"))?;
        }
    }
    c.prose.check(2, s["outcome"]["ok"] == true && s["outcome"]["status"] == "success", &s)
}

/// PIL-TRACE-PARTIAL-B
pub async fn partial(c: &mut Ctx<'_>, v: &Vector) -> R {
    let program = c.bound(&c.binding.mid_run_failing, "<mid-run-failing-program>")?;
    let plan = plan_of(c, &program).await?;
    let response = c.call("execute", c.action(v, &[])?).await?;
    let s = structured(&response).clone();
    c.primary.push(response);
    let status = s["outcome"]["status"].as_str().unwrap_or_default().to_owned();
    let reserved = ["success", "validation_error", "catalog_drift", "promotion_drift", "error"];
    let documented =
        status == "partial" || (!reserved.contains(&status.as_str()) && c.enumerated(&status).await?);
    c.prose.check(0, s["outcome"]["ok"] == false && documented, &s)?;
    let trace = steps(&s);
    let shaped = trace.len() >= 2
        && trace[0]["outcome"]["ok"] == true
        && trace.last().is_some_and(|t| t["outcome"]["ok"] == false);
    c.prose.check(
        1,
        shaped,
        format!("the trace must hold the steps that ran, ending with the failing one: {}", s["trace"]),
    )?;
    match plan {
        Some(plan) => {
            let order: Vec<String> =
                plan.iter().filter_map(|p| p["id"].as_str()).map(str::to_owned).collect();
            let ids = base_ids(&trace);
            c.prose.check(
                1,
                order.starts_with(&ids),
                format!("trace {ids:?} is not a prefix of the plan order {order:?}"),
            )?;
            let expected = expected_set(&plan, &trace);
            for t in trace.iter().filter(|t| !prefixed(t["id"].as_str().unwrap_or_default())) {
                let id = base_id(t["id"].as_str().unwrap_or_default());
                c.prose.check(
                    2,
                    expected.contains(id),
                    format!("{id} is not in the expected set {expected:?}"),
                )?;
            }
        }
        None => c.prose.justify(2, "plan undeclared: the Language defines no expected set"),
    }
    Ok(())
}

/// Execute the valid program stored, at trace level full; its response.
async fn stored_run(c: &mut Ctx<'_>) -> Result<Value, Stop> {
    let mut args = json!({"program": c.binding.valid.program, "store": true, "trace_level": "full"});
    if let Some(i) = &c.binding.valid.input {
        args["input"] = i.clone();
    }
    let s = c.call_ok("execute", args).await?;
    ensure!(s["run_id"].is_string(), "no run_id: {s}");
    ensure!(s["outcome"]["ok"] == true, "the valid program did not succeed: {s}");
    Ok(s)
}

/// PIL-TRACE-FETCH-RETAINED-G
pub async fn fetch_retained(c: &mut Ctx<'_>, v: &Vector) -> R {
    let ran = stored_run(c).await?;
    let run_id = ran["run_id"].clone();
    let response = c.call("trace_fetch", c.action(v, &[("<retained-run-id>", run_id.clone())])?).await?;
    let f = structured(&response).clone();
    c.primary.push(response);
    c.prose.check(
        0,
        f["trace"] == ran["trace"] && f["run_id"] == run_id && f["outcome"] == ran["outcome"],
        format!("inline {}\nfetched {}", ran["trace"], f["trace"]),
    )?;
    let recorded = effective_level(c, "full");
    c.prose.check(1, f["trace"]["level"] == json!(recorded), format!("recorded at {recorded}: {f}"))
}

/// PIL-TRACE-FETCH-LEVEL-G
pub async fn fetch_level(c: &mut Ctx<'_>, v: &Vector) -> R {
    if c.lang["trace"] != "full" {
        return Err(Stop::Skip(format!(
            "{} declares trace level {}: a Run recorded at full cannot be constructed",
            c.name(),
            c.lang["trace"]
        )));
    }
    let ran = stored_run(c).await?;
    let response =
        c.call("trace_fetch", c.action(v, &[("<retained-run-id>", ran["run_id"].clone())])?).await?;
    let f = structured(&response).clone();
    c.primary.push(response);
    c.prose.check(0, f["trace"]["level"] == "summary", &f)?;
    let full = steps(&ran);
    let summary = steps(&f);
    let ids = |s: &[Value]| s.iter().map(|t| t["id"].clone()).collect::<Vec<_>>();
    c.prose.check(1, ids(&full) == ids(&summary), format!("full {full:?}\nsummary {summary:?}"))?;
    for (a, b) in full.iter().zip(&summary) {
        let output_ok =
            b.get("output").is_none() || b["output"] == a["output"] || b["output"]["truncated"] == true;
        c.prose.check(
            1,
            b.get("input").is_none() && output_ok && b["outcome"] == a["outcome"],
            format!("{a} → {b}"),
        )?;
    }
    Ok(())
}

/// PIL-TRACE-FETCH-LEVEL-B
pub async fn fetch_level_none(c: &mut Ctx<'_>, v: &Vector) -> R {
    let ran = stored_run(c).await?;
    let response =
        c.call("trace_fetch", c.action(v, &[("<retained-run-id>", ran["run_id"].clone())])?).await?;
    c.primary.push(response);
    c.prose.justify(0, "bound to the machine checks: isError true with kind invalid_request");
    Ok(())
}

/// PIL-TRACE-FETCH-INDISTINGUISHABLE-B
pub async fn fetch_indistinguishable(c: &mut Ctx<'_>, _v: &Vector) -> R {
    // Unstored: a run executed with store false.
    let mut args = json!({"program": c.binding.valid.program, "store": false});
    if let Some(i) = &c.binding.valid.input {
        args["input"] = i.clone();
    }
    let unstored = c.call_ok("execute", args.clone()).await?;
    let unstored = unstored["run_id"].as_str().ok_or("no run_id")?.to_owned();
    // Another caller's: a stored run of another session (another MCP connection).
    let other = c.connector.host().await.map_err(|e| format!("a second Host cannot connect: {e}"))?;
    args["store"] = json!(true);
    let tool = c.tool_name("execute")?;
    let Value::Object(prepared) = c.prepare("execute", &args, &[]) else { unreachable!("an object") };
    let theirs =
        other.call_tool(&tool, prepared).await.map_err(|e| format!("{tool} on the other session: {e}"))?;
    let theirs = theirs
        .structured
        .as_ref()
        .and_then(|s| s["run_id"].as_str())
        .map(str::to_owned)
        .ok_or_else(|| format!("no run_id: {theirs:?}"))?;
    let trace_tool = c.tool_name("trace_fetch")?;
    let mut fetch_args = serde_json::Map::new();
    fetch_args.insert("run_id".into(), json!(theirs));
    let fetched_there =
        other.call_tool(&trace_tool, fetch_args).await.map_err(|e| format!("{trace_tool}: {e}"))?;
    ensure!(!fetched_there.is_error, "the other session cannot fetch its own run: {fetched_there:?}");
    let nonexistent = "run_0000000000000000".to_owned();
    // A second connection is another session, but not necessarily another caller: over stdio
    // a deployment has one ambient identity, which a durable run store carries across
    // processes. Then the run is legitimately ours, and the third case is not constructible.
    let probe = fetch(c, &theirs, None).await?;
    let same_caller = !is_error(&probe);
    let ids =
        if same_caller { vec![&nonexistent, &unstored] } else { vec![&nonexistent, &unstored, &theirs] };
    let mut results = Vec::new();
    for id in ids {
        let response = fetch(c, id, None).await?;
        validates(structured(&response), "RequestError", "structuredContent")?;
        results.push(response["result"].to_string());
        c.primary.push(response);
    }
    drop(other);
    c.prose.check(
        0,
        results.windows(2).all(|w| w[0] == w[1]),
        format!("nonexistent, unstored, another caller's:\n{}", results.join("\n")),
    )?;
    if same_caller {
        return Err(Stop::Skip(format!(
            "another caller's run is not constructible over {}: a second connection is the same caller here \
             (its stored run is fetchable from this session, as the ambient identity of a deployment is); \
             the nonexistent and unstored results were checked identical",
            c.connector.label
        )));
    }
    Ok(())
}
