//! The declared values of a Language that its manifest entry carries (Part II §4): locator
//! dialect, execution mode, trace ceiling, retention, sub-program trace behaviour, promotion
//! authority.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The diagnostic locator dialect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocatorDialect {
    /// RFC 6901 pointers into a JSON program.
    JsonPointer,
    /// 1-based line/column ranges into a text program.
    TextRange,
}

impl LocatorDialect {
    /// Wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            LocatorDialect::JsonPointer => "json-pointer",
            LocatorDialect::TextRange => "text-range",
        }
    }
}

/// The execution mode of a Language that declares `execute`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecutionMode {
    /// Evaluate during the request.
    Immediate,
    /// Install for later events.
    Deploy,
    /// Either, selected by the reserved `mode` argument.
    Both,
}

impl ExecutionMode {
    /// Wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionMode::Immediate => "immediate",
            ExecutionMode::Deploy => "deploy",
            ExecutionMode::Both => "both",
        }
    }
}

/// A trace level that a trace can have (`none` is only a request value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TraceLevel {
    /// Ids, outcomes, decisions, truncated outputs.
    Summary,
    /// Everything.
    Full,
}

impl TraceLevel {
    /// Wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TraceLevel::Summary => "summary",
            TraceLevel::Full => "full",
        }
    }
    /// Parse a wire name.
    pub fn parse(s: &str) -> Option<TraceLevel> {
        match s {
            "summary" => Some(TraceLevel::Summary),
            "full" => Some(TraceLevel::Full),
            _ => None,
        }
    }
}

/// How long started Runs stay fetchable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Retention {
    /// Not retained.
    None,
    /// For the MCP session.
    Session,
    /// For at least this ISO 8601 duration, across restarts.
    Duration {
        /// The declared text, e.g. `"PT1H"`.
        iso: &'static str,
        /// Its length.
        length: Duration,
    },
}

impl Retention {
    /// Wire value.
    pub fn as_str(&self) -> &'static str {
        match self {
            Retention::None => "none",
            Retention::Session => "session",
            Retention::Duration { iso, .. } => iso,
        }
    }
}

/// Sub-program trace behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceSubprogram {
    /// One entry per call.
    Opaque,
    /// Internal entries inserted with `call#n/` prefixes.
    Expanded,
}

/// Authority model of promoted programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromotionAuthority {
    /// The caller's authority.
    Caller,
    /// The promoter's retained authority.
    Promoter,
}

impl Serialize for TraceLevel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TraceLevel {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        TraceLevel::parse(&s).ok_or_else(|| serde::de::Error::custom("unknown trace level"))
    }
}
