//! `#[derive(EntryKinds)]`: a Language's catalog entry kinds.

use proc_macro2::TokenStream;
use quote::quote;
use syn::DeriveInput;

use super::{impl_header, matcher, variants, with_fallback, Shape};
use crate::errors::Errors;

/// Implement `EntryKind`. `#[kind(callable)]` marks kinds that steps can invoke;
/// `#[kind(promoted)]` marks the (at most one) kind promoted programs are exposed as, which is
/// callable.
pub fn kinds(input: DeriveInput) -> TokenStream {
    let mut errors = Errors::new();
    let header = impl_header(&input, "EntryKind");
    let variants = variants(
        &input,
        "EntryKinds",
        "kind",
        &[("callable", Shape::Flag), ("promoted", Shape::Flag), ("rename", Shape::Str)],
        &mut errors,
    );
    let mut promoted: Option<&super::Variant> = None;
    for v in variants.iter().flatten() {
        let Some(arg) = v.arg("promoted").filter(|a| a.bool) else {
            continue;
        };
        if let Some(first) = promoted {
            errors.spanned(
                &arg.meta,
                format!("`{}` is already the promoted kind: promoted programs are exposed as one kind; keep one `promoted`", first.ident),
            );
        } else {
            promoted = Some(v);
        }
        if let Some(callable) = v.arg("callable").filter(|a| !a.bool) {
            errors.spanned(
                &callable.meta,
                "the promoted kind is callable (promoted programs are invoked like capabilities): remove `callable = false`",
            );
        }
    }
    let promoted_wire = promoted.map(|v| v.wire.clone());
    let Some(variants) = variants.filter(|_| errors.is_empty()) else {
        return with_fallback(
            &errors,
            quote!(#header {
                const MEMBERS: &'static [::pilotage::__private::KindMember] = &[];
                fn wire(self) -> &'static str { ::core::unreachable!() }
                fn callable(self) -> bool { ::core::unreachable!() }
            }),
        );
    };
    let callable = |v: &super::Variant| {
        v.arg("callable").is_some_and(|a| a.bool) || v.arg("promoted").is_some_and(|a| a.bool)
    };
    let members = variants.iter().map(|v| {
        let (name, callable) = (&v.wire, callable(v));
        quote!(::pilotage::__private::KindMember { name: #name, callable: #callable })
    });
    let wire = matcher(&variants, |_, v| {
        let w = &v.wire;
        quote!(#w)
    });
    let callable = matcher(&variants, |_, v| {
        let c = callable(v);
        quote!(#c)
    });
    let promoted = match promoted_wire {
        Some(w) => quote!(::core::option::Option::Some(#w)),
        None => quote!(::core::option::Option::None),
    };
    quote! {
        #header {
            const MEMBERS: &'static [::pilotage::__private::KindMember] = &[#(#members),*];
            const PROMOTED: ::core::option::Option<&'static str> = #promoted;
            fn wire(self) -> &'static str { #wire }
            fn callable(self) -> bool { #callable }
        }
    }
}
