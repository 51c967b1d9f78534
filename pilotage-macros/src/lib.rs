//! Procedural macros of [pilotage](https://docs.rs/pilotage). Use them through the `pilotage`
//! facade: `#[pilotage::language(...)]` on an engine's impl block, and the closed-set derives
//! `Codes`, `RiskLevels`, `Statuses` and `EntryKinds`.
//!
//! Each macro parses its input, checks it, then expands it (modules `language::{parse, check,
//! expand}`, `derives`, `guides`, `duration`; `meta` reads the attribute grammars with darling).
//! Every error is collected and reported in one compile, spanned at the offending tokens; on
//! error the user's item is still emitted so IDEs keep working. Generated code reaches the
//! runtime only through `::pilotage::__private`.

use proc_macro::TokenStream;
use proc_macro2::Span;
use quote::quote;
use syn::parse_macro_input;

mod derives;
mod duration;
mod errors;
mod guides;
mod language;
mod meta;

/// Declares a Pilotage Language on an engine's inherent impl block and implements
/// `pilotage::Engine` for the type. See the `pilotage` crate documentation for the syntax.
#[proc_macro_attribute]
pub fn language(attr: TokenStream, item: TokenStream) -> TokenStream {
    language::language(attr.into(), item.into()).into()
}

/// Marks the method serving a loop stage (`validate`, `execute` or `trace`) inside a
/// `#[pilotage::language(...)]` impl. Anywhere else it is an error.
#[proc_macro_attribute]
pub fn loop_tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let validate = attr.to_string().split(',').next().is_some_and(|stage| stage.trim() == "validate");
    outside_language("loop_tool", validate, item)
}

/// Marks a method as an ordinary MCP tool inside a `#[pilotage::language(...)]` impl. Anywhere
/// else it is an error.
#[proc_macro_attribute]
pub fn plain_tool(_attr: TokenStream, item: TokenStream) -> TokenStream {
    outside_language("plain_tool", false, item)
}

/// The associated const a validate tool outside a language impl defines, whose value is the
/// bound that reports the forgotten `#[pilotage::language]`.
const REPORTED: &str = "__loop_tool_needs_pilotage_language_on_this_impl";

/// The inherent functions a validate tool outside a language impl also defines, so the impl's
/// other tool attributes find them instead of `pilotage::__private::NoValidateTool`'s.
const SILENCED: [&str; 2] =
    ["__loop_tool_outside_pilotage_language", "__plain_tool_outside_pilotage_language"];

/// `#[loop_tool]` / `#[plain_tool]` reached on their own: the language macro strips them, so
/// this only runs outside a language impl. The method is emitted unchanged, and the error is a
/// trait bound on the impl's type (`pilotage::__private::InsideLanguage`), met only by a type
/// that carries a misplaced `#[pilotage::language]` (a struct or enum), whose own error already
/// says where it goes. So a forgotten `#[pilotage::language]` is reported once: at the impl's
/// validate tool (every Language has one), which defines [`REPORTED`] from the bound and the
/// [`SILENCED`] functions; the impl's other tools call `Self::` one of those, which falls back
/// to `NoValidateTool`'s function of that name, bounded on the same trait (a `#[plain_tool]`
/// message for a plain tool), when the impl has no validate tool: one E0277 at each attribute.
fn outside_language(which: &str, validate: bool, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    let Ok(mut method) = syn::parse2::<syn::ImplItemFn>(item.clone()) else {
        return error(which, item).into();
    };
    if method.sig.receiver().is_none() {
        // Not a method (a free function, an associated function): no impl type to ask.
        return error(which, quote!(#method)).into();
    }
    if validate {
        let reported = proc_macro2::Ident::new(REPORTED, Span::call_site());
        let silenced = SILENCED.map(|name| proc_macro2::Ident::new(name, Span::call_site()));
        return quote! {
            #[doc(hidden)]
            #[allow(non_upper_case_globals, dead_code)]
            const #reported: () = <Self as ::pilotage::__private::InsideLanguage>::#reported;
            #(
                #[doc(hidden)]
                #[allow(non_snake_case, dead_code)]
                fn #silenced() {}
            )*
            #method
        }
        .into();
    }
    let check = proc_macro2::Ident::new(SILENCED[usize::from(which == "plain_tool")], Span::call_site());
    method.block.stmts.insert(
        0,
        syn::parse_quote!({
            #[allow(unused_imports)]
            use ::pilotage::__private::NoValidateTool as _;
            Self::#check();
        }),
    );
    quote!(#method).into()
}

fn error(which: &str, item: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    let message = format!(
        "`#[{which}]` only works on a method inside an impl annotated with `#[pilotage::language(...)]`: add `#[pilotage::language(...)]` above this impl"
    );
    let error = syn::Error::new(Span::call_site(), message).to_compile_error();
    quote!(#item #error)
}

/// Implements `DiagnosticCode` for a fieldless enum: the Language's closed diagnostic-code set.
/// Wire names are the variants' snake_case names unless `#[code(rename = "...")]`.
#[proc_macro_derive(Codes, attributes(code))]
pub fn derive_codes(input: TokenStream) -> TokenStream {
    derives::codes(parse_macro_input!(input)).into()
}

/// Implements `RiskLevel` for a fieldless enum, least risky variant first. Every variant needs
/// `#[risk(...)]` with hints among `read_only`, `write`, `destructive`, `open_world`.
#[proc_macro_derive(RiskLevels, attributes(risk))]
pub fn derive_risk_levels(input: TokenStream) -> TokenStream {
    derives::risk_levels(parse_macro_input!(input)).into()
}

/// Implements `RunStatus` for a fieldless enum of engine-defined failure statuses. Every variant
/// needs `#[status(side_effects = true|false)]`.
#[proc_macro_derive(Statuses, attributes(status))]
pub fn derive_statuses(input: TokenStream) -> TokenStream {
    derives::statuses(parse_macro_input!(input)).into()
}

/// Implements `EntryKind` for a fieldless enum of catalog entry kinds; `#[kind(callable)]` marks
/// kinds that steps can invoke, `#[kind(promoted)]` the one (callable) kind promoted programs
/// are exposed as.
#[proc_macro_derive(EntryKinds, attributes(kind))]
pub fn derive_entry_kinds(input: TokenStream) -> TokenStream {
    derives::kinds(parse_macro_input!(input)).into()
}
