//! `#[derive(Codes)]`: a Language's closed diagnostic-code set.

use proc_macro2::TokenStream;
use quote::quote;
use syn::DeriveInput;

use super::{impl_header, matcher, variants, with_fallback, Shape};
use crate::errors::Errors;

/// Implement `DiagnosticCode`.
pub fn codes(input: DeriveInput) -> TokenStream {
    let mut errors = Errors::new();
    let header = impl_header(&input, "DiagnosticCode");
    let variants = variants(&input, "Codes", "code", &[("rename", Shape::Str)], &mut errors);
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
