//! Error accumulation and did-you-mean suggestions.
//!
//! Every check pushes into one [`Errors`]; the macro reports them all in a single compile, each
//! spanned at the offending tokens (`syn::Error::new_spanned` covers a whole `key = "value"`
//! range, not only its first token).

use std::fmt::Display;

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;

/// An accumulator of spanned errors.
#[derive(Default)]
pub struct Errors(Option<syn::Error>);

impl Errors {
    /// A new, empty accumulator.
    pub fn new() -> Self {
        Errors(None)
    }

    /// Add an error.
    pub fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    /// Add every error of `other`.
    pub fn extend(&mut self, other: Errors) {
        if let Some(error) = other.0 {
            self.push(error);
        }
    }

    /// How many errors were recorded.
    pub fn len(&self) -> usize {
        self.0.iter().flatten().count()
    }

    /// Add an error spanning `tokens`.
    pub fn spanned(&mut self, tokens: impl ToTokens, message: impl Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    /// Add an error at `span`.
    pub fn at(&mut self, span: Span, message: impl Display) {
        self.push(syn::Error::new(span, message));
    }

    /// Keep the value of `result`, or record its error.
    pub fn handle<T>(&mut self, result: syn::Result<T>) -> Option<T> {
        match result {
            Ok(v) => Some(v),
            Err(e) => {
                self.push(e);
                None
            }
        }
    }

    /// Whether no error was recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// The `compile_error!` invocations of every recorded error.
    pub fn to_compile_errors(&self) -> TokenStream {
        self.0.as_ref().map(syn::Error::to_compile_error).unwrap_or_default()
    }
}

/// Levenshtein distance between two strings, by characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            let cost = usize::from(ca != *cb);
            row[j + 1] = (above + 1).min(row[j] + 1).min(diagonal + cost);
            diagonal = above;
        }
    }
    row[b.len()]
}

/// The candidate closest to `input`, when it is close enough to be a likely misspelling.
pub fn closest<'a>(input: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let lowered = input.to_lowercase().replace('-', "_");
    candidates
        .iter()
        .map(|c| {
            let normalized = c.to_lowercase().replace('-', "_");
            let d = if normalized == lowered { 0 } else { edit_distance(&lowered, &normalized).max(1) };
            // An abbreviation (`exec` for `execute`) is as likely as a typo.
            let abbreviation = lowered.chars().count() >= 3 && normalized.starts_with(&lowered);
            (if abbreviation { d.min(2) } else { d }, *c)
        })
        .filter(|(d, c)| *d <= 2 || *d * 3 <= c.chars().count())
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// `` `a`, `b`, `c` ``.
pub fn list(candidates: &[&str]) -> String {
    candidates.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
}

/// "unknown {what} `{got}`: did you mean `x`?" or, without a close candidate, the full list.
pub fn unknown(what: &str, got: &str, candidates: &[&str]) -> String {
    match closest(got, candidates) {
        Some(best) => format!("unknown {what} `{got}`: did you mean `{best}`?"),
        None => format!("unknown {what} `{got}`; expected one of {}", list(candidates)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance() {
        assert_eq!(edit_distance("guide", "guides"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn suggestions() {
        assert_eq!(closest("guide", &["guides", "name"]), Some("guides"));
        assert_eq!(closest("executon", &["execute", "execution"]), Some("execution"));
        assert_eq!(closest("json_pointer", &["json-pointer", "text-range"]), Some("json-pointer"));
        assert_eq!(closest("zzzzzz", &["guides", "name"]), None);
        assert_eq!(closest("Core", &["core", "reference"]), Some("core"));
        assert_eq!(closest("exec", &["execute", "guides", "plan"]), Some("execute"));
    }
}
