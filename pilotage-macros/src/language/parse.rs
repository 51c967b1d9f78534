//! Syntax of `#[pilotage::language(...)]` and of the `#[loop_tool]` / `#[plain_tool]`
//! attributes inside its impl: keys, value shapes, unknown and duplicate keys. Meaning is
//! checked in [`super::check`].

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Attribute, Expr, ExprLit, Ident, ImplItem, ItemImpl, Lit, LitBool, LitStr, Meta, Token};

use crate::errors::{closest, unknown, Errors};

/// Every key of `#[pilotage::language(...)]`.
pub const KEYS: [&str; 21] = [
    "name",
    "title",
    "program",
    "locator",
    "capabilities",
    "execution",
    "trace",
    "retention",
    "trace_subprogram",
    "promotion_authority",
    "context_schema",
    "context",
    "trace_tool",
    "guides",
    "codes",
    "risk",
    "statuses",
    "kinds",
    "catalog",
    "narrate",
    "tasks",
];

/// A key and its value, with the whole `key = value` for spans.
pub struct Entry<T> {
    /// The key.
    pub key: Ident,
    /// The value.
    pub value: T,
    /// The whole item.
    pub meta: Meta,
}

/// One capability inside `capabilities(...)`, with its sub-features.
pub struct CapItem {
    /// The capability name.
    pub ident: Ident,
    /// Sub-features, as written.
    pub subs: Vec<Ident>,
}

/// The attribute's arguments, each key at most once.
#[derive(Default)]
pub struct Args {
    pub name: Option<Entry<LitStr>>,
    pub title: Option<Entry<LitStr>>,
    pub program: Option<Entry<LitStr>>,
    pub locator: Option<Entry<LitStr>>,
    pub capabilities: Option<Entry<Vec<CapItem>>>,
    pub execution: Option<Entry<LitStr>>,
    pub trace: Option<Entry<LitStr>>,
    pub retention: Option<Entry<LitStr>>,
    pub trace_subprogram: Option<Entry<LitStr>>,
    pub promotion_authority: Option<Entry<LitStr>>,
    pub context_schema: Option<Entry<LitStr>>,
    pub context: Option<Entry<syn::Path>>,
    pub trace_tool: Option<Entry<LitStr>>,
    pub guides: Option<Entry<LitStr>>,
    pub codes: Option<Entry<syn::Path>>,
    pub risk: Option<Entry<syn::Path>>,
    pub statuses: Option<Entry<syn::Path>>,
    pub kinds: Option<Entry<syn::Path>>,
    pub catalog: Option<Entry<Ident>>,
    pub narrate: Option<Entry<Ident>>,
    /// `tasks`: the execute tool answers task-augmented calls (MCP Tasks, beyond Pilotage 1.1).
    pub tasks: Option<Entry<()>>,
    /// Keys that were written (even with a bad value) or that a misspelled key was taken
    /// for: no "missing key" error for them.
    pub mentioned: Vec<&'static str>,
}

/// Example values used in messages.
fn example(key: &str) -> &'static str {
    match key {
        "name" => "name = \"family/v1\"",
        "title" => "title = \"Human-readable title\"",
        "program" => "program = \"workflow\"",
        "locator" => "locator = \"json-pointer\"",
        "execution" => "execution = \"immediate\"",
        "trace" => "trace = \"full\"",
        "retention" => "retention = \"session\"",
        "trace_subprogram" => "trace_subprogram = \"opaque\"",
        "promotion_authority" => "promotion_authority = \"caller\"",
        "context_schema" => "context_schema = \"schemas/context.json\"",
        "context" => "context = MyContext",
        "trace_tool" => "trace_tool = \"trace_family\"",
        "guides" => "guides = \"guides\"",
        "codes" => "codes = MyCodes",
        "risk" => "risk = MyRisk",
        "statuses" => "statuses = MyStatuses",
        "kinds" => "kinds = MyKinds",
        "catalog" => "catalog = catalog_snapshot",
        "narrate" => "narrate = narrate_run",
        "tasks" => "tasks",
        _ => "capabilities(guides, validate)",
    }
}

/// Parse the attribute's arguments.
pub fn parse_args(tokens: TokenStream, errors: &mut Errors) -> Args {
    let mut args = Args::default();
    let Some(items) = errors.handle(Punctuated::<Meta, Token![,]>::parse_terminated.parse2(tokens)) else {
        // A syntax error was reported: do not add "missing key" errors on top of it.
        args.mentioned.extend(KEYS);
        return args;
    };
    for meta in items {
        let Some(key) = meta.path().get_ident().cloned() else {
            errors.spanned(
                meta.path(),
                unknown("key", &meta.path().to_token_stream().to_string().replace(' ', ""), &KEYS),
            );
            continue;
        };
        let k = key.to_string();
        args.mentioned.extend(KEYS.iter().find(|x| **x == k));
        macro_rules! slot {
            ($field:ident, $parse:expr) => {{
                if args.$field.is_some() {
                    errors.spanned(&key, format!("duplicate key `{k}`: give it once"));
                } else if let Some(value) = $parse(&meta, &k, &mut *errors) {
                    args.$field = Some(Entry { key: key.clone(), value, meta: meta.clone() });
                }
            }};
        }
        match k.as_str() {
            "name" => slot!(name, string),
            "title" => slot!(title, string),
            "program" => slot!(program, string),
            "locator" => slot!(locator, string),
            "execution" => slot!(execution, string),
            "trace" => slot!(trace, string),
            "retention" => slot!(retention, string),
            "trace_subprogram" => slot!(trace_subprogram, string),
            "promotion_authority" => slot!(promotion_authority, string),
            "context_schema" => slot!(context_schema, string),
            "context" => slot!(context, type_path),
            "trace_tool" => slot!(trace_tool, string),
            "guides" => slot!(guides, string),
            "codes" => slot!(codes, type_path),
            "risk" => slot!(risk, type_path),
            "statuses" => slot!(statuses, type_path),
            "kinds" => slot!(kinds, type_path),
            "catalog" => slot!(catalog, method),
            "narrate" => slot!(narrate, method),
            "capabilities" => slot!(capabilities, capabilities),
            "tasks" => slot!(tasks, flag),
            _ => {
                args.mentioned.extend(closest(&k, &KEYS));
                errors.spanned(&key, unknown("key", &k, &KEYS));
            }
        }
    }
    args
}

fn flag(meta: &Meta, key: &str, errors: &mut Errors) -> Option<()> {
    match meta {
        Meta::Path(_) => Some(()),
        _ => {
            errors.spanned(meta, format!("`{key}` is a bare flag: write `{}`", example(key)));
            None
        }
    }
}

fn value<'m>(meta: &'m Meta, key: &str, what: &str, errors: &mut Errors) -> Option<&'m Expr> {
    match meta {
        Meta::NameValue(nv) => Some(&nv.value),
        _ => {
            errors.spanned(meta, format!("`{key}` takes {what}: write `{}`", example(key)));
            None
        }
    }
}

fn string(meta: &Meta, key: &str, errors: &mut Errors) -> Option<LitStr> {
    match value(meta, key, "a string", errors)? {
        Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Some(s.clone()),
        other => {
            errors.spanned(other, format!("`{key}` takes a string literal: write `{}`", example(key)));
            None
        }
    }
}

fn type_path(meta: &Meta, key: &str, errors: &mut Errors) -> Option<syn::Path> {
    match value(meta, key, "a type", errors)? {
        Expr::Path(p) if p.qself.is_none() => Some(p.path.clone()),
        other => {
            errors.spanned(
                other,
                format!("`{key}` takes the name of an enum type (not a string): write `{}`", example(key)),
            );
            None
        }
    }
}

fn method(meta: &Meta, key: &str, errors: &mut Errors) -> Option<Ident> {
    match value(meta, key, "a method name", errors)? {
        Expr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => p.path.get_ident().cloned(),
        other => {
            errors.spanned(
                other,
                format!(
                    "`{key}` takes the name of a method of this impl, `fn(&self, caller: &Caller) -> Arc<CatalogSnapshot>`: write `{}`",
                    example(key)
                ),
            );
            None
        }
    }
}

fn capabilities(meta: &Meta, key: &str, errors: &mut Errors) -> Option<Vec<CapItem>> {
    let Meta::List(list) = meta else {
        errors.spanned(meta, format!("`{key}` takes a list: write `capabilities(guides, validate, ...)`"));
        return None;
    };
    let items = errors.handle(list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated))?;
    let mut out = Vec::new();
    for item in items {
        let Some(ident) = item.path().get_ident().cloned() else {
            errors.spanned(item.path(), "expected a capability name such as `validate`");
            continue;
        };
        let subs = match &item {
            Meta::Path(_) => Vec::new(),
            Meta::List(l) => {
                match errors.handle(l.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)) {
                    Some(subs) => subs
                        .into_iter()
                        .filter_map(|s| match s {
                            Meta::Path(p) if p.get_ident().is_some() => p.get_ident().cloned(),
                            other => {
                                errors.spanned(
                                    &other,
                                    format!("a sub-feature is a bare name: write `{ident}(name)`"),
                                );
                                None
                            }
                        })
                        .collect(),
                    None => continue,
                }
            }
            Meta::NameValue(nv) => {
                errors.spanned(
                    nv,
                    format!("a capability is declared by name, not assigned: write `{ident}` or `{ident}(sub_feature, ...)`"),
                );
                continue;
            }
        };
        out.push(CapItem { ident, subs });
    }
    Some(out)
}

/// Which tool attribute a method carries.
pub enum ToolKind {
    /// `#[loop_tool(stage, name = "...")]`.
    Loop {
        /// `validate`, `execute` or `trace`.
        stage: Ident,
        /// `no_input`: the runtime refuses a Run given `input` (execute only).
        no_input: Option<Ident>,
    },
    /// `#[plain_tool(name = "...", description = "...", read_only, input_schema = "...")]`.
    Plain { description: Option<LitStr>, read_only: bool, input_schema: Option<LitStr> },
}

/// One `#[loop_tool]` or `#[plain_tool]` on a method of the impl.
pub struct ToolAttr {
    /// What it declares.
    pub kind: ToolKind,
    /// `name = "..."`.
    pub name: Option<LitStr>,
    /// The whole attribute, for spans.
    pub attr: Attribute,
    /// Index of the method in the impl's items.
    pub item: usize,
    /// Whether an error was reported for the attribute (the tool is then only used to know
    /// which stages are served).
    pub broken: bool,
}

/// A tool attribute taken off an impl item, not parsed yet.
pub struct RawTool {
    /// The attribute.
    pub attr: Attribute,
    /// `#[loop_tool]` (`true`) or `#[plain_tool]`.
    pub is_loop: bool,
    /// Index of the item in the impl's items.
    pub item: usize,
}

/// Whether `attr` is `#[loop_tool]` (`Some(true)`), `#[plain_tool]` (`Some(false)`) or neither.
fn tool_attr_kind(attr: &Attribute) -> Option<bool> {
    match attr.path().segments.last()?.ident.to_string().as_str() {
        "loop_tool" => Some(true),
        "plain_tool" => Some(false),
        _ => None,
    }
}

const LOOP_KEYS: [&str; 5] = ["validate", "execute", "trace", "name", "no_input"];
const PLAIN_KEYS: [&str; 4] = ["name", "description", "read_only", "input_schema"];

/// Take the tool attributes off the impl's items, so the emitted impl no longer has them.
/// They are parsed during the checks, in source order.
pub fn take_tools(item: &mut ItemImpl) -> Vec<RawTool> {
    let mut tools = Vec::new();
    for (index, impl_item) in item.items.iter_mut().enumerate() {
        let attrs = match impl_item {
            ImplItem::Fn(f) => &mut f.attrs,
            ImplItem::Const(c) => &mut c.attrs,
            ImplItem::Type(t) => &mut t.attrs,
            ImplItem::Macro(m) => &mut m.attrs,
            _ => continue,
        };
        let mut kept = Vec::new();
        for attr in attrs.drain(..) {
            match tool_attr_kind(&attr) {
                Some(is_loop) => tools.push(RawTool { attr, is_loop, item: index }),
                None => kept.push(attr),
            }
        }
        *attrs = kept;
    }
    tools
}

/// Parse one tool attribute. `None` when nothing usable is left (not even a stage).
pub fn parse_tool(raw: &RawTool, errors: &mut Errors) -> Option<ToolAttr> {
    let (attr, is_loop, item) = (raw.attr.clone(), raw.is_loop, raw.item);
    let which = if is_loop { "loop_tool" } else { "plain_tool" };
    let usage = if is_loop {
        "#[loop_tool(validate, name = \"validate_family\")]"
    } else {
        "#[plain_tool(name = \"tool_name\", description = \"What it does.\")]"
    };
    let items = match &attr.meta {
        Meta::List(list) => {
            errors.handle(list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated))?
        }
        _ => {
            errors.spanned(&attr, format!("`#[{which}]` needs arguments: write `{usage}`"));
            return None;
        }
    };
    let mut stage: Option<Ident> = None;
    let mut name: Option<LitStr> = None;
    let mut description: Option<LitStr> = None;
    let mut input_schema: Option<LitStr> = None;
    let mut read_only: Option<bool> = None;
    let mut no_input: Option<Ident> = None;
    let mut ok = true;
    for meta in items {
        let Some(key) = meta.path().get_ident().cloned() else {
            errors.spanned(meta.path(), format!("unexpected path in `#[{which}]`: write `{usage}`"));
            ok = false;
            continue;
        };
        let k = key.to_string();
        let keys: &[&str] = if is_loop { &LOOP_KEYS } else { &PLAIN_KEYS };
        match (is_loop, k.as_str()) {
            (true, "validate" | "execute" | "trace") => {
                if !matches!(meta, Meta::Path(_)) {
                    errors.spanned(
                        &meta,
                        format!("the stage is a bare name: write `#[loop_tool({k}, name = \"...\")]`"),
                    );
                    ok = false;
                } else if let Some(first) = &stage {
                    errors.spanned(
                        &key,
                        format!("a loop tool serves one stage, but `{first}` is already given"),
                    );
                    ok = false;
                } else {
                    stage = Some(key);
                }
            }
            (_, "name" | "description" | "input_schema") => {
                let slot = match k.as_str() {
                    "name" => &mut name,
                    "description" => &mut description,
                    _ => &mut input_schema,
                };
                if slot.is_some() {
                    errors.spanned(&key, format!("duplicate key `{k}`: give it once"));
                    ok = false;
                    continue;
                }
                match &meta {
                    Meta::NameValue(syn::MetaNameValue {
                        value: Expr::Lit(ExprLit { lit: Lit::Str(s), .. }),
                        ..
                    }) => *slot = Some(s.clone()),
                    _ => {
                        errors.spanned(&meta, format!("`{k}` takes a string literal: write `{k} = \"...\"`"));
                        ok = false;
                    }
                }
            }
            (true, "no_input") => {
                if !matches!(meta, Meta::Path(_)) {
                    errors.spanned(&meta, "`no_input` is a flag: write `no_input`");
                    ok = false;
                } else if no_input.is_some() {
                    errors.spanned(&key, "duplicate key `no_input`: give it once");
                    ok = false;
                } else {
                    no_input = Some(key);
                }
            }
            (false, "read_only") => {
                if read_only.is_some() {
                    errors.spanned(&key, "duplicate key `read_only`: give it once");
                    ok = false;
                    continue;
                }
                match &meta {
                    Meta::Path(_) => read_only = Some(true),
                    Meta::NameValue(syn::MetaNameValue {
                        value: Expr::Lit(ExprLit { lit: Lit::Bool(LitBool { value, .. }), .. }),
                        ..
                    }) => read_only = Some(*value),
                    _ => {
                        errors.spanned(
                            &meta,
                            "`read_only` is a flag: write `read_only` (or `read_only = false`)",
                        );
                        ok = false;
                    }
                }
            }
            _ => {
                let what = if is_loop { "loop_tool argument" } else { "plain_tool argument" };
                errors.spanned(&key, unknown(what, &k, keys));
                ok = false;
                // A misspelled stage still tells which stage the tool meant to serve.
                if let (true, None, Meta::Path(_), Some(meant)) =
                    (is_loop, &stage, &meta, closest(&k, &["validate", "execute", "trace"]))
                {
                    stage = Some(Ident::new(meant, key.span()));
                }
            }
        }
    }
    let kind = if is_loop {
        let Some(stage) = stage else {
            if !ok {
                return None;
            }
            errors.spanned(
                &attr,
                "name the stage this loop tool serves: `validate`, `execute` or `trace`, e.g. `#[loop_tool(validate, name = \"validate_family\")]`",
            );
            return None;
        };
        if let (Some(flag), false) = (&no_input, stage == "execute") {
            errors.spanned(flag, format!("`no_input` declares that programs take no `input` when they run: it goes on `#[loop_tool(execute, ...)]`, not on `{stage}`"));
            ok = false;
        }
        ToolKind::Loop { stage, no_input }
    } else {
        ToolKind::Plain { description, read_only: read_only.unwrap_or(false), input_schema }
    };
    Some(ToolAttr { kind, name, attr, item, broken: !ok })
}

/// A span for "missing key" errors: the attribute itself.
pub fn attribute_span() -> Span {
    Span::call_site()
}
