//! Syntax of `#[pilotage::language(...)]` and of the `#[loop_tool]` / `#[plain_tool]`
//! attributes inside its impl: keys, value shapes, unknown and duplicate keys. Meaning is
//! checked in [`super::check`].

use darling::FromMeta;
use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::punctuated::Punctuated;
use syn::{Attribute, Expr, ExprLit, Ident, ImplItem, ItemImpl, Lit, LitBool, LitStr, Meta, Token};

use crate::errors::{closest, unknown, Errors};
pub use crate::meta::Entry;
use crate::meta::{once, Read, Rest, Value};

/// The grammar of `#[pilotage::language(...)]`, declared once (each key with its value type and
/// an example): darling's struct of written keys ([`Written`]), [`KEYS`] and `example` for
/// messages, and [`Args`] with each key at most once.
macro_rules! grammar {
    ($($key:ident: $ty:ty = $example:literal,)*) => {
        /// The keys as written, each as often as it was written.
        #[derive(FromMeta)]
        struct Written {
            $(#[darling(multiple)] $key: Vec<Value<$ty>>,)*
            /// Keys that are not in the grammar.
            #[darling(flatten)]
            rest: Rest,
        }

        /// Every key of `#[pilotage::language(...)]`.
        pub const KEYS: &[&str] = &[$(stringify!($key)),*];

        /// The attribute's arguments, each key at most once.
        #[derive(Default)]
        pub struct Args {
            $(pub $key: Option<Entry<$ty>>,)*
            /// Keys that were written (even with a bad value) or that a misspelled key was
            /// taken for: no "missing key" error for them.
            pub mentioned: Vec<&'static str>,
            /// Unknown keys not close to any key, reported by the checks: one may be a missing
            /// required key under another name.
            pub unmatched: Vec<Meta>,
        }

        /// The key written with an example value, for messages.
        fn example(key: &Ident) -> &'static str {
            match key.to_string().as_str() {
                $(stringify!($key) => $example,)*
                _ => "",
            }
        }

        impl Written {
            /// Each key's first well-formed value, reporting the others; then the unknown keys.
            fn settle(self, errors: &mut Errors) -> Args {
                let mut mentioned = Vec::new();
                $(
                    if !self.$key.is_empty() {
                        mentioned.push(stringify!($key));
                    }
                    let $key = once(self.$key, errors);
                )*
                let mut unmatched = Vec::new();
                for meta in self.rest.0 {
                    match meta.path().get_ident().and_then(|k| closest(&k.to_string(), KEYS)) {
                        Some(_) => mentioned.extend(unknown_key(&meta, errors)),
                        None => unmatched.push(meta),
                    }
                }
                Args { $($key,)* mentioned, unmatched }
            }
        }
    };
}

grammar! {
    name: LitStr = "name = \"family/v1\"",
    title: LitStr = "title = \"Human-readable title\"",
    program: LitStr = "program = \"workflow\"",
    locator: LitStr = "locator = \"json-pointer\"",
    capabilities: Vec<CapItem> = "capabilities(guides, validate)",
    execution: LitStr = "execution = \"immediate\"",
    trace: LitStr = "trace = \"full\"",
    retention: LitStr = "retention = \"session\"",
    trace_subprogram: LitStr = "trace_subprogram = \"opaque\"",
    promotion_authority: LitStr = "promotion_authority = \"caller\"",
    context_schema: LitStr = "context_schema = \"schemas/context.json\"",
    context: syn::Path = "context = MyContext",
    trace_tool: LitStr = "trace_tool = \"trace_family\"",
    guides: LitStr = "guides = \"guides\"",
    codes: syn::Path = "codes = MyCodes",
    risk: syn::Path = "risk = MyRisk",
    statuses: syn::Path = "statuses = MyStatuses",
    kinds: syn::Path = "kinds = MyKinds",
    catalog: Ident = "catalog = catalog_snapshot",
    narrate: Ident = "narrate = narrate_run",
    tasks: () = "tasks",
}

/// One capability inside `capabilities(...)`, with its sub-features.
pub struct CapItem {
    /// The capability name.
    pub ident: Ident,
    /// Sub-features, as written.
    pub subs: Vec<Ident>,
}

/// Parse the attribute's arguments.
pub fn parse_args(tokens: TokenStream, errors: &mut Errors) -> Args {
    match crate::meta::read::<Written>(tokens, errors) {
        Some(written) => written.settle(errors),
        // A syntax error was reported: do not add "missing key" errors on top of it.
        None => Args { mentioned: KEYS.to_vec(), ..Args::default() },
    }
}

/// Report a key that is not in the grammar; the key it was likely meant as, if any.
pub fn unknown_key(meta: &Meta, errors: &mut Errors) -> Option<&'static str> {
    let path = meta.path().to_token_stream().to_string().replace(' ', "");
    errors.spanned(meta.path(), unknown("key", &path, KEYS));
    meta.path().get_ident().and(closest(&path, KEYS))
}

fn value<'m>(meta: &'m Meta, key: &Ident, what: &str, errors: &mut Errors) -> Option<&'m Expr> {
    match meta {
        Meta::NameValue(nv) => Some(&nv.value),
        _ => {
            errors.spanned(meta, format!("`{key}` takes {what}: write `{}`", example(key)));
            None
        }
    }
}

/// A bare flag (`tasks`: the execute tool answers task-augmented calls, MCP Tasks, beyond
/// Pilotage 1.1).
impl Read for () {
    fn read(meta: &Meta, key: &Ident, errors: &mut Errors) -> Option<Self> {
        match meta {
            Meta::Path(_) => Some(()),
            _ => {
                errors.spanned(meta, format!("`{key}` is a bare flag: write `{}`", example(key)));
                None
            }
        }
    }
}

impl Read for LitStr {
    fn read(meta: &Meta, key: &Ident, errors: &mut Errors) -> Option<Self> {
        match value(meta, key, "a string", errors)? {
            Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Some(s.clone()),
            other => {
                errors.spanned(other, format!("`{key}` takes a string literal: write `{}`", example(key)));
                None
            }
        }
    }
}

impl Read for syn::Path {
    fn read(meta: &Meta, key: &Ident, errors: &mut Errors) -> Option<Self> {
        match value(meta, key, "a type", errors)? {
            Expr::Path(p) if p.qself.is_none() => Some(p.path.clone()),
            other => {
                errors.spanned(
                    other,
                    format!(
                        "`{key}` takes the name of an enum type (not a string): write `{}`",
                        example(key)
                    ),
                );
                None
            }
        }
    }
}

impl Read for Ident {
    fn read(meta: &Meta, key: &Ident, errors: &mut Errors) -> Option<Self> {
        let expr = value(meta, key, "a method name", errors)?;
        let ident = match expr {
            Expr::Path(p) if p.qself.is_none() => p.path.get_ident(),
            _ => None,
        };
        if ident.is_none() {
            errors.spanned(
                expr,
                format!(
                    "`{key}` takes the name of a method of this impl, `fn(&self, caller: &Caller) -> Arc<CatalogSnapshot>`: write `{}`",
                    example(key)
                ),
            );
        }
        ident.cloned()
    }
}

impl Read for Vec<CapItem> {
    fn read(meta: &Meta, key: &Ident, errors: &mut Errors) -> Option<Self> {
        let Meta::List(list) = meta else {
            errors
                .spanned(meta, format!("`{key}` takes a list: write `capabilities(guides, validate, ...)`"));
            return None;
        };
        let items = errors.handle(list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated))?;
        Some(items.into_iter().filter_map(|item| capability(item, errors)).collect())
    }
}

/// One item of `capabilities(...)`: `name` or `name(sub, ...)`.
fn capability(item: Meta, errors: &mut Errors) -> Option<CapItem> {
    let Some(ident) = item.path().get_ident().cloned() else {
        errors.spanned(item.path(), "expected a capability name such as `validate`");
        return None;
    };
    let subs = match &item {
        Meta::Path(_) => Vec::new(),
        Meta::List(l) => errors
            .handle(l.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated))?
            .into_iter()
            .filter_map(|s| match s {
                Meta::Path(p) if p.get_ident().is_some() => p.get_ident().cloned(),
                other => {
                    errors.spanned(&other, format!("a sub-feature is a bare name: write `{ident}(name)`"));
                    None
                }
            })
            .collect(),
        Meta::NameValue(nv) => {
            errors.spanned(
                nv,
                format!("a capability is declared by name, not assigned: write `{ident}` or `{ident}(sub_feature, ...)`"),
            );
            return None;
        }
    };
    Some(CapItem { ident, subs })
}

/// Which tool attribute a method carries.
pub enum ToolKind {
    /// `#[loop_tool(stage, name = "...")]`.
    Loop {
        /// `validate`, `execute` or `trace`.
        stage: Ident,
        /// `no_input`: the runtime refuses a Run given `input` (execute only).
        no_input: Option<Ident>,
        /// `inline`: the validator runs on the request's own task (validate only).
        inline: Option<Ident>,
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

const STAGES: [&str; 3] = ["validate", "execute", "trace"];
const LOOP_KEYS: [&str; 6] = ["validate", "execute", "trace", "name", "no_input", "inline"];
const PLAIN_KEYS: [&str; 4] = ["name", "description", "read_only", "input_schema"];

/// `#[loop_tool(...)]` as written. The stage is a bare word, so it arrives in `rest` with the
/// unknown keys, in source order.
#[derive(FromMeta)]
struct LoopWritten {
    #[darling(multiple)]
    name: Vec<Value<Text>>,
    #[darling(multiple)]
    no_input: Vec<Value<Flag>>,
    #[darling(multiple)]
    inline: Vec<Value<Flag>>,
    #[darling(flatten)]
    rest: Rest,
}

/// `#[plain_tool(...)]` as written.
#[derive(FromMeta)]
struct PlainWritten {
    #[darling(multiple)]
    name: Vec<Value<Text>>,
    #[darling(multiple)]
    description: Vec<Value<Text>>,
    #[darling(multiple)]
    read_only: Vec<Value<Switch>>,
    #[darling(multiple)]
    input_schema: Vec<Value<Text>>,
    #[darling(flatten)]
    rest: Rest,
}

/// A tool attribute's string value, `key = "..."`.
struct Text(LitStr);

impl Read for Text {
    fn read(meta: &Meta, key: &Ident, errors: &mut Errors) -> Option<Self> {
        match meta {
            Meta::NameValue(syn::MetaNameValue {
                value: Expr::Lit(ExprLit { lit: Lit::Str(s), .. }),
                ..
            }) => Some(Text(s.clone())),
            _ => {
                errors.spanned(meta, format!("`{key}` takes a string literal: write `{key} = \"...\"`"));
                None
            }
        }
    }
}

/// A bare flag, `key`.
struct Flag;

impl Read for Flag {
    fn read(meta: &Meta, key: &Ident, errors: &mut Errors) -> Option<Self> {
        if matches!(meta, Meta::Path(_)) {
            return Some(Flag);
        }
        errors.spanned(meta, format!("`{key}` is a flag: write `{key}`"));
        None
    }
}

/// A flag that may also be written `key = true|false`.
struct Switch(bool);

impl Read for Switch {
    fn read(meta: &Meta, key: &Ident, errors: &mut Errors) -> Option<Self> {
        match meta {
            Meta::Path(_) => Some(Switch(true)),
            Meta::NameValue(syn::MetaNameValue {
                value: Expr::Lit(ExprLit { lit: Lit::Bool(LitBool { value, .. }), .. }),
                ..
            }) => Some(Switch(*value)),
            _ => {
                errors.spanned(meta, format!("`{key}` is a flag: write `{key}` (or `{key} = false`)"));
                None
            }
        }
    }
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
    let Meta::List(list) = &attr.meta else {
        errors.spanned(&attr, format!("`#[{which}]` needs arguments: write `{usage}`"));
        return None;
    };
    let before = errors.len();
    let (kind, name) = if is_loop {
        let written = crate::meta::read::<LoopWritten>(list.tokens.clone(), errors)?;
        let name = once(written.name, errors).map(|e| e.value.0);
        let no_input = once(written.no_input, errors).map(|e| e.key);
        let inline = once(written.inline, errors).map(|e| e.key);
        let stage = stage(written.rest, usage, errors);
        let Some(stage) = stage else {
            if errors.len() == before {
                errors.spanned(
                    &attr,
                    "name the stage this loop tool serves: `validate`, `execute` or `trace`, e.g. `#[loop_tool(validate, name = \"validate_family\")]`",
                );
            }
            return None;
        };
        if let (Some(flag), false) = (&no_input, stage == "execute") {
            errors.spanned(flag, format!("`no_input` declares that programs take no `input` when they run: it goes on `#[loop_tool(execute, ...)]`, not on `{stage}`"));
        }
        if let (Some(flag), false) = (&inline, stage == "validate") {
            errors.spanned(flag, format!("`inline` declares a validator cheap enough to run on the request's own task: it goes on `#[loop_tool(validate, ...)]`, not on `{stage}` (every other engine call runs on an engine thread); remove it"));
        }
        (ToolKind::Loop { stage, no_input, inline }, name)
    } else {
        let written = crate::meta::read::<PlainWritten>(list.tokens.clone(), errors)?;
        let name = once(written.name, errors).map(|e| e.value.0);
        let description = once(written.description, errors).map(|e| e.value.0);
        let read_only = once(written.read_only, errors).is_some_and(|e| e.value.0);
        let input_schema = once(written.input_schema, errors).map(|e| e.value.0);
        for meta in written.rest.0 {
            unknown_tool_key(&meta, false, usage, errors);
        }
        (ToolKind::Plain { description, read_only, input_schema }, name)
    };
    Some(ToolAttr { kind, name, attr, item, broken: errors.len() != before })
}

/// The stage among a loop tool's bare words, reporting a second stage and unknown keys. A
/// misspelled stage still tells which stage the tool meant to serve.
fn stage(rest: Rest, usage: &str, errors: &mut Errors) -> Option<Ident> {
    let mut stage: Option<Ident> = None;
    for meta in rest.0 {
        let Some(key) = meta.path().get_ident().cloned() else {
            unknown_tool_key(&meta, true, usage, errors);
            continue;
        };
        let k = key.to_string();
        if !STAGES.contains(&k.as_str()) {
            unknown_tool_key(&meta, true, usage, errors);
            if let (None, Meta::Path(_), Some(meant)) = (&stage, &meta, closest(&k, &STAGES)) {
                stage = Some(Ident::new(meant, key.span()));
            }
        } else if !matches!(meta, Meta::Path(_)) {
            errors.spanned(
                &meta,
                format!("the stage is a bare name: write `#[loop_tool({k}, name = \"...\")]`"),
            );
        } else if let Some(first) = &stage {
            errors.spanned(&key, format!("a loop tool serves one stage, but `{first}` is already given"));
        } else {
            stage = Some(key);
        }
    }
    stage
}

/// Report an item of a tool attribute that is not in its grammar.
fn unknown_tool_key(meta: &Meta, is_loop: bool, usage: &str, errors: &mut Errors) {
    let (which, keys): (&str, &[&str]) =
        if is_loop { ("loop_tool", &LOOP_KEYS) } else { ("plain_tool", &PLAIN_KEYS) };
    match meta.path().get_ident() {
        // Once accepted and ignored: the runtime writes the loop tools' descriptions and schemas.
        Some(key) if is_loop && PLAIN_KEYS[1..].iter().any(|k| key == k) => errors.spanned(
            key,
            format!("`{key}` is a `#[plain_tool]` argument: the runtime writes a loop tool's description and schema itself; remove it"),
        ),
        Some(key) => errors.spanned(key, unknown(&format!("{which} argument"), &key.to_string(), keys)),
        None => errors.spanned(meta.path(), format!("unexpected path in `#[{which}]`: write `{usage}`")),
    }
}

/// A span for "missing key" errors: the attribute itself.
pub fn attribute_span() -> Span {
    Span::call_site()
}
