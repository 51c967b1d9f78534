//! The methods tools and keys name: a key's method found by name, and a tool method's
//! receiver, asyncness and arity before [`shapes`] judges its types.

use syn::{FnArg, Ident, ImplItem, ImplItemFn, ItemImpl};

use crate::errors::{closest, Errors};
use crate::language::shapes::{self, LoopShape, Names};

/// The method of the impl a key names, or an error at the name with the closest method.
pub(super) fn find_method<'i>(
    item: &'i ItemImpl,
    name: &Ident,
    key: &str,
    errors: &mut Errors,
) -> Option<&'i ImplItemFn> {
    let methods: Vec<&ImplItemFn> =
        item.items.iter().filter_map(|i| if let ImplItem::Fn(f) = i { Some(f) } else { None }).collect();
    if let Some(found) = methods.iter().find(|f| f.sig.ident == *name) {
        return Some(found);
    }
    let names: Vec<String> = methods.iter().map(|f| f.sig.ident.to_string()).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let hint = match closest(&name.to_string(), &names) {
        Some(best) => format!(": did you mean `{best}`?"),
        None => format!(": add the method, or name one of this impl's methods in `{key} = ...`"),
    };
    errors.spanned(name, format!("`{key} = {name}` names no method of this impl{hint}"));
    None
}

/// Receiver, asyncness and arity of a tool method, then its types ([`shapes`]). `stage` is
/// validate, execute, trace or plain. `None` when an error was reported; `Some(None)` for a
/// trace method (its body is never called) and a plain tool (checked by [`shapes::plain`]).
pub(super) fn check_method(
    stage: &str,
    method: &ImplItemFn,
    names: &Names,
    errors: &mut Errors,
) -> Option<Option<LoopShape>> {
    if stage == "trace" {
        return Some(None);
    }
    let sig = &method.sig;
    let m = sig.ident.to_string();
    let shape = match stage {
        "validate" => names.validate_sig(&m, "program", "v"),
        "execute" => names.execute_sig("async ", &m, "program", "run"),
        _ => format!("fn {m}(&self, args: &Json) -> Result<Json, String>"),
    };
    let shape_note = if stage == "plain" {
        " (or typed: `args: MyArgs` with `MyArgs: Deserialize + JsonSchema`; optionally `caller: &Caller` too)"
    } else {
        ""
    };
    let mut ok = true;
    match sig.inputs.first() {
        Some(FnArg::Receiver(r)) => {
            let why = if r.colon_token.is_some() {
                Some("take `&self`, not a typed receiver".to_owned())
            } else if r.reference.is_none() {
                Some("take `&self`, not `self` by value: the engine is shared between requests".to_owned())
            } else if r.mutability.is_some() {
                Some(if stage == "validate" {
                    "the validate method must take `&self`, not `&mut self`: validation is side-effect free (keep caches behind interior mutability)".to_owned()
                } else {
                    "take `&self`, not `&mut self`: the engine is shared between concurrent requests (use interior mutability)".to_owned()
                })
            } else {
                None
            };
            if let Some(why) = why {
                errors.spanned(r, why);
                ok = false;
            }
        }
        _ => {
            errors.spanned(&sig.ident, format!("a tool method takes `&self` first: `{shape}`{shape_note}"));
            return None;
        }
    }
    if stage != "execute" {
        if let Some(a) = &sig.asyncness {
            let what = if stage == "validate" { "the validate method" } else { "a plain tool" };
            errors.spanned(a, format!("{what} is synchronous: remove `async`"));
            ok = false;
        }
    }
    let params = sig.inputs.len() - 1;
    let arity_ok = match stage {
        "plain" => params == 1 || params == 2,
        _ => params == 2,
    };
    if !arity_ok {
        let count = match params {
            0 => "no parameter".to_owned(),
            1 => "1 parameter".to_owned(),
            n => format!("{n} parameters"),
        };
        errors.at(
            sig.paren_token.span.join(),
            format!("this tool method takes {count} after `&self`; expected `{shape}`{shape_note}"),
        );
        return None;
    }
    let shape = match stage {
        "validate" => shapes::validate(method, names, errors),
        "execute" => shapes::execute(method, names, errors),
        _ => return ok.then_some(None),
    };
    match (ok, shape) {
        (true, Some(shape)) => Some(Some(shape)),
        _ => None,
    }
}
