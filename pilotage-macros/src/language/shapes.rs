//! Method shapes: the signatures of the loop tools, the plain tools and the wired methods
//! (`catalog = ...`, `narrate = ...`). What the signature says is checked here, each mistake
//! once, at the user's own token, with the expected signature written in the declaration's own
//! type names (`Validation<TodoCode, TodoRisk>`, `Run<TodoStatus>`). What only rustc can decide
//! (a type alias, say) is left to the generated glue, which is spanned at the same tokens.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{FnArg, GenericArgument, Ident, ImplItemFn, Pat, PathArguments, ReturnType, Type};

use crate::errors::Errors;

/// The declaration's closed-set types, as the user wrote them.
pub struct Names {
    /// `codes = ...`, when given.
    pub codes: Option<syn::Path>,
    /// `risk = ...`, when given.
    pub risk: Option<syn::Path>,
    /// `statuses = ...`, when given.
    pub statuses: Option<syn::Path>,
}

impl Names {
    /// `Validation<Codes, Risk>` in the user's names.
    pub fn validation(&self) -> String {
        let codes = self.codes.as_ref().map_or("MyCodes".to_owned(), show);
        let risk = self.risk.as_ref().map_or("MyRisk".to_owned(), show);
        format!("Validation<{codes}, {risk}>")
    }

    /// `Run<Statuses>`, or `Run` without `statuses`.
    pub fn run(&self) -> String {
        self.generic("Run")
    }

    /// `Finish<Statuses>`, or `Finish` without `statuses`.
    pub fn finish(&self) -> String {
        self.generic("Finish")
    }

    fn generic(&self, ty: &str) -> String {
        match &self.statuses {
            Some(s) => format!("{ty}<{}>", show(s)),
            None => ty.to_owned(),
        }
    }

    /// The validate method's signature.
    pub fn validate_sig(&self, method: &str, program: &str, sink: &str) -> String {
        format!("fn {method}(&self, {program}: &Json, {sink}: &mut {})", self.validation())
    }

    /// The execute method's signature.
    pub fn execute_sig(&self, asyncness: &str, method: &str, program: &str, sink: &str) -> String {
        format!(
            "{asyncness}fn {method}(&self, {program}: &Json, {sink}: &mut {}) -> {}",
            self.run(),
            self.finish()
        )
    }
}

/// Tokens as written, without the spaces `to_string` puts between them.
pub fn show(tokens: impl ToTokens) -> String {
    let text = tokens.to_token_stream().to_string();
    let mut out = String::new();
    for part in text.split(' ') {
        let glue = matches!(part, "<" | ">" | "," | "::" | ")") || out.ends_with(['<', '&', ':', '(']);
        if !out.is_empty() && !glue {
            out.push(' ');
        }
        out.push_str(part);
    }
    out
}

/// The last path segment of a type and its generic type arguments.
fn last(ty: &Type) -> Option<(&Ident, Vec<&Type>, &PathArguments)> {
    let Type::Path(p) = ty else { return None };
    let seg = p.path.segments.last()?;
    let args = match &seg.arguments {
        PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|g| match g {
                GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    Some((&seg.ident, args, &seg.arguments))
}

/// Whether the last segment of `ty` is one of `names`.
fn named(ty: &Type, names: &[&str]) -> bool {
    last(ty).is_some_and(|(i, ..)| names.iter().any(|n| i == n))
}

/// Whether `ty` names `path` (compared by last segment: `crate::Code` is `Code`).
fn same(ty: &Type, path: &syn::Path) -> bool {
    match (last(ty), path.segments.last()) {
        (Some((i, ..)), Some(seg)) => *i == seg.ident,
        _ => false,
    }
}

/// `(mutable, referent)` of a reference type.
fn reference(ty: &Type) -> Option<(bool, &Type)> {
    match ty {
        Type::Reference(r) => Some((r.mutability.is_some(), &r.elem)),
        _ => None,
    }
}

fn is_json(ty: &Type) -> bool {
    named(ty, &["Json", "Value"])
}

/// The typed parameters after the receiver: (name as written, type).
fn params(method: &ImplItemFn) -> Vec<(String, &Type)> {
    method
        .sig
        .inputs
        .iter()
        .filter_map(|a| match a {
            FnArg::Typed(t) => Some(t),
            FnArg::Receiver(_) => None,
        })
        .map(|t| {
            let name = match &*t.pat {
                Pat::Ident(i) => i.ident.to_string().trim_start_matches('_').to_owned(),
                _ => String::new(),
            };
            (name, &*t.ty)
        })
        .collect()
}

fn or(name: &str, default: &str) -> String {
    if name.is_empty() {
        default.to_owned()
    } else {
        name.to_owned()
    }
}

/// The span of a missing return type: the signature's closing parenthesis.
fn no_return_span(method: &ImplItemFn) -> Span {
    method.sig.paren_token.span.close()
}

/// The written return type, or an error at the closing parenthesis saying what to add.
fn returned<'m>(method: &'m ImplItemFn, missing: String, errors: &mut Errors) -> Option<&'m Type> {
    match &method.sig.output {
        ReturnType::Default => {
            errors.at(no_return_span(method), missing);
            None
        }
        ReturnType::Type(_, ty) => Some(ty),
    }
}

/// What a loop method's glue needs: the program's and the sink's types, and the return type.
pub struct LoopShape {
    pub program: Type,
    pub sink: Type,
    pub ret: Option<Type>,
}

/// The program parameter of a loop method: whether it is usable.
fn program_param(name: &str, ty: &Type, sig: &str, errors: &mut Errors) -> bool {
    let name = or(name, "program");
    let why = match reference(ty) {
        Some((true, _)) => "the program is read, never changed: take it by shared reference",
        Some((false, inner)) if named(inner, &["str", "String"]) => {
            "the program arrives as JSON, not text (a `text-range` program is a JSON string: read it with `.as_str()`)"
        }
        Some(_) => return true,
        None => "take the program by reference (the runtime keeps it for the trace)",
    };
    errors.spanned(ty, format!("{why}: `{name}: &Json`, as in `{sig}`"));
    false
}

/// A sink parameter (`Validation` or `Run`) given as `&mut X`: `X` when it is, after reporting.
fn sink_param<'t>(
    name: &str,
    ty: &'t Type,
    expected: &str,
    sig: &str,
    errors: &mut Errors,
) -> Option<&'t Type> {
    match reference(ty) {
        Some((true, inner)) => Some(inner),
        _ => {
            errors.spanned(
                ty,
                format!("take `{name}: &mut {expected}`: the runtime lends it for the call, as in `{sig}`"),
            );
            None
        }
    }
}

/// Two parameters in the wrong order: one error over both.
fn swapped(method: &ImplItemFn, first: &Type, second: &Type, sig: &str, errors: &mut Errors) -> bool {
    let sink_first = named(reference(first).map_or(first, |r| r.1), &["Validation", "Run"]);
    let program_second = reference(second).is_some_and(|r| is_json(r.1));
    if sink_first && program_second {
        let both: TokenStream = method.sig.inputs.iter().skip(1).map(ToTokens::to_token_stream).collect();
        errors.spanned(both, format!("the program comes first, then the sink: `{sig}`"));
    }
    sink_first && program_second
}

/// The validate method: `fn(&self, program: &Json, v: &mut Validation<Codes, Risk>)`.
pub fn validate(method: &ImplItemFn, names: &Names, errors: &mut Errors) -> Option<LoopShape> {
    let ps = params(method);
    let [(program, program_ty), (sink, sink_ty)] = ps.as_slice() else { return None };
    let m = method.sig.ident.to_string();
    let sink = or(sink, "v");
    let sig = names.validate_sig(&m, &or(program, "program"), &sink);
    if swapped(
        method,
        program_ty,
        sink_ty,
        &names.validate_sig(&m, &or(sink.as_str(), "program"), &or(program, "v")),
        errors,
    ) {
        return None;
    }
    let mut ok = program_param(program, program_ty, &sig, errors);
    let expected = names.validation();
    if let Some(inner) = sink_param(&sink, sink_ty, &expected, &sig, errors) {
        ok &= validation_type(inner, names, &sink, &sig, errors);
    } else {
        ok = false;
    }
    match &method.sig.output {
        ReturnType::Type(_, ty) if !matches!(&**ty, Type::Tuple(t) if t.elems.is_empty()) => {
            errors.spanned(
                ty,
                format!(
                    "a validate method reports its findings through `{sink}` and returns nothing; a `{}` returned here would be discarded and every program would pass: remove `-> {}` and call `{sink}.error(code, locator, message)` for each finding",
                    show(ty),
                    show(ty)
                ),
            );
            ok = false;
        }
        _ => {}
    }
    ok.then(|| LoopShape { program: (*program_ty).clone(), sink: (*sink_ty).clone(), ret: None })
}

/// `Validation<Codes, Risk>` against the declared sets.
fn validation_type(inner: &Type, names: &Names, sink: &str, sig: &str, errors: &mut Errors) -> bool {
    let Some((ident, args, generics)) = last(inner) else { return true };
    if ident == "Run" {
        errors.spanned(inner, format!("a validate method fills a `Validation`, not a `Run`: `{sig}`"));
        return false;
    }
    if ident != "Validation" {
        return true; // an alias: rustc decides, at this type
    }
    let (Some(codes), Some(risk)) = (&names.codes, &names.risk) else { return true };
    match args.as_slice() {
        [a, b] if same(a, codes) && same(b, risk) => true,
        [a, b] if same(a, risk) && same(b, codes) => {
            errors.spanned(
                generics,
                format!(
                    "`Validation` takes the diagnostic codes first, then the risk levels: write `{sink}: &mut {}`",
                    names.validation()
                ),
            );
            false
        }
        _ => {
            errors.spanned(
                inner,
                format!(
                    "this Language declares `codes = {}` and `risk = {}`: take `{sink}: &mut {}`",
                    show(codes),
                    show(risk),
                    names.validation()
                ),
            );
            false
        }
    }
}

/// The execute method: `async fn(&self, program: &Json, run: &mut Run<S>) -> Finish<S>`.
pub fn execute(method: &ImplItemFn, names: &Names, errors: &mut Errors) -> Option<LoopShape> {
    let ps = params(method);
    let [(program, program_ty), (sink, sink_ty)] = ps.as_slice() else { return None };
    let m = method.sig.ident.to_string();
    let asyncness = if method.sig.asyncness.is_some() { "async " } else { "" };
    let sink = or(sink, "run");
    let sig = names.execute_sig(asyncness, &m, &or(program, "program"), &sink);
    let swapped_sig = names.execute_sig(asyncness, &m, &or(sink.as_str(), "program"), &or(program, "run"));
    if swapped(method, program_ty, sink_ty, &swapped_sig, errors) {
        return None;
    }
    let mut ok = program_param(program, program_ty, &sig, errors);
    // A statuses mismatch shows in both `Run` and `Finish`: reported once, at `Run`.
    let mut statuses_reported = false;
    match sink_param(&sink, sink_ty, &names.run(), &sig, errors) {
        Some(inner) => match last(inner) {
            Some((i, _, _)) if i == "Validation" => {
                errors.spanned(
                    inner,
                    format!("an execute method records a `Run`, not a `Validation`: `{sig}`"),
                );
                ok = false;
            }
            Some((i, args, _)) if i == "Run" => {
                if let Some(why) = statuses_mismatch(inner, &args, names) {
                    errors.spanned(
                        inner,
                        format!("{why}: take `{sink}: &mut {}` and return `{}`", names.run(), names.finish()),
                    );
                    statuses_reported = true;
                    ok = false;
                }
            }
            _ => {}
        },
        None => ok = false,
    }
    let finish = names.finish();
    let ret = returned(
        method,
        format!("an execute method returns how the run ended: add `-> {finish}` and end with `Finish::done()`, `Finish::output(value)` or `Finish::error(message)`"),
        errors,
    )?;
    match last(ret) {
        _ if matches!(ret, Type::Tuple(t) if t.elems.is_empty()) => {
            errors.spanned(ret, format!("an execute method returns how the run ended: write `-> {finish}` and end with `Finish::done()`"));
            ok = false;
        }
        Some((i, ..)) if i == "Result" || i == "Option" => {
            let instead = if i == "Result" { "`Err(e)`" } else { "`None`" };
            errors.spanned(
                ret,
                format!(
                    "an execute method returns `{finish}`, not a `{i}`: a failed run is a finish too; write `-> {finish}` and return `Finish::error(message)` where you returned {instead}"
                ),
            );
            ok = false;
        }
        Some((i, args, _)) if i == "Finish" && !statuses_reported => {
            if let Some(why) = statuses_mismatch(ret, &args, names) {
                errors.spanned(
                    ret,
                    format!("{why}: return `{finish}` and take `{sink}: &mut {}`", names.run()),
                );
                ok = false;
            }
        }
        _ => {}
    }
    ok.then(|| LoopShape { program: (*program_ty).clone(), sink: (*sink_ty).clone(), ret: Some(ret.clone()) })
}

/// Why `Run<..>` / `Finish<..>` as written disagrees with `statuses = ...`; the caller appends
/// the fix.
fn statuses_mismatch(ty: &Type, args: &[&Type], names: &Names) -> Option<String> {
    match (args, &names.statuses) {
        ([], None) => None,
        ([], Some(s)) => Some(format!("this Language declares `statuses = {}`, but `{}` records none", show(s), show(ty))),
        ([a], None) => Some(format!(
            "`{}` records engine-defined statuses, but this Language declares no `statuses`: add `statuses = {}` to #[pilotage::language(...)], or drop the statuses",
            show(ty),
            show(a)
        )),
        ([a], Some(s)) if same(a, s) => None,
        (_, Some(s)) => Some(format!("this Language declares `statuses = {}`, not `{}`", show(s), show(ty))),
        (_, None) => Some(format!("`{}` takes at most one status type", show(ty))),
    }
}

/// A plain tool's parameter after `&self`.
#[derive(Clone)]
pub enum PlainParam {
    /// `caller: &Caller`.
    Caller,
    /// The raw `args: &Json`.
    Json,
    /// Typed arguments, read from JSON.
    Typed(Box<Type>),
}

/// A plain tool's shape.
pub struct PlainShape {
    pub params: Vec<PlainParam>,
    /// `Result<O, E>` as written.
    pub ret: Type,
    /// `O` when it is not JSON: the tool advertises its `outputSchema`.
    pub output: Option<Type>,
}

const PLAIN_RAW: &str = "fn tool(&self, args: &Json) -> Result<Json, String>";
const PLAIN_TYPED: &str = "fn tool(&self, caller: &Caller, args: MyArgs) -> Result<MyOut, MyError>";

/// A plain tool: `fn(&self, [caller: &Caller,] args: MyArgs) -> Result<MyOut, MyError>` with
/// `MyArgs: Deserialize + JsonSchema`, or the raw `args: &Json`, in either order.
pub fn plain(method: &ImplItemFn, errors: &mut Errors) -> Option<PlainShape> {
    let mut ok = true;
    let mut out = Vec::new();
    for (name, ty) in params(method) {
        let param = match reference(ty) {
            Some((false, inner)) if named(inner, &["Caller"]) => PlainParam::Caller,
            Some((false, inner)) if is_json(inner) => PlainParam::Json,
            Some((mutable, inner)) => {
                let why = if mutable {
                    "a plain tool's arguments are read, never changed"
                } else {
                    "typed arguments are read into a value"
                };
                errors.spanned(ty, format!("{why}: take `{}: {}` by value (a type with `Deserialize` and `JsonSchema`), or the raw `{}: &Json`", or(&name, "args"), show(inner), or(&name, "args")));
                ok = false;
                continue;
            }
            None if named(ty, &["Caller"]) => {
                errors
                    .spanned(ty, format!("take the caller by reference: `{}: &Caller`", or(&name, "caller")));
                ok = false;
                continue;
            }
            None => PlainParam::Typed(Box::new(ty.clone())),
        };
        let twice = |p: &PlainParam| {
            matches!((p, &param), (PlainParam::Caller, PlainParam::Caller))
                || (!matches!(p, PlainParam::Caller) && !matches!(param, PlainParam::Caller))
        };
        if out.iter().any(twice) {
            let what = if matches!(param, PlainParam::Caller) { "the caller" } else { "the arguments" };
            errors.spanned(
                ty,
                format!("a plain tool takes {what} once: `{PLAIN_TYPED}` (or the raw `{PLAIN_RAW}`)"),
            );
            ok = false;
            continue;
        }
        out.push(param);
    }
    let ret = match &method.sig.output {
        ReturnType::Type(_, ty) if !matches!(&**ty, Type::Tuple(t) if t.elems.is_empty()) => ty,
        _ => {
            let span = match &method.sig.output {
                ReturnType::Type(_, ty) => ty.span(),
                ReturnType::Default => no_return_span(method),
            };
            errors.at(span, "a plain tool answers a `Result`: add `-> Result<Json, String>` (or a typed `-> Result<MyOut, MyError>` with `MyOut: Serialize + JsonSchema`, `MyError: Display`)");
            return None;
        }
    };
    let output = match last(ret) {
        Some((i, args, _)) if i == "Result" => args.first().filter(|o| !is_json(o)).map(|o| (*o).clone()),
        _ => {
            errors.spanned(ret, format!("a plain tool answers a `Result`: write `-> Result<{}, String>` and return `Err(message)` when it fails", show(ret)));
            return None;
        }
    };
    ok.then(|| PlainShape { params: out, ret: (**ret).clone(), output })
}

/// The catalog method: `fn(&self, caller: &Caller) -> Arc<CatalogSnapshot>`. `Some(return
/// type)` when usable.
pub fn catalog(method: &ImplItemFn, errors: &mut Errors) -> Option<Type> {
    let m = &method.sig.ident;
    let sig = format!("fn {m}(&self, caller: &Caller) -> Arc<CatalogSnapshot>");
    if !receiver(method, &sig, errors) {
        return None;
    }
    if let Some(a) = &method.sig.asyncness {
        errors.spanned(a, format!("the catalog method is synchronous (cache the snapshot): `{sig}`"));
        return None;
    }
    let ps = params(method);
    if ps.len() != 1 {
        errors
            .at(method.sig.paren_token.span.join(), format!("the catalog method takes the caller: `{sig}`"));
        return None;
    }
    let ret = returned(method, format!("the catalog method returns the caller's snapshot: `{sig}`"), errors)?;
    let why = match last(ret) {
        Some((i, ..)) if i == "Option" => "with the `catalog` capability there is always a snapshot (an empty one when the caller sees nothing)",
        Some((i, ..)) if i == "CatalogSnapshot" => "snapshots are shared: keep one in an `Arc` and hand out clones",
        Some((i, args, _)) if i == "Arc" && !args.first().is_some_and(|a| named(a, &["CatalogSnapshot"])) => {
            "the catalog method returns the caller's snapshot"
        }
        _ => return Some(ret.clone()),
    };
    errors.spanned(ret, format!("{why}: return `Arc<CatalogSnapshot>`, as in `{sig}`"));
    None
}

/// `&self` first.
fn receiver(method: &ImplItemFn, sig: &str, errors: &mut Errors) -> bool {
    match method.sig.inputs.first() {
        Some(FnArg::Receiver(r))
            if r.reference.is_some() && r.mutability.is_none() && r.colon_token.is_none() =>
        {
            true
        }
        Some(FnArg::Receiver(r)) => {
            errors.spanned(r, format!("take `&self`: `{sig}`"));
            false
        }
        _ => {
            errors.spanned(&method.sig.ident, format!("take `&self` first: `{sig}`"));
            false
        }
    }
}

/// The loop stage a method's parameters say it serves: `validate` with a `Validation` sink,
/// `execute` with a `Run`.
pub fn stage_of_shape(method: &ImplItemFn) -> Option<&'static str> {
    params(method).iter().find_map(|(_, ty)| {
        let ty = reference(ty).map_or(*ty, |(_, t)| t);
        if named(ty, &["Validation"]) {
            Some("validate")
        } else {
            named(ty, &["Run"]).then_some("execute")
        }
    })
}

/// Swap `Validation<Risk, Codes>` back in the emitted impl when that was reported, so the
/// method's own signature adds no "trait bound not satisfied" errors to the one reported.
pub fn repair(method: &mut ImplItemFn, names: &Names) {
    let (Some(codes), Some(risk)) = (&names.codes, &names.risk) else { return };
    for input in method.sig.inputs.iter_mut() {
        let FnArg::Typed(t) = input else { continue };
        let Type::Reference(r) = &mut *t.ty else { continue };
        let Type::Path(p) = &mut *r.elem else { continue };
        let Some(seg) = p.path.segments.last_mut() else { continue };
        if seg.ident != "Validation" {
            continue;
        }
        if let PathArguments::AngleBracketed(a) = &mut seg.arguments {
            let types: Vec<&Type> = a
                .args
                .iter()
                .filter_map(|g| match g {
                    GenericArgument::Type(t) => Some(t),
                    _ => None,
                })
                .collect();
            if let [x, y] = types.as_slice() {
                if same(x, risk) && same(y, codes) {
                    let (x, y) = ((*x).clone(), (*y).clone());
                    a.args = syn::parse_quote!(#y, #x);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_types_as_written() {
        let ty: Type = syn::parse_quote!(&mut Validation<TodoRisk, TodoCode>);
        assert_eq!(show(&ty), "&mut Validation<TodoRisk, TodoCode>");
        let ty: Type = syn::parse_quote!(Option<std::sync::Arc<CatalogSnapshot>>);
        assert_eq!(show(&ty), "Option<std::sync::Arc<CatalogSnapshot>>");
        let ty: Type = syn::parse_quote!(Result<(), &'static str>);
        assert_eq!(show(&ty), "Result<(), &'static str>");
    }

    #[test]
    fn names_without_statuses_are_no_placeholders() {
        let names = Names {
            codes: Some(syn::parse_quote!(TodoCode)),
            risk: Some(syn::parse_quote!(TodoRisk)),
            statuses: None,
        };
        assert_eq!(
            names.execute_sig("async ", "run", "todo", "run"),
            "async fn run(&self, todo: &Json, run: &mut Run) -> Finish"
        );
        assert_eq!(
            names.validate_sig("validate", "todo", "v"),
            "fn validate(&self, todo: &Json, v: &mut Validation<TodoCode, TodoRisk>)"
        );
        let names = Names { statuses: Some(syn::parse_quote!(TodoStatus)), ..names };
        assert_eq!(names.run(), "Run<TodoStatus>");
    }
}
