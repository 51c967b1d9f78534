//! `#[derive(Statuses)]`: a Language's engine-defined failure statuses.

use proc_macro2::TokenStream;
use quote::quote;
use syn::DeriveInput;

use super::{impl_header, matcher, variants, with_fallback, Shape};
use crate::errors::Errors;

/// What to use instead of an engine status named like a reserved one.
fn reserved(wire: &str) -> Option<&'static str> {
    Some(match wire {
        "success" => "the Run succeeded: return `Finish::output(value)` or `Finish::done()`",
        "error" => "return `Finish::error(message)` for the reserved `error` status",
        "partial" => "return `Finish::partial(message)` for the reserved `partial` status",
        "validation_error" | "catalog_drift" | "promotion_drift" => {
            "the runtime reports it itself before the engine runs; use `Finish::error` / `Finish::partial`, or another name"
        }
        _ => return None,
    })
}

/// Implement `RunStatus`. Every variant needs `#[status(side_effects = true|false)]`.
pub fn statuses(input: DeriveInput) -> TokenStream {
    let mut errors = Errors::new();
    let header = impl_header(&input, "RunStatus");
    let variants = variants(
        &input,
        "Statuses",
        "status",
        &[("side_effects", Shape::Bool), ("rename", Shape::Str)],
        &mut errors,
    );
    if let Some(variants) = &variants {
        for v in variants {
            if let Some(instead) = reserved(&v.wire) {
                let message =
                    format!("`{}` is a reserved status, not an engine-defined one: {instead}", v.wire);
                match v.arg("rename") {
                    Some(a) => errors.spanned(&a.meta, message),
                    None => errors.spanned(&v.ident, message),
                }
            }
            if !v.mentioned.iter().any(|k| k == "side_effects") {
                let fix = format!(
                    "`{}` needs #[status(side_effects = true)] (side effects may have occurred) or #[status(side_effects = false)]",
                    v.ident
                );
                match &v.attr {
                    Some(a) => errors.spanned(a, fix),
                    None => errors.spanned(&v.ident, fix),
                }
            }
        }
    }
    let Some(variants) = variants.filter(|_| errors.is_empty()) else {
        return with_fallback(
            &errors,
            quote!(#header {
                const MEMBERS: &'static [::pilotage::__private::StatusMember] = &[];
                fn wire(self) -> &'static str { ::core::unreachable!() }
            }),
        );
    };
    let members = variants.iter().map(|v| {
        let name = &v.wire;
        let side_effects = v.arg("side_effects").is_some_and(|a| a.bool);
        quote!(::pilotage::__private::StatusMember::new(#name, false, #side_effects))
    });
    let wire = matcher(&variants, |_, v| {
        let w = &v.wire;
        quote!(#w)
    });
    quote! {
        #header {
            const MEMBERS: &'static [::pilotage::__private::StatusMember] = &[#(#members),*];
            fn wire(self) -> &'static str { #wire }
        }
    }
}
