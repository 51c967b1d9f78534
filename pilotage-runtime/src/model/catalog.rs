//! Catalog entries (Part II §5.4) and the lookup responses (Part III §4.2).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::closed_sets::{EntryKind, RiskLevel};
use super::risk::RiskHints;

/// One environment-bound name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CatalogEntry {
    /// Stable id.
    pub id: String,
    /// Member of the entry-kind set.
    pub kind: String,
    /// Human-readable name.
    pub name: String,
    /// Description (server-authored).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Input shape, required for callable kinds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
    /// Output shape when statically known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Engine-defined risk level.
    pub risk: String,
    /// Generic risk hints.
    pub risk_hints: RiskHints,
    /// Grouping labels.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub tags: Vec<String>,
    /// Languages that may reference the entry (absent: all).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub languages: Option<Vec<String>>,
    /// Opaque token that changes when the entry changes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
}

impl CatalogEntry {
    /// A new entry of kind `K` with risk `R`. A callable kind gets a permissive
    /// `{"type":"object"}` input schema until [`Self::input_schema`] sets one.
    ///
    /// ```
    /// use pilotage_runtime::model::catalog::CatalogEntry;
    /// use pilotage_runtime::model::closed_sets::{EntryKind, KindMember, RiskLevel, RiskMember};
    /// use pilotage_runtime::model::risk::RiskHints;
    /// #[derive(Clone, Copy)] struct Cap;
    /// impl EntryKind for Cap {
    ///     const MEMBERS: &'static [KindMember] = &[KindMember { name: "capability", callable: true }];
    ///     fn wire(self) -> &'static str { "capability" }
    ///     fn callable(self) -> bool { true }
    /// }
    /// #[derive(Clone, Copy)] struct Safe;
    /// impl RiskLevel for Safe {
    ///     const MEMBERS: &'static [RiskMember] = &[RiskMember { name: "safe", hints: RiskHints::READ_ONLY }];
    ///     fn wire(self) -> &'static str { "safe" }
    ///     fn hints(self) -> RiskHints { RiskHints::READ_ONLY }
    ///     fn rank(self) -> usize { 0 }
    /// }
    /// let e = CatalogEntry::new("cap_read", Cap, "Read", Safe).description("Reads.");
    /// assert_eq!(e.kind, "capability");
    /// assert!(e.risk_hints.read_only);
    /// assert!(e.input_schema.is_some());
    /// ```
    pub fn new<K: EntryKind, R: RiskLevel>(
        id: impl Into<String>,
        kind: K,
        name: impl Into<String>,
        risk: R,
    ) -> Self {
        CatalogEntry {
            id: id.into(),
            kind: kind.wire().to_owned(),
            name: name.into(),
            description: None,
            input_schema: kind.callable().then(|| serde_json::json!({"type": "object"})),
            output_schema: None,
            risk: risk.wire().to_owned(),
            risk_hints: risk.hints(),
            tags: Vec::new(),
            languages: None,
            revision: None,
        }
    }
    /// Set the description.
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.description = Some(d.into());
        self
    }
    /// Set the input schema.
    pub fn input_schema(mut self, s: Value) -> Self {
        self.input_schema = Some(s);
        self
    }
    /// Set the output schema.
    pub fn output_schema(mut self, s: Value) -> Self {
        self.output_schema = Some(s);
        self
    }
    /// Add a tag.
    pub fn tag(mut self, t: impl Into<String>) -> Self {
        self.tags.push(t.into());
        self
    }
    /// Restrict the entry to some Languages.
    pub fn languages(mut self, l: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.languages = Some(l.into_iter().map(Into::into).collect());
        self
    }
    /// Set the revision token.
    pub fn revision(mut self, r: impl Into<String>) -> Self {
        self.revision = Some(r.into());
        self
    }

    /// The defined fields that drive `catalog_version`: everything but `revision`.
    pub(crate) fn versioned_form(&self) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut v {
            m.remove("revision");
        }
        v
    }
}

/// `list` response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CatalogList {
    /// The page.
    pub items: Vec<CatalogEntry>,
    /// Present when more results remain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// The caller-scoped token.
    pub catalog_version: String,
}

/// `get` response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CatalogGet {
    /// The entry.
    pub entry: CatalogEntry,
    /// The caller-scoped token.
    pub catalog_version: String,
}

/// One change reported by `changed_since`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CatalogChange {
    /// Entry id.
    pub id: String,
    /// `added`, `removed` or `modified`.
    pub change: ChangeKind,
}

/// The closed change set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// New visible entry.
    Added,
    /// Entry no longer visible.
    Removed,
    /// A defined field changed.
    Modified,
}

/// `changed_since` response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CatalogChanges {
    /// The current token.
    pub catalog_version: String,
    /// Changes since the supplied token.
    pub changes: Vec<CatalogChange>,
}
