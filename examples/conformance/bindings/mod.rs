//! The per-Language bindings of the example engines. A binding for any other Language is one
//! more file here returning a [`Binding`](crate::runner::binding::Binding).

pub mod automation;
pub mod calc;
pub mod postgres;
pub mod sql;
pub mod workflow;

use crate::runner::binding::Binding;

/// Every binding this crate carries.
pub fn all() -> Vec<Binding> {
    vec![workflow::binding(), sql::binding(), automation::binding(), calc::binding(), postgres::binding()]
}

/// The binding for Language `name`.
pub fn for_language(name: &str) -> Option<Binding> {
    all().into_iter().find(|b| b.language == name)
}

/// `levels` nested arrays around `inner`: a program part deeper than any sane bound.
pub fn nested(levels: usize, inner: serde_json::Value) -> serde_json::Value {
    (0..levels).fold(inner, |v, _| serde_json::Value::Array(vec![v]))
}
