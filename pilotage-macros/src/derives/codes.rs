//! `#[derive(Codes)]`: a Language's closed diagnostic-code set.

use proc_macro2::TokenStream;
use quote::quote;
use syn::DeriveInput;

use super::{impl_header, matcher, variants, with_fallback, Shape};
use crate::errors::Errors;

/// What to use instead of an engine code named like a reserved one.
fn reserved(wire: &str) -> Option<&'static str> {
    Some(match wire {
        "constraint" => "report it with `v.constraint(locator, message)`, or give this code its own name",
        "input_binding" => "the runtime reports input findings itself (and `run.reject_input(...)` at run time); give this code its own name",
        "context_binding" => "the runtime checks the context against the context schema itself; give this code its own name",
        _ => return None,
    })
}

/// Implement `DiagnosticCode`.
pub fn codes(input: DeriveInput) -> TokenStream {
    let mut errors = Errors::new();
    let header = impl_header(&input, "DiagnosticCode");
    let variants = variants(&input, "Codes", "code", &[("rename", Shape::Str)], &mut errors);
    for v in variants.iter().flatten() {
        if let Some(instead) = reserved(&v.wire) {
            let message = format!(
                "`{}` is a reserved diagnostic code every Language already has, so this variant would merge with it: {instead}",
                v.wire
            );
            match v.arg("rename") {
                Some(a) => errors.spanned(&a.meta, message),
                None => errors.spanned(&v.ident, message),
            }
        }
    }
    let Some(variants) = variants.filter(|_| errors.is_empty()) else {
        return with_fallback(
            &errors,
            quote!(#header {
                const MEMBERS: &'static [&'static str] = &[];
                fn wire(self) -> &'static str { ::core::unreachable!() }
            }),
        );
    };
    let members = variants.iter().map(|v| &v.wire);
    let wire = matcher(&variants, |_, v| {
        let w = &v.wire;
        quote!(#w)
    });
    quote! {
        #header {
            const MEMBERS: &'static [&'static str] = &[#(#members),*];
            fn wire(self) -> &'static str { #wire }
        }
    }
}
