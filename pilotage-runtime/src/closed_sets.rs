//! Closed sets as types (Part II §1.5): diagnostic codes, risk levels, run and step statuses,
//! catalog entry kinds.
//!
//! An engine declares each set as a Rust enum with a derive from `pilotage` (`Codes`,
//! `RiskLevels`, `Statuses`, `EntryKinds`); the derive implements the trait here. A value
//! outside the set then cannot be written, and the reserved members the specification
//! requires are always part of the set the manifest, guide check and runtime read.

use crate::risk::RiskHints;

/// The reserved diagnostic codes every Language carries (Part II §5.5).
pub const RESERVED_CODES: [&str; 3] = ["constraint", "input_binding", "context_binding"];

/// The reserved run statuses (Part II §5.7), each with its `ok` value and whether side effects
/// may have occurred.
pub const RESERVED_STATUSES: [StatusMember; 6] = [
    StatusMember::new("success", true, true),
    StatusMember::new("validation_error", false, false),
    StatusMember::new("catalog_drift", false, false),
    StatusMember::new("promotion_drift", false, false),
    StatusMember::new("partial", false, true),
    StatusMember::new("error", false, true),
];

/// A Language's closed diagnostic-code set. Implemented by `#[derive(pilotage::Codes)]`.
pub trait DiagnosticCode: Copy + Send + Sync + 'static {
    /// The engine-defined members' wire names (the reserved three are added by [`all_codes`]).
    const MEMBERS: &'static [&'static str];
    /// This code's wire name.
    fn wire(self) -> &'static str;
}

/// The full code set of `C`: the engine's members followed by the reserved codes.
pub fn all_codes<C: DiagnosticCode>() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = C::MEMBERS.to_vec();
    all.extend(RESERVED_CODES.iter().filter(|r| !C::MEMBERS.contains(r)));
    all
}

/// One member of a risk-level set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RiskMember {
    /// Wire name, e.g. `"safe"`.
    pub name: &'static str,
    /// Its hints.
    pub hints: RiskHints,
}

/// A Language's engine-defined risk levels, ordered from least to most risky.
/// Implemented by `#[derive(pilotage::RiskLevels)]`.
pub trait RiskLevel: Copy + Send + Sync + 'static {
    /// Every level in declaration order (least risky first).
    const MEMBERS: &'static [RiskMember];
    /// This level's wire name.
    fn wire(self) -> &'static str;
    /// This level's hints.
    fn hints(self) -> RiskHints;
    /// Position in [`Self::MEMBERS`].
    fn rank(self) -> usize;
}

/// One member of a status set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatusMember {
    /// Wire name.
    pub name: &'static str,
    /// The `ok` value of an outcome with this status.
    pub ok: bool,
    /// Whether side effects may have occurred.
    pub side_effects: bool,
}

impl StatusMember {
    /// A member.
    pub const fn new(name: &'static str, ok: bool, side_effects: bool) -> Self {
        StatusMember { name, ok, side_effects }
    }
}

/// Engine-defined failure statuses (used at run and step level) beside the reserved ones.
/// Implemented by `#[derive(pilotage::Statuses)]`; engines without their own use [`NoStatus`].
pub trait RunStatus: Copy + Send + Sync + 'static {
    /// The engine-defined members (all with `ok: false`).
    const MEMBERS: &'static [StatusMember];
    /// This status's wire name.
    fn wire(self) -> &'static str;
}

/// The full status set of `S`: reserved statuses followed by the engine's.
pub fn all_statuses<S: RunStatus>() -> Vec<StatusMember> {
    let mut all = RESERVED_STATUSES.to_vec();
    all.extend_from_slice(S::MEMBERS);
    all
}

/// The empty engine-defined status set: only the reserved statuses exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoStatus {}

impl RunStatus for NoStatus {
    const MEMBERS: &'static [StatusMember] = &[];
    fn wire(self) -> &'static str {
        match self {}
    }
}

/// One member of a catalog entry-kind set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KindMember {
    /// Wire name, e.g. `"capability"`.
    pub name: &'static str,
    /// Whether steps can invoke entries of this kind (callable kinds declare `input_schema`).
    pub callable: bool,
}

/// A Language's catalog entry kinds. Implemented by `#[derive(pilotage::EntryKinds)]`.
pub trait EntryKind: Copy + Send + Sync + 'static {
    /// Every kind.
    const MEMBERS: &'static [KindMember];
    /// The kind promoted programs are exposed as (`#[kind(promoted)]`), if the Language has
    /// promoted programs. It is callable.
    const PROMOTED: Option<&'static str> = None;
    /// Wire name.
    fn wire(self) -> &'static str;
    /// Whether entries of this kind are callable.
    fn callable(self) -> bool;
}

/// The empty kind set, for Languages without a catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoKind {}

impl EntryKind for NoKind {
    const MEMBERS: &'static [KindMember] = &[];
    fn wire(self) -> &'static str {
        match self {}
    }
    fn callable(self) -> bool {
        match self {}
    }
}

/// The declared closed sets of one Language, as the manifest builder and guide check read them.
#[derive(Clone, Debug, Default)]
pub struct ClosedSets {
    /// Diagnostic codes, reserved included.
    pub codes: Vec<&'static str>,
    /// Risk levels, least risky first.
    pub risks: Vec<RiskMember>,
    /// Statuses, reserved included.
    pub statuses: Vec<StatusMember>,
    /// Entry kinds.
    pub kinds: Vec<KindMember>,
    /// The promoted-program kind, when the Language has promoted programs.
    pub promoted: Option<&'static str>,
}

impl ClosedSets {
    /// The sets of the four types.
    pub fn of<C: DiagnosticCode, R: RiskLevel, S: RunStatus, K: EntryKind>() -> Self {
        ClosedSets {
            codes: all_codes::<C>(),
            risks: R::MEMBERS.to_vec(),
            statuses: all_statuses::<S>(),
            kinds: K::MEMBERS.to_vec(),
            promoted: K::PROMOTED,
        }
    }

    /// Whether `code` is a member.
    pub fn has_code(&self, code: &str) -> bool {
        self.codes.contains(&code)
    }

    /// The status member named `name`.
    pub fn status(&self, name: &str) -> Option<StatusMember> {
        self.statuses.iter().copied().find(|s| s.name == name)
    }
}
