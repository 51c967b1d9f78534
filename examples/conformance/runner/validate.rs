//! Validate: verdicts, diagnostics, locators, context, bounds.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::assert::{def_errors, is_error, structured, validates, Stop, R};
use super::binding::{Observe, Tier};
use super::ctx::Ctx;
use super::vectors::Vector;

/// How long a request that exceeds a validation bound may take before "it hangs".
pub const HANG: Duration = Duration::from_secs(10);

/// Whether `d`'s `path` uses the Language's locator dialect (a JSON Pointer must also resolve
/// inside `program`).
pub fn locator_ok(locator: &str, program: &Value, d: &Value) -> bool {
    match locator {
        "json-pointer" => d["path"].as_str().is_some_and(|p| program.pointer(p).is_some()),
        "text-range" => def_errors(&d["path"], "TextRange").is_none(),
        _ => false,
    }
}

fn errors(s: &Value) -> Vec<Value> {
    s["diagnostics"].as_array().into_iter().flatten().filter(|d| d["severity"] == "error").cloned().collect()
}

/// PIL-VALIDATE-GOOD-G
pub async fn good(c: &mut Ctx<'_>, v: &Vector) -> R {
    let response = c.call("validate", c.action(v, &[])?).await?;
    let s = structured(&response).clone();
    c.primary.push(response);
    c.prose.check(0, s["valid"] == true, &s)?;
    c.prose.check(1, errors(&s).is_empty(), &s)?;
    let plan = c.declares("plan");
    c.prose.check(2, s.get("plan").is_some() == plan, format!("plan declared: {plan}; {s}"))?;
    if plan {
        validates(&s["plan"], "Plan", "plan")?;
    }
    let catalog = c.declares("catalog");
    c.prose.check(3, s["catalog_version"].is_string() == catalog, format!("catalog declared: {catalog}; {s}"))
}

/// PIL-VALIDATE-UNKNOWN-NAME-B
pub async fn unknown_name(c: &mut Ctx<'_>, v: &Vector) -> R {
    let program = c.bound(&c.binding.unknown_name, "<program-with-unknown-name>")?;
    let response = c.call("validate", c.action(v, &[])?).await?;
    let s = structured(&response).clone();
    c.primary.push(response);
    c.prose.check(0, s["valid"] == false, &s)?;
    let diagnostics = s["diagnostics"].as_array().cloned().unwrap_or_default();
    let mut enumerated = false;
    for d in &diagnostics {
        enumerated |= c.enumerated(d["code"].as_str().unwrap_or_default()).await?;
    }
    c.prose.check(1, enumerated, format!("no code of {s} is enumerated in the closed-sets guide"))?;
    let locator = c.lang["locator"].as_str().unwrap_or_default().to_owned();
    for d in &diagnostics {
        c.prose.check(2, locator_ok(&locator, &program, d), format!("locator {locator}: {d}"))?;
    }
    Ok(())
}

/// PIL-VALIDATE-WARNINGS-ONLY-G
pub async fn warnings_only(c: &mut Ctx<'_>, v: &Vector) -> R {
    let response = c.call("validate", c.action(v, &[])?).await?;
    ensure!(!is_error(&response), "a request error: {response}");
    let s = structured(&response).clone();
    c.prose.check(0, s["valid"] == true, &s)?;
    let diagnostics = s["diagnostics"].as_array().cloned().unwrap_or_default();
    c.prose.check(
        1,
        !diagnostics.is_empty() && diagnostics.iter().all(|d| d["severity"] == "warning"),
        &s,
    )?;
    let plan = c.declares("plan");
    c.prose.check(2, s.get("plan").is_some() == plan, format!("plan declared: {plan}; {s}"))
}

/// PIL-VALIDATE-SIDE-EFFECT-FREE-G
pub async fn side_effect_free(c: &mut Ctx<'_>, v: &Vector) -> R {
    if let Observe::Stateless(why) = &c.binding.observe {
        c.verify_stateless().await?;
        return Err(Stop::Skip(format!(
            "{} exposes no observable engine state to capture before and after ({why})",
            c.name()
        )));
    }
    let args = c.action(v, &[])?;
    let before = c.observe().await?;
    for _ in 0..3 {
        let response = c.call("validate", args.clone()).await?;
        ensure!(!is_error(&response), "a request error: {response}");
        let after = c.observe().await?;
        c.prose.check(0, after == before, format!("the world changed: {before:?} → {after:?}"))?;
    }
    // The program is one whose run changes the world, so an unchanged world also shows that
    // no catalog entry was invoked: run it once to prove the check is not vacuous.
    c.require("execute")?;
    let mut run = json!({"program": args["program"]});
    if let Some(input) = &c.binding.valid.input {
        run["input"] = input.clone();
    }
    let ran = c.call_ok("execute", run).await?;
    ensure!(ran["outcome"]["ok"] == true, "the bound <any-program> does not run: {ran}");
    let after_run = c.observe().await?;
    c.prose.check(
        1,
        after_run != before,
        "running the program does not change the world, so validating it could not show an invocation",
    )
}

/// PIL-VALIDATE-RESERVED-CHARS-B
pub async fn reserved_chars(c: &mut Ctx<'_>, v: &Vector) -> R {
    let rc = c.bound(&c.binding.reserved_char, "<program-with-reserved-char-id>")?;
    let response = c.call("validate", c.action(v, &[])?).await?;
    let s = structured(&response).clone();
    c.primary.push(response);
    c.prose.check(0, s["valid"] == false, &s)?;
    let reports = errors(&s).iter().any(|d| {
        let at = d["path"].as_str().and_then(|p| rc.program.pointer(p));
        at.is_some_and(|x| x == rc.id) || d["message"].as_str().is_some_and(|m| m.contains(rc.id))
    });
    c.prose.check(1, reports, format!("no error diagnostic reports the identifier {:?}: {s}", rc.id))
}

/// PIL-VALIDATE-CONTEXT-UNDECLARED-B
pub async fn context_undeclared(c: &mut Ctx<'_>, v: &Vector) -> R {
    if c.lang.get("context_schema").is_some() {
        return Err(Stop::Skip(format!("{} declares a context_schema", c.name())));
    }
    let response = c.call_leaving("validate", c.action(v, &[])?, &["context"]).await?;
    let s = structured(&response).clone();
    c.primary.push(response.clone());
    c.prose.check(0, s["valid"] == false, &s)?;
    let found = errors(&s).iter().any(|d| d["code"] == "context_binding");
    c.prose.check(1, found, &s)?;
    c.prose.check(2, response.get("result").is_some() && !is_error(&response), &response)
}

/// PIL-VALIDATE-CONTEXT-MISSING-B
pub async fn context_missing(c: &mut Ctx<'_>, v: &Vector) -> R {
    if c.lang.get("context_schema").is_none() {
        return Err(Stop::Skip(format!("{} declares no context_schema", c.name())));
    }
    let response = c.call_leaving("validate", c.action(v, &[])?, &["context"]).await?;
    let s = structured(&response).clone();
    c.primary.push(response);
    c.prose.check(0, s["valid"] == false, &s)?;
    c.prose.check(1, errors(&s).iter().any(|d| d["code"] == "context_binding"), &s)
}

/// PIL-VALIDATE-BOUNDS-B
pub async fn bounds(c: &mut Ctx<'_>, v: &Vector) -> R {
    let args = c.action(v, &[])?;
    let started = Instant::now();
    let response = c.call("validate", args).await?;
    let took = started.elapsed();
    c.primary.push(response);
    c.prose.check(0, took < HANG, format!("took {took:?}"))
}

/// PIL-VALIDATE-CONSTRAINT-FALLBACK-B
pub async fn constraint_fallback(c: &mut Ctx<'_>, v: &Vector) -> R {
    let (response, native) = match (&c.binding.unclassifiable, c.binding.tier) {
        (Ok(_), _) => (c.call("validate", c.action(v, &[])?).await?, None),
        (Err(why), Tier::Native) => {
            // Native tier: `constraint` must be enumerated even when unreachable, and an
            // invalid program's findings stay inside the enumerated set.
            ensure!(
                c.enumerated("constraint").await?,
                "the closed-sets guide does not enumerate `constraint`"
            );
            let why = why.to_string();
            (c.call("validate", json!({"program": c.binding.invalid})).await?, Some(why))
        }
        (Err(why), Tier::Adapted) => {
            return Err(Stop::Skip(format!("<unclassifiable-invalid-program> is not constructible: {why}")))
        }
    };
    let s = structured(&response).clone();
    c.primary.push(response);
    c.prose.check(0, s["valid"] == false, &s)?;
    let codes: Vec<String> = s["diagnostics"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| d["code"].as_str())
        .map(str::to_owned)
        .collect();
    for code in &codes {
        let known = c.enumerated(code).await?;
        c.prose.check(1, known, format!("`{code}` is not enumerated in the closed-sets guide"))?;
    }
    match native {
        None => c.prose.check(
            1,
            codes.iter().any(|c| c == "constraint"),
            format!("no `constraint` diagnostic: {s}"),
        ),
        Some(why) => {
            c.prose.notes.push(format!(
                "{why}; `constraint` is enumerated in the closed-sets guide, and every code of <invalid-program> is enumerated"
            ));
            Ok(())
        }
    }
}
