//! `#[pilotage::language(...)]`: parse, check, expand.

mod check;
mod expand;
mod parse;
mod shapes;

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::Item;

use crate::errors::Errors;

/// Expand `#[pilotage::language(attr)] item`.
pub fn language(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::new();
    let mut item = match syn::parse2::<Item>(item.clone()) {
        Ok(Item::Impl(i)) => i,
        Ok(_) => {
            errors.at(
                Span::call_site(),
                "#[pilotage::language(...)] goes on an inherent impl block of the engine type: `impl MyEngine { ... }`",
            );
            let errors = errors.to_compile_errors();
            return quote!(#item #errors);
        }
        Err(e) => {
            let e = e.to_compile_error();
            return quote!(#item #e);
        }
    };
    let args = parse::parse_args(attr, &mut errors);
    let tools = parse::take_tools(&mut item);
    if let Some((_, path, _)) = &item.trait_ {
        let last = path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
        errors.spanned(
            path,
            format!(
                "#[pilotage::language(...)] goes on an inherent impl (`impl MyEngine {{ ... }}`), not on an impl of `{last}`: it generates `impl pilotage::Engine` itself"
            ),
        );
    }
    let names = shapes::Names {
        codes: args.codes.as_ref().map(|e| e.value.clone()),
        risk: args.risk.as_ref().map(|e| e.value.clone()),
        statuses: None,
    };
    let model = if item.trait_.is_none() { check::check(args, &tools, &item, &mut errors) } else { None };
    match model {
        Some(model) if errors.is_empty() => expand::expand(&item, &model),
        _ => {
            // `Validation<Risk, Codes>` was reported; emit it the right way round so the
            // method's signature adds no "trait bound not satisfied" errors.
            for impl_item in &mut item.items {
                if let syn::ImplItem::Fn(f) = impl_item {
                    shapes::repair(f, &names);
                }
            }
            let fallback = expand::fallback(&item);
            let errors = errors.to_compile_errors();
            quote!(#fallback #errors)
        }
    }
}
