//! `#[derive(RiskLevels)]`: a Language's engine-defined risk levels, least risky first.

use proc_macro2::TokenStream;
use quote::quote;
use syn::DeriveInput;

use super::{impl_header, matcher, variants, with_fallback, Shape};
use crate::errors::Errors;

const FLAGS: &str = "`read_only`, `write`, `destructive`, `open_world`";

/// Implement `RiskLevel`. Every variant needs `#[risk(...)]` with flags among `read_only`,
/// `write` (no hint set), `destructive` and `open_world`.
pub fn risk_levels(input: DeriveInput) -> TokenStream {
    let mut errors = Errors::new();
    let header = impl_header(&input, "RiskLevel");
    let variants = variants(
        &input,
        "RiskLevels",
        "risk",
        &[
            ("read_only", Shape::Flag),
            ("write", Shape::Flag),
            ("destructive", Shape::Flag),
            ("open_world", Shape::Flag),
            ("rename", Shape::Str),
        ],
        &mut errors,
    );
    let mut hints = Vec::new();
    if let Some(variants) = &variants {
        if variants.is_empty() {
            errors.spanned(
                &input.ident,
                "a risk set needs at least one level: add variants, least risky first, e.g. `#[risk(read_only)] Safe`",
            );
        }
        for v in variants {
            let flag = |k: &str| v.arg(k).filter(|a| a.bool);
            let (read_only, write, destructive) = (flag("read_only"), flag("write"), flag("destructive"));
            match &v.attr {
                None => errors.spanned(
                    &v.ident,
                    format!("`{}` needs #[risk(...)] with its hints among {FLAGS}, e.g. #[risk(read_only)]", v.ident),
                ),
                Some(attr) if v.mentioned.iter().all(|m| m == "rename") => errors.spanned(
                    attr,
                    format!("#[risk(...)] needs at least one of {FLAGS} (`write` for a reversible write with no hint set)"),
                ),
                Some(_) => {}
            }
            if let (Some(_), Some(attr)) = (read_only, &v.attr) {
                if destructive.is_some() {
                    errors.spanned(
                        attr,
                        format!("`{}` cannot be both `read_only` and `destructive`: a read-only level changes nothing; keep one of them", v.ident),
                    );
                }
                if write.is_some() {
                    errors.spanned(
                        attr,
                        format!("`{}` cannot be both `read_only` and `write`: keep one of them", v.ident),
                    );
                }
            }
            hints.push((read_only.is_some(), destructive.is_some(), flag("open_world").is_some()));
        }
    }
    if let (Some(variants), true) = (&variants, errors.is_empty()) {
        order(variants.iter().map(|v| &v.ident).collect(), &hints, &mut errors);
    }
    if let (Some(variants), true) = (&variants, errors.is_empty()) {
        uncovered_maxima(&input.ident, variants.iter().map(|v| &v.ident).collect(), &hints, &mut errors);
    }
    let Some(variants) = variants.filter(|_| errors.is_empty()) else {
        return with_fallback(
            &errors,
            quote!(#header {
                const MEMBERS: &'static [::pilotage::__private::RiskMember] = &[];
                fn wire(self) -> &'static str { ::core::unreachable!() }
                fn hints(self) -> ::pilotage::__private::RiskHints { ::core::unreachable!() }
                fn rank(self) -> usize { ::core::unreachable!() }
            }),
        );
    };
    let hint = |i: usize| {
        let (r, d, o) = hints[i];
        quote!(::pilotage::__private::RiskHints::new(#r, #d, #o))
    };
    let members = variants.iter().enumerate().map(|(i, v)| {
        let name = &v.wire;
        let hints = hint(i);
        quote!(::pilotage::__private::RiskMember { name: #name, hints: #hints })
    });
    let wire = matcher(&variants, |_, v| {
        let w = &v.wire;
        quote!(#w)
    });
    let hints_match = matcher(&variants, |i, _| hint(i));
    let rank = matcher(&variants, |i, _| quote!(#i));
    quote! {
        #header {
            const MEMBERS: &'static [::pilotage::__private::RiskMember] = &[#(#members),*];
            fn wire(self) -> &'static str { #wire }
            fn hints(self) -> ::pilotage::__private::RiskHints { #hints_match }
            fn rank(self) -> usize { #rank }
        }
    }
}

/// What a level may do, as a set: writes (not `read_only`), `destructive`, `open_world`.
fn riskiness(h: (bool, bool, bool)) -> [bool; 3] {
    [!h.0, h.1, h.2]
}

/// The ranks follow the declaration order, least risky first, so a level whose riskiness is a
/// strict subset of an earlier level's is out of order: plans would report the earlier, riskier
/// level as the lesser one. Reported once, at the first level out of order, with an order that
/// fits the hints.
fn order(names: Vec<&syn::Ident>, hints: &[(bool, bool, bool)], errors: &mut Errors) {
    let less = |a: usize, b: usize| {
        let (a, b) = (riskiness(hints[a]), riskiness(hints[b]));
        a != b && a.iter().zip(b).all(|(x, y)| !x || y)
    };
    let describe = |i: usize| {
        let r = riskiness(hints[i]);
        let words: Vec<&str> = [(r[0], "writes"), (r[1], "destructive"), (r[2], "open_world")]
            .into_iter()
            .filter_map(|(on, w)| on.then_some(w))
            .collect();
        if words.is_empty() {
            "read-only".to_owned()
        } else {
            words.join(", ")
        }
    };
    for later in 0..names.len() {
        let Some(earlier) = (0..later).find(|&e| less(later, e)) else { continue };
        let mut sorted: Vec<usize> = (0..names.len()).collect();
        sorted.sort_by_key(|&i| riskiness(hints[i]).iter().filter(|x| **x).count());
        let fixed: Vec<String> = sorted.iter().map(|&i| format!("`{}`", names[i])).collect();
        errors.spanned(
            names[later],
            format!(
                "risk levels go least risky first, but `{}` ({}) comes after the riskier `{}` ({}): plans would report `{}` as the lesser risk; declare them in the order {}",
                names[later],
                describe(later),
                names[earlier],
                describe(earlier),
                names[earlier],
                fixed.join(", ")
            ),
        );
        return;
    }
}

/// `max_risk` names one level, so every maximum a plan can reach must be covered by a level
/// (as read-only as, and at least as destructive and open-world as, the aggregate). Checking
/// pairs suffices: coverage then extends to any number of steps.
fn uncovered_maxima(
    ty: &syn::Ident,
    names: Vec<&syn::Ident>,
    hints: &[(bool, bool, bool)],
    errors: &mut Errors,
) {
    let covers =
        |k: (bool, bool, bool), a: (bool, bool, bool)| (!k.0 || a.0) && (k.1 || !a.1) && (k.2 || !a.2);
    let mut reported = Vec::new();
    for i in 0..hints.len() {
        for j in i + 1..hints.len() {
            let (a, b) = (hints[i], hints[j]);
            let max = (a.0 && b.0, a.1 || b.1, a.2 || b.2);
            if hints.iter().any(|k| covers(*k, max)) || reported.contains(&max) {
                continue;
            }
            reported.push(max);
            let flags: Vec<&str> = [(max.1, "destructive"), (max.2, "open_world")]
                .into_iter()
                .filter_map(|(on, f)| on.then_some(f))
                .collect();
            errors.spanned(
                ty,
                format!(
                    "risk levels `{}` and `{}` can meet in one plan, and no level covers their maximum ({}), so `max_risk` could not name it honestly: add a level such as `#[risk({})] {}{}`",
                    names[i], names[j], flags.join(", "), flags.join(", "), names[i], names[j]
                ),
            );
        }
    }
}
