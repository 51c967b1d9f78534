//! The promote tool (Part II §3.5): validate the body exactly as validate does, then store it
//! immutably as a catalog entry of the Language's promoted kind, runnable by `program_ref`.

use serde_json::{json, Value};

use super::validate::run_validation;
use super::{str_arg, Ctx, LoopArgs, Reply};
use crate::model::errors::RequestError;
use crate::state::promotions::{Promoted, Promotion};

/// Promote the program in `args` for the caller.
pub(crate) async fn promote(ctx: Ctx<'_>, args: LoopArgs) -> Reply {
    let spec = ctx.lang.spec;
    let Some(kind) = spec.sets.promoted else {
        return Reply::error(RequestError::internal("this Language has no promoted kind"));
    };
    let program = args.program.unwrap_or_else(|| std::sync::Arc::new(Value::Null));
    let snapshot = match ctx.snapshot().await {
        Ok(s) => s,
        Err(e) => return Reply::error(e),
    };
    let verdict = match run_validation(ctx, snapshot.clone(), &program, args.context.as_ref()).await {
        Ok(v) => v,
        Err(e) => return Reply::error(e),
    };
    let (true, Some(plan), Some(snapshot)) = (verdict.valid, verdict.plan.as_ref(), snapshot) else {
        // An invalid program is a result, never an error (Part III §7.1), here as anywhere.
        let n = verdict.diagnostics.len();
        return Reply {
            structured: json!({"promoted": false, "diagnostics": verdict.diagnostics}),
            text: format!("not promoted: the program is invalid ({n} diagnostic(s))"),
            is_error: false,
        };
    };
    let promotion = Promotion {
        kind,
        body: &program,
        plan,
        name: str_arg(&args.rest, "name").unwrap_or_default().to_owned(),
        description: str_arg(&args.rest, "description").map(str::to_owned),
        input_schema: args.rest.get("input_schema").cloned(),
        language: spec.name,
    };
    let promoted = match Promoted::new(promotion, &snapshot) {
        Ok(p) => ctx.session.promote(ctx.index, p, ctx.lang.limits.max_promotions).await,
        Err(e) => return Reply::error(RequestError::invalid(e)),
    };
    match promoted {
        Ok(Some(p)) => {
            let version = ctx.snapshot_now().await.map(|s| s.version().to_owned()).unwrap_or_default();
            Reply {
                text: format!("promoted as {}", p.entry.id),
                structured: json!({"program_ref": p.entry.id, "entry": p.entry, "catalog_version": version}),
                is_error: false,
            }
        }
        Ok(None) => Reply::error(RequestError::new(
            crate::model::errors::ErrorKind::BoundsExceeded,
            format!(
                "you already hold {} promoted programs of {}, the most this server keeps per caller",
                ctx.lang.limits.max_promotions, spec.name
            ),
        )),
        Err(e) => Reply::error(super::store_failed(e)),
    }
}
