//! The lookup operation (Part II §6.3, Part III §4.2): `list` (pages by binary search; the
//! cursor is the last id served; `q` from the snapshot's index), `get`, and `changed_since`
//! against the caller's history (the changes between the versions it was served, composed).

use serde_json::Value;

use super::{str_arg, Args, Ctx, Reply};
use crate::engine::catalog::CatalogSnapshot;
use crate::model::capabilities::{Capability, SubFeature};
use crate::model::catalog::{CatalogEntry, CatalogGet, CatalogList};
use crate::model::errors::RequestError;

const MEMBERS: [&str; 7] = ["kind", "tag", "q", "cursor", "limit", "id", "catalog_version"];

/// The catalog tool for one Language: eligibility of the verb's members, then the verb.
pub(crate) async fn lookup(ctx: Ctx<'_>, args: &Args) -> Reply {
    let info = ctx.lang;
    if !info.effective.declares(Capability::Catalog) {
        return Reply::error(RequestError::invalid(format!(
            "{} does not declare catalog: its programs use no environment-bound names",
            info.spec.name
        )));
    }
    let snap = match ctx.snapshot_to_look_up().await {
        Ok(snap) => snap,
        Err(e) => return Reply::error(e),
    };
    let verb = str_arg(args, "verb").unwrap_or_default();
    if let Err(e) = members_apply(ctx, verb, args) {
        return Reply::error(e.with_catalog_version(snap.version()));
    }
    match verb {
        "list" => Reply::of(list_off_the_workers(snap, args).await, |v| {
            format!("{} entr{}", v.items.len(), if v.items.len() == 1 { "y" } else { "ies" })
        }),
        "get" => match str_arg(args, "id") {
            None => Reply::error(
                RequestError::invalid("verb `get` requires `id`").with_catalog_version(snap.version()),
            ),
            Some(id) => Reply::of(get(&snap, id), |v| format!("{} ({})", v.entry.id, v.entry.kind)),
        },
        _ => Reply::of(changed_since(ctx, &snap, args).await, |v| format!("{} change(s)", v.changes.len())),
    }
}

/// [`list`], on the blocking pool when a `q` is given: the first `q` of a snapshot builds its
/// index (seconds for a million entries) and a short one scans every entry, CPU work that must
/// not hold an async worker.
async fn list_off_the_workers(
    snap: std::sync::Arc<CatalogSnapshot>,
    args: &Args,
) -> Result<CatalogList, RequestError> {
    if !args.contains_key("q") {
        return list(&snap, &query(args));
    }
    let args = args.clone();
    tokio::task::spawn_blocking(move || list(&snap, &query(&args)))
        .await
        .unwrap_or_else(|_| Err(RequestError::internal("the catalog listing failed")))
}

/// Refuse a member the verb (or the declared sub-features) does not take.
fn members_apply(ctx: Ctx<'_>, verb: &str, args: &Args) -> Result<(), RequestError> {
    let info = ctx.lang;
    let allowed: &[&str] = match verb {
        "list" if info.effective.declares_sub(SubFeature::Search) => &["kind", "tag", "q", "cursor", "limit"],
        "list" => &["kind", "tag", "cursor", "limit"],
        "get" => &["id"],
        _ => &["catalog_version"],
    };
    let Some(m) = MEMBERS.iter().find(|m| args.contains_key(**m) && !allowed.contains(m)) else {
        return Ok(());
    };
    Err(RequestError::invalid(if *m == "q" && verb == "list" {
        format!(
            "{} does not declare catalog.search: filter with `kind` or `tag` instead of `q`",
            info.spec.name
        )
    } else {
        format!("`{m}` does not apply to verb `{verb}` (it takes: {})", allowed.join(", "))
    }))
}

fn query(args: &Args) -> ListQuery<'_> {
    ListQuery {
        kind: str_arg(args, "kind"),
        tag: str_arg(args, "tag"),
        q: str_arg(args, "q"),
        cursor: str_arg(args, "cursor"),
        limit: args.get("limit").and_then(Value::as_u64).map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
    }
}

/// `changed_since`, from the caller's history of served snapshots.
async fn changed_since(
    ctx: Ctx<'_>,
    snap: &std::sync::Arc<CatalogSnapshot>,
    args: &Args,
) -> Result<crate::model::catalog::CatalogChanges, RequestError> {
    let info = ctx.lang;
    if !info.effective.declares_sub(SubFeature::ChangedSince) {
        return Err(RequestError::invalid(format!(
            "{} does not declare catalog.changed_since: use verb `list` and compare catalog_version",
            info.spec.name
        ))
        .with_catalog_version(snap.version()));
    }
    let Some(since) = str_arg(args, "catalog_version") else {
        return Err(RequestError::invalid("verb `changed_since` requires `catalog_version`")
            .with_catalog_version(snap.version()));
    };
    let changes =
        ctx.session.changes_since(ctx.index, since, snap).await.map_err(crate::ops::store_failed)?;
    crate::state::catalog_history::answer(changes, snap)
}

/// The largest page `list` serves.
pub(crate) const MAX_PAGE: usize = 100;

/// The `list` filters.
#[derive(Clone, Debug, Default)]
pub(crate) struct ListQuery<'a> {
    /// Only this kind.
    pub kind: Option<&'a str>,
    /// Only entries with this tag.
    pub tag: Option<&'a str>,
    /// Free text (only when `catalog.search` is declared).
    pub q: Option<&'a str>,
    /// Opaque cursor from a previous page.
    pub cursor: Option<&'a str>,
    /// Page size (capped at [`MAX_PAGE`]).
    pub limit: Option<usize>,
}

/// The `kind` and `tag` filters (`q` is answered by [`CatalogSnapshot::matching`]).
fn matches(e: &CatalogEntry, q: &ListQuery<'_>) -> bool {
    q.kind.is_none_or(|k| e.kind == k) && q.tag.is_none_or(|t| e.tags.iter().any(|x| x == t))
}

const CURSOR_PREFIX: &str = "after:";

/// `list`: one page of the snapshot.
pub(crate) fn list(snapshot: &CatalogSnapshot, query: &ListQuery<'_>) -> Result<CatalogList, RequestError> {
    let start = match query.cursor {
        None => 0,
        Some(c) => {
            let Some(after) = c.strip_prefix(CURSOR_PREFIX) else {
                return Err(RequestError::invalid("unknown cursor: pass `next_cursor` back unchanged")
                    .with_catalog_version(snapshot.version()));
            };
            snapshot.entries().partition_point(|e| e.id.as_str() <= after)
        }
    };
    let limit = query.limit.unwrap_or(MAX_PAGE).clamp(1, MAX_PAGE);
    let mut items = Vec::with_capacity(limit.min(16));
    let mut next_cursor = None;
    for e in snapshot.matching(query.q, start).filter(|e| matches(e, query)) {
        if items.len() == limit {
            if let Some(last) = items.last() {
                let last: &CatalogEntry = last;
                next_cursor = Some(format!("{CURSOR_PREFIX}{}", last.id));
            }
            break;
        }
        items.push(e.clone());
    }
    Ok(CatalogList { items, next_cursor, catalog_version: snapshot.version().to_owned() })
}

/// `get`: one entry, or `not_found` that still carries the token.
pub(crate) fn get(snapshot: &CatalogSnapshot, id: &str) -> Result<CatalogGet, RequestError> {
    match snapshot.get(id) {
        Some(e) => Ok(CatalogGet { entry: e.clone(), catalog_version: snapshot.version().to_owned() }),
        None => Err(RequestError::not_found(format!("unknown catalog entry '{id}'"))
            .with_catalog_version(snapshot.version())),
    }
}
