//! The attribute grammars, read with darling.
//!
//! An attribute's keys are the fields of a `#[derive(darling::FromMeta)]` struct: darling
//! dispatches each `key ...` item to its field and hands every item it does not know, in source
//! order, to the struct's `#[darling(flatten)]` [`Rest`] field, which the caller reports with its
//! own did-you-mean. Keys are `#[darling(multiple)]` fields so a repetition is reported by
//! [`once`] in our words, at the repeated key.
//!
//! A value is read by its [`Value`] `FromMeta` impl, which never fails to darling: what reading
//! gave, including its error, stays a `syn::Error` inside the value. darling's own `Error` keeps
//! a single span (the first token on stable Rust), while these messages underline the whole
//! `key = value` they are about.

use darling::ast::NestedMeta;
use darling::FromMeta;
use proc_macro2::TokenStream;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Ident, Meta, Token};

use crate::errors::Errors;

/// How a value type is read from its `key ...` item.
pub trait Read: Sized {
    /// Read the value of `meta`, whose key is `key`, recording what is wrong with it. A value
    /// may be partly read (`capabilities(...)` keeps its well-formed items).
    fn read(meta: &Meta, key: &Ident, errors: &mut Errors) -> Option<Self>;
}

/// A key as written, and what reading its value gave.
pub struct Value<T> {
    /// The key.
    pub key: Ident,
    /// The whole item, for spans.
    pub meta: Meta,
    /// The value, if it could be read.
    pub read: Option<T>,
    /// What is wrong with the value.
    pub errors: Errors,
}

impl<T: Read> FromMeta for Value<T> {
    fn from_meta(meta: &Meta) -> darling::Result<Self> {
        // darling matched the item to a field by name, so its path is one identifier.
        let key =
            meta.path().get_ident().cloned().ok_or_else(|| darling::Error::unsupported_format("path"))?;
        let mut errors = Errors::new();
        let read = T::read(meta, &key, &mut errors);
        Ok(Value { key, meta: meta.clone(), read, errors })
    }
}

/// A key and its value, read.
pub struct Entry<T> {
    /// The key.
    pub key: Ident,
    /// The value.
    pub value: T,
    /// The whole item.
    pub meta: Meta,
}

/// The first readable value of a key. A value's errors are reported (and a later value may
/// still be taken); a repetition after a taken value is reported at its key.
pub fn once<T>(values: Vec<Value<T>>, errors: &mut Errors) -> Option<Entry<T>> {
    let mut taken: Option<Entry<T>> = None;
    for value in values {
        if taken.is_some() {
            let key = &value.key;
            errors.spanned(key, format!("duplicate key `{key}`: give it once"));
            continue;
        }
        errors.extend(value.errors);
        taken = value.read.map(|read| Entry { key: value.key, value: read, meta: value.meta });
    }
    taken
}

/// The items darling did not match to a field, in source order.
#[derive(Default)]
pub struct Rest(pub Vec<Meta>);

impl FromMeta for Rest {
    fn from_list(items: &[NestedMeta]) -> darling::Result<Self> {
        // [`items`] only yields metas: literals never reach darling.
        Ok(Rest(
            items
                .iter()
                .filter_map(|item| match item {
                    NestedMeta::Meta(meta) => Some(meta.clone()),
                    NestedMeta::Lit(_) => None,
                })
                .collect(),
        ))
    }
}

/// The comma-separated `key ...` items of an attribute, with syn's own message for a syntax
/// error, ready for darling.
pub fn items(tokens: TokenStream) -> syn::Result<Vec<NestedMeta>> {
    let metas = Punctuated::<Meta, Token![,]>::parse_terminated.parse2(tokens)?;
    Ok(metas.into_iter().map(NestedMeta::Meta).collect())
}

/// Read `tokens` as the grammar `G`, recording any error.
pub fn read<G: FromMeta>(tokens: TokenStream, errors: &mut Errors) -> Option<G> {
    let items = errors.handle(items(tokens))?;
    errors.handle(G::from_list(&items).map_err(syn::Error::from))
}
