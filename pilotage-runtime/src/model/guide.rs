//! Guides (Part II §5.2): the embedded sources and their wire forms.
//!
//! Guide files are embedded at compile time by `#[pilotage::language(guides = "dir")]`; the
//! runtime computes `size_bytes` and a `version` that changes whenever the content changes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A guide level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GuideLevel {
    /// The minimum instruction set.
    Core,
    /// Complete enumerations and detail.
    Reference,
    /// Worked examples.
    Examples,
}

/// One embedded guide as the engine declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuideSource {
    /// Unique id.
    pub id: &'static str,
    /// Title.
    pub title: &'static str,
    /// Level.
    pub level: GuideLevel,
    /// Topic ids; exactly one guide per Language carries `closed-sets`.
    pub topics: &'static [&'static str],
    /// Markdown body (front matter removed).
    pub body: &'static str,
}

/// The reserved topic of the closed-sets guide.
pub const CLOSED_SETS_TOPIC: &str = "closed-sets";

/// Guide metadata and, in the fetch form, its body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Guide {
    /// Id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Level.
    pub level: GuideLevel,
    /// Topics.
    pub topics: Vec<String>,
    /// Language taught.
    pub language: String,
    /// Changes whenever the content changes.
    pub version: String,
    /// UTF-8 size of the body.
    pub size_bytes: u64,
    /// Media type of the body.
    pub format: String,
    /// The body: only in the fetch form.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

/// `pilotage_get_guide` index form.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GuideIndex {
    /// Every guide of the Language, without bodies.
    pub guides: Vec<Guide>,
}

/// `pilotage_get_guide` fetch and topic forms.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GuideFetch {
    /// The guide with its body (or one topic of it).
    pub guide: Guide,
}

impl GuideSource {
    /// The guide's metadata (and `body` when given) for Language `language`.
    pub fn to_guide(&self, language: &str, body: Option<String>) -> Guide {
        Guide {
            id: self.id.to_owned(),
            title: self.title.to_owned(),
            level: self.level,
            topics: self.topics.iter().map(|t| (*t).to_owned()).collect(),
            language: language.to_owned(),
            version: super::digest::token("g", self.body.as_bytes()),
            size_bytes: self.body.len() as u64,
            format: "text/markdown".to_owned(),
            body,
        }
    }

    /// The section of the body that covers `topic`: from the heading whose text, lowercased
    /// with spaces as `-`, equals the topic (or that carries `{#topic}`) up to the next heading
    /// of the same or a higher level.
    pub fn topic_section(&self, topic: &str) -> Option<&'static str> {
        let body = self.body;
        let mut start = None;
        let mut level = 0usize;
        let mut offset = 0usize;
        for line in body.split_inclusive('\n') {
            let hashes = line.chars().take_while(|c| *c == '#').count();
            if hashes > 0 && line[hashes..].starts_with(' ') {
                if let Some(s) = start {
                    if hashes <= level {
                        return Some(&body[s..offset]);
                    }
                } else if heading_names(&line[hashes..], topic) {
                    start = Some(offset);
                    level = hashes;
                }
            }
            offset += line.len();
        }
        start.map(|s| &body[s..])
    }
}

fn heading_names(text: &str, topic: &str) -> bool {
    let text = text.trim();
    if let Some(anchor) = text.split("{#").nth(1) {
        return anchor.trim_end_matches('}').trim() == topic;
    }
    let slug: String = text
        .chars()
        .map(|c| if c == ' ' { '-' } else { c.to_ascii_lowercase() })
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    slug == topic
}
