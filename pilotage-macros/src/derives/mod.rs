//! The closed-set derives: `Codes`, `RiskLevels`, `Statuses`, `EntryKinds`.
//!
//! Each works on a fieldless enum; a variant's wire name is the snake_case of its name unless
//! `rename = "..."` is given in the derive's variant attribute. Errors are accumulated and, when
//! there are any, a fallback impl is emitted beside them so that uses of the type do not add
//! "trait not implemented" errors.

mod codes;
mod kinds;
mod risk;
mod statuses;

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Data, DeriveInput, Expr, ExprLit, Fields, Ident, Lit, LitStr, Meta, Token};

use crate::errors::{unknown, Errors};

pub use codes::codes;
pub use kinds::kinds;
pub use risk::risk_levels;
pub use statuses::statuses;

/// How a variant-attribute key takes its value.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A bare flag (`read_only`), also `flag = true|false`.
    Flag,
    /// `key = true|false`.
    Bool,
    /// `key = "string"`.
    Str,
}

/// One parsed key of a variant attribute.
pub struct Arg {
    pub key: Ident,
    pub meta: Meta,
    pub bool: bool,
    pub string: Option<LitStr>,
}

/// One variant with its wire name and its attribute's arguments.
pub struct Variant {
    pub ident: Ident,
    pub wire: String,
    /// Whether the variant carried the derive's attribute.
    pub attr: Option<syn::Attribute>,
    pub args: Vec<Arg>,
    /// Keys written in the attribute, valid or not.
    pub mentioned: Vec<String>,
}

impl Variant {
    /// The argument `key`, if given.
    pub fn arg(&self, key: &str) -> Option<&Arg> {
        self.args.iter().find(|a| a.key == key)
    }
}

/// The variants of a fieldless enum, each with the arguments of `#[attr(...)]`.
pub fn variants(
    input: &DeriveInput,
    derive: &str,
    attr: &str,
    keys: &[(&str, Shape)],
    errors: &mut Errors,
) -> Option<Vec<Variant>> {
    let Data::Enum(data) = &input.data else {
        let token = match &input.data {
            Data::Struct(s) => s.struct_token.span,
            Data::Union(u) => u.union_token.span,
            Data::Enum(e) => e.enum_token.span,
        };
        errors.at(
            token,
            format!("#[derive({derive})] works on a fieldless enum: one variant per member of the set"),
        );
        return None;
    };
    let names: Vec<&str> = keys.iter().map(|k| k.0).collect();
    let mut out: Vec<Variant> = Vec::new();
    for v in &data.variants {
        if !matches!(v.fields, Fields::Unit) {
            errors.spanned(
                &v.fields,
                format!(
                    "`{}` has fields, but #[derive({derive})] needs unit variants: remove the fields",
                    v.ident
                ),
            );
        }
        let mut found: Option<syn::Attribute> = None;
        let mut args: Vec<Arg> = Vec::new();
        let mut mentioned: Vec<String> = Vec::new();
        for a in v.attrs.iter().filter(|a| a.path().is_ident(attr)) {
            if found.is_some() {
                errors.spanned(a, format!("`{}` has a second #[{attr}(...)]: merge them into one", v.ident));
                continue;
            }
            found = Some(a.clone());
            let items = match &a.meta {
                Meta::List(l) => {
                    errors.handle(Punctuated::<Meta, Token![,]>::parse_terminated.parse2(l.tokens.clone()))
                }
                _ => {
                    errors.spanned(a, format!("write #[{attr}({})]", names.join(", ")));
                    None
                }
            };
            for meta in items.into_iter().flatten() {
                let Some(key) = meta.path().get_ident().cloned() else {
                    errors.spanned(meta.path(), format!("expected one of {}", crate::errors::list(&names)));
                    continue;
                };
                let k = key.to_string();
                mentioned.extend(crate::errors::closest(&k, &names).map(str::to_owned));
                let Some((_, shape)) = keys.iter().find(|(n, _)| *n == k) else {
                    errors.spanned(&key, unknown(&format!("#[{attr}] argument"), &k, &names));
                    continue;
                };
                if args.iter().any(|x| x.key == k) {
                    errors.spanned(&key, format!("`{k}` is given twice: give it once"));
                    continue;
                }
                let value = match &meta {
                    Meta::NameValue(nv) => Some(&nv.value),
                    _ => None,
                };
                let parsed = match (shape, &meta, value) {
                    (Shape::Flag, Meta::Path(_), _) => Some((true, None)),
                    (Shape::Flag | Shape::Bool, _, Some(Expr::Lit(ExprLit { lit: Lit::Bool(b), .. }))) => {
                        Some((b.value, None))
                    }
                    (Shape::Str, _, Some(Expr::Lit(ExprLit { lit: Lit::Str(s), .. }))) => {
                        Some((false, Some(s.clone())))
                    }
                    _ => None,
                };
                match parsed {
                    Some((bool, string)) => args.push(Arg { key, meta, bool, string }),
                    None => errors.spanned(
                        &meta,
                        match shape {
                            Shape::Flag => format!("`{k}` is a flag: write `{k}`"),
                            Shape::Bool => {
                                format!("`{k}` takes a boolean: write `{k} = true` or `{k} = false`")
                            }
                            Shape::Str => format!("`{k}` takes a string: write `{k} = \"...\"`"),
                        },
                    ),
                }
            }
        }
        let wire = match args.iter().find(|a| a.key == "rename").and_then(|a| a.string.clone()) {
            Some(lit) => {
                let w = lit.value();
                if w.is_empty() || w.contains(char::is_whitespace) {
                    errors.spanned(&lit, "a wire name is non-empty and has no whitespace");
                }
                w
            }
            None => snake_case(&v.ident.to_string()),
        };
        if let Some(first) = out.iter().find(|o| o.wire == wire) {
            errors.spanned(
                &v.ident,
                format!(
                    "`{}` has the wire name `{wire}`, already used by `{}`: give one of them #[{attr}(rename = \"...\")]",
                    v.ident, first.ident
                ),
            );
        }
        out.push(Variant { ident: v.ident.clone(), wire, attr: found, args, mentioned });
    }
    Some(out)
}

/// The snake_case form of a CamelCase identifier (`HTTPError` → `http_error`).
pub fn snake_case(name: &str) -> String {
    let name = name.strip_prefix("r#").unwrap_or(name);
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::new();
    for (i, c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                let prev = chars[i - 1];
                let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
                if prev.is_lowercase() || prev.is_ascii_digit() || (prev.is_uppercase() && next_lower) {
                    out.push('_');
                }
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(*c);
        }
    }
    out
}

/// `impl Trait for Type` headers for a derive input.
pub fn impl_header(input: &DeriveInput, trait_name: &str) -> TokenStream {
    let ident = &input.ident;
    let trait_ident = Ident::new(trait_name, Span::call_site());
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    quote!(#[automatically_derived] impl #impl_generics ::pilotage::__private::#trait_ident for #ident #ty_generics #where_clause)
}

/// `match self { Self::A => a, ... }`.
pub fn matcher(variants: &[Variant], value: impl Fn(usize, &Variant) -> TokenStream) -> TokenStream {
    let arms = variants.iter().enumerate().map(|(i, v)| {
        let ident = &v.ident;
        let value = value(i, v);
        quote!(Self::#ident => #value,)
    });
    quote!(match self { #(#arms)* })
}

/// The errors, with a fallback impl so that uses of the type do not cascade.
pub fn with_fallback(errors: &Errors, fallback: TokenStream) -> TokenStream {
    let errors = errors.to_compile_errors();
    quote!(#fallback #errors)
}

#[cfg(test)]
mod tests {
    use super::snake_case;

    #[test]
    fn snake() {
        assert_eq!(snake_case("UnknownCapability"), "unknown_capability");
        assert_eq!(snake_case("HTTPError"), "http_error");
        assert_eq!(snake_case("Safe"), "safe");
        assert_eq!(snake_case("Step2Fail"), "step2_fail");
        assert_eq!(snake_case("already_snake"), "already_snake");
    }
}
