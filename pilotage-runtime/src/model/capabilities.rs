//! Capability declarations and the effective capability map (Part II §4).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The six declarable capabilities (the manifest is always present and not declared).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Capability {
    /// Teaching material.
    Guides,
    /// A versioned inventory of environment-bound names.
    Catalog,
    /// A side-effect-free checker.
    Validate,
    /// Plans on valid validation results.
    Plan,
    /// Programs can run.
    Execute,
    /// Stored traces can be fetched.
    TraceFetch,
}

impl Capability {
    /// Every capability.
    pub const ALL: [Capability; 6] = [
        Capability::Guides,
        Capability::Catalog,
        Capability::Validate,
        Capability::Plan,
        Capability::Execute,
        Capability::TraceFetch,
    ];

    /// The wire identifier.
    pub fn as_str(self) -> &'static str {
        match self {
            Capability::Guides => "guides",
            Capability::Catalog => "catalog",
            Capability::Validate => "validate",
            Capability::Plan => "plan",
            Capability::Execute => "execute",
            Capability::TraceFetch => "trace_fetch",
        }
    }

    /// The capabilities this one requires (Part II §4.3 rule 3).
    pub fn requires(self) -> &'static [Capability] {
        match self {
            Capability::Validate => &[Capability::Guides],
            Capability::Plan | Capability::Execute => &[Capability::Validate],
            Capability::TraceFetch => &[Capability::Execute],
            Capability::Guides | Capability::Catalog => &[],
        }
    }
}

/// A sub-feature and the capability it refines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SubFeature {
    /// `catalog.search`
    Search,
    /// `catalog.changed_since`
    ChangedSince,
    /// `guides.topic_fetch`
    TopicFetch,
    /// `execute.test_run`
    TestRun,
    /// `execute.idempotency`
    Idempotency,
    /// `trace_fetch.narrate`
    Narrate,
}

impl SubFeature {
    /// The parent capability.
    pub fn parent(self) -> Capability {
        match self {
            SubFeature::Search | SubFeature::ChangedSince => Capability::Catalog,
            SubFeature::TopicFetch => Capability::Guides,
            SubFeature::TestRun | SubFeature::Idempotency => Capability::Execute,
            SubFeature::Narrate => Capability::TraceFetch,
        }
    }
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            SubFeature::Search => "search",
            SubFeature::ChangedSince => "changed_since",
            SubFeature::TopicFetch => "topic_fetch",
            SubFeature::TestRun => "test_run",
            SubFeature::Idempotency => "idempotency",
            SubFeature::Narrate => "narrate",
        }
    }
}

/// Sub-feature booleans of one capability.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CapabilitySettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[allow(missing_docs)]
    pub search: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[allow(missing_docs)]
    pub changed_since: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[allow(missing_docs)]
    pub topic_fetch: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[allow(missing_docs)]
    pub test_run: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[allow(missing_docs)]
    pub idempotency: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[allow(missing_docs)]
    pub narrate: Option<bool>,
}

impl CapabilitySettings {
    fn slot(&mut self, f: SubFeature) -> &mut Option<bool> {
        match f {
            SubFeature::Search => &mut self.search,
            SubFeature::ChangedSince => &mut self.changed_since,
            SubFeature::TopicFetch => &mut self.topic_fetch,
            SubFeature::TestRun => &mut self.test_run,
            SubFeature::Idempotency => &mut self.idempotency,
            SubFeature::Narrate => &mut self.narrate,
        }
    }
    fn get(&self, f: SubFeature) -> bool {
        let v = match f {
            SubFeature::Search => self.search,
            SubFeature::ChangedSince => self.changed_since,
            SubFeature::TopicFetch => self.topic_fetch,
            SubFeature::TestRun => self.test_run,
            SubFeature::Idempotency => self.idempotency,
            SubFeature::Narrate => self.narrate,
        };
        v == Some(true)
    }
}

/// `true`/`false` or a sub-feature object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum CapabilityValue {
    /// Declared (`true`) or explicitly undeclared (`false`).
    Flag(bool),
    /// Declared with sub-features.
    Settings(CapabilitySettings),
}

/// A capability declaration: capability → value (Part II §4.2).
///
/// ```
/// use pilotage_runtime::model::capabilities::*;
/// let caps = CapabilityDeclaration::new()
///     .with(Capability::Guides)
///     .with(Capability::Validate)
///     .with_sub(SubFeature::Search);
/// assert!(caps.declares(Capability::Catalog));
/// assert!(caps.declares_sub(SubFeature::Search));
/// assert!(!caps.declares_sub(SubFeature::ChangedSince));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CapabilityDeclaration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[allow(missing_docs)]
    pub guides: Option<CapabilityValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[allow(missing_docs)]
    pub catalog: Option<CapabilityValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[allow(missing_docs)]
    pub validate: Option<CapabilityValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[allow(missing_docs)]
    pub plan: Option<CapabilityValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[allow(missing_docs)]
    pub execute: Option<CapabilityValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[allow(missing_docs)]
    pub trace_fetch: Option<CapabilityValue>,
}

impl CapabilityDeclaration {
    /// An empty declaration.
    pub fn new() -> Self {
        Self::default()
    }

    fn slot(&mut self, c: Capability) -> &mut Option<CapabilityValue> {
        match c {
            Capability::Guides => &mut self.guides,
            Capability::Catalog => &mut self.catalog,
            Capability::Validate => &mut self.validate,
            Capability::Plan => &mut self.plan,
            Capability::Execute => &mut self.execute,
            Capability::TraceFetch => &mut self.trace_fetch,
        }
    }

    /// The value declared for `c`, if any.
    pub fn get(&self, c: Capability) -> Option<&CapabilityValue> {
        match c {
            Capability::Guides => self.guides.as_ref(),
            Capability::Catalog => self.catalog.as_ref(),
            Capability::Validate => self.validate.as_ref(),
            Capability::Plan => self.plan.as_ref(),
            Capability::Execute => self.execute.as_ref(),
            Capability::TraceFetch => self.trace_fetch.as_ref(),
        }
    }

    /// Declare `c` (as `true`, unless it already has sub-features).
    pub fn with(mut self, c: Capability) -> Self {
        let slot = self.slot(c);
        if !matches!(slot, Some(CapabilityValue::Settings(_))) {
            *slot = Some(CapabilityValue::Flag(true));
        }
        self
    }

    /// Explicitly undeclare `c` (`false`), e.g. to override a server-level default.
    pub fn without(mut self, c: Capability) -> Self {
        *self.slot(c) = Some(CapabilityValue::Flag(false));
        self
    }

    /// Declare a sub-feature (and so its parent).
    pub fn with_sub(mut self, f: SubFeature) -> Self {
        let slot = self.slot(f.parent());
        let mut settings = match slot.take() {
            Some(CapabilityValue::Settings(s)) => s,
            _ => CapabilitySettings::default(),
        };
        *settings.slot(f) = Some(true);
        *slot = Some(CapabilityValue::Settings(settings));
        self
    }

    /// Whether `c` is declared: present and not `false`.
    pub fn declares(&self, c: Capability) -> bool {
        matches!(self.get(c), Some(CapabilityValue::Flag(true)) | Some(CapabilityValue::Settings(_)))
    }

    /// Whether a sub-feature is declared: parent declared and its own value `true`.
    pub fn declares_sub(&self, f: SubFeature) -> bool {
        match self.get(f.parent()) {
            Some(CapabilityValue::Settings(s)) => s.get(f),
            _ => false,
        }
    }

    /// The effective map of a Language (Part II §4.2): for each capability the Language-level
    /// value governs in full when present, otherwise the server-level default.
    pub fn effective(server: Option<&CapabilityDeclaration>, language: &CapabilityDeclaration) -> Self {
        let mut out = CapabilityDeclaration::new();
        for c in Capability::ALL {
            let v = language.get(c).or_else(|| server.and_then(|s| s.get(c))).cloned();
            *out.slot(c) = v;
        }
        out
    }

    /// The Part II §4.3 rules this map violates (floor and requirements), as messages.
    pub fn rule_violations(&self) -> Vec<String> {
        let mut out = Vec::new();
        for floor in [Capability::Guides, Capability::Validate] {
            if !self.declares(floor) {
                out.push(format!("the minimum capability floor requires `{}`", floor.as_str()));
            }
        }
        for c in Capability::ALL {
            if !self.declares(c) {
                continue;
            }
            for r in c.requires() {
                if !self.declares(*r) {
                    out.push(format!("`{}` requires `{}`", c.as_str(), r.as_str()));
                }
            }
        }
        out
    }
}
