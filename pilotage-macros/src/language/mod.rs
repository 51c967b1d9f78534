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
        Ok(other) => return misplaced(other),
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
    // The names a Language's methods are written with (`Json`, `Validation`, `Run`, `Finish`,
    // ...) are in scope even where `use pilotage::prelude::*;` was forgotten: stable rustc
    // suggests no import from a crates.io crate, so the forgotten line would otherwise be one
    // unexplained "cannot find type" per name. A glob is shadowed by every name the module
    // defines or imports by name, and the same glob written by the user is the same items.
    let prelude = quote! {
        #[allow(unused_imports)]
        use ::pilotage::prelude::*;
    };
    let expanded = match model {
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
    };
    quote!(#prelude #expanded)
}

/// `#[pilotage::language]` on something other than an impl block: one error at the item's
/// keyword and name, saying where the attribute goes. A struct or enum also gets the
/// never-reached `Engine` impl, so serving it adds no "trait not implemented" errors, and
/// `LanguageMisplaced`, so the tool attributes of its impl, then on their own, add no error.
fn misplaced(item: Item) -> TokenStream {
    let goes = "#[pilotage::language(...)] goes on the `impl` block of your engine";
    let (at, message, engine) = match &item {
        Item::Struct(s) => {
            let (keyword, name) = (&s.struct_token, &s.ident);
            (quote!(#keyword #name), format!("{goes}, not on its struct: put it on `impl {name} {{ ... }}`, the block whose methods carry `#[loop_tool]`"), Some((name, &s.generics)))
        }
        Item::Enum(e) => {
            let (keyword, name) = (&e.enum_token, &e.ident);
            (quote!(#keyword #name), format!("{goes}, not on its enum: put it on `impl {name} {{ ... }}`, the block whose methods carry `#[loop_tool]`"), Some((name, &e.generics)))
        }
        Item::Fn(f) => {
            let (keyword, name) = (&f.sig.fn_token, &f.sig.ident);
            (quote!(#keyword #name), format!("{goes} type, not on a function: `impl MyEngine {{ ... }}`, with `fn {name}` as a method marked `#[loop_tool(...)]` or `#[plain_tool(...)]`"), None)
        }
        Item::Trait(t) => {
            let (keyword, name) = (&t.trait_token, &t.ident);
            (quote!(#keyword #name), format!("{goes} type, not on a trait: it implements `pilotage::Engine` itself; put it on `impl MyEngine {{ ... }}`"), None)
        }
        _ => (quote!(), format!("{goes} type: `impl MyEngine {{ ... }}`"), None),
    };
    let error = if at.is_empty() {
        syn::Error::new(Span::call_site(), message)
    } else {
        syn::Error::new_spanned(at, message)
    }
    .to_compile_error();
    let engine = engine.map(|(name, generics)| {
        let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
        let block: syn::ItemImpl = syn::parse_quote!(impl #impl_generics #name #ty_generics #where_clause {});
        let engine = expand::fallback(&block);
        quote! {
            #engine
            #[automatically_derived]
            impl #impl_generics ::pilotage::__private::LanguageMisplaced for #name #ty_generics #where_clause {}
        }
    });
    quote!(#item #engine #error)
}
