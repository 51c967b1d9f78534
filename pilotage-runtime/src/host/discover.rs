//! Discovery (Part III §3): the manifest from the initialize (or `server/discover`) metadata
//! when present, else from `pilotage_manifest`; the tool list the requests are built from; and
//! the checks a manifest must pass before the Host uses it.

use std::time::Instant;

use serde_json::{Map, Value};

use super::carrier::{Carrier, ToolInfo};
use super::error::HostError;
use super::limits::HostLimits;
use super::results::structured;
use crate::model::manifest::{LanguageEntry, Manifest, EXTENSION_ID, MANIFEST_TOOL};

/// What one discovery found.
#[derive(Clone, Debug)]
pub(crate) struct Discovered {
    pub manifest: Manifest,
    /// The manifest exactly as the server sent it (unknown members included).
    pub raw: Value,
    pub tools: Vec<ToolInfo>,
    pub at: Instant,
}

impl Discovered {
    pub fn language(&self, name: &str) -> Result<&LanguageEntry, HostError> {
        self.manifest
            .languages
            .iter()
            .find(|l| l.name == name)
            .ok_or_else(|| HostError::UnknownLanguage(name.to_owned()))
    }

    pub fn tool(&self, name: &str) -> Result<&ToolInfo, HostError> {
        self.tools.iter().find(|t| t.name == name).ok_or_else(|| {
            HostError::Unsupported(format!("the manifest names the tool {name}, which tools/list lacks"))
        })
    }
}

/// Discover: the tool list, then the manifest. The initialize accelerator is used only when
/// `accelerated` (the first discovery of a session, Part III §3.3); every rediscovery asks
/// `pilotage_manifest`, the authoritative, newer source.
pub(crate) async fn discover(
    carrier: &Carrier,
    limits: &HostLimits,
    accelerated: bool,
) -> Result<Discovered, HostError> {
    let tools = carrier.list_tools(limits).await?;
    let inline =
        if accelerated { carrier.accelerator().and_then(|a| a.get("manifest").cloned()) } else { None };
    let value = match inline {
        Some(manifest) => manifest,
        // Asked even when tools/list does not name it: only its answer says "unsupported".
        None => {
            let answer = carrier.call_tool(MANIFEST_TOOL, Map::new(), limits.request_timeout).await;
            match answer {
                Ok(answer) => structured(answer, MANIFEST_TOOL)?,
                Err(HostError::Carrier { code, message }) => {
                    return Err(HostError::Manifest(format!(
                        "{MANIFEST_TOOL} is not served ({code}: {message})"
                    )))
                }
                Err(other) => return Err(other),
            }
        }
    };
    let manifest = check_manifest(value.clone())?;
    Ok(Discovered { manifest, raw: value, tools, at: Instant::now() })
}

/// The manifest, if it reads as one this Host can use: the Part II §5.1 shape, Pilotage major
/// version 1, at least one Language, and every entry consistent (Part II §4.3).
///
/// ```
/// use pilotage_runtime::host::check_manifest;
/// assert!(check_manifest(serde_json::json!({"pilotage": "1.1", "languages": []})).is_err());
/// ```
pub fn check_manifest(value: Value) -> Result<Manifest, HostError> {
    let manifest: Manifest = serde_json::from_value(value)
        .map_err(|e| HostError::Manifest(format!("not a Pilotage manifest: {e}")))?;
    if manifest.pilotage.split('.').next() != Some("1") {
        return Err(HostError::Manifest(format!("Pilotage version {:?} is not 1.x", manifest.pilotage)));
    }
    if manifest.languages.is_empty() {
        return Err(HostError::Manifest("the manifest declares no Language".into()));
    }
    let violations: Vec<String> = manifest.languages.iter().flat_map(LanguageEntry::violations).collect();
    if !violations.is_empty() {
        return Err(HostError::Manifest(violations.join("; ")));
    }
    Ok(manifest)
}

/// The argument that carries a `language` program on `tool`, read only from the tool's
/// Pilotage declaration under the registered `_meta` key (Part III §5): the single form or
/// the `languages` array.
pub(crate) fn program_argument(tool: &ToolInfo, language: &str) -> Result<String, HostError> {
    let declaration = tool.meta.as_ref().and_then(|m| m.get(EXTENSION_ID));
    let single = declaration.filter(|d| d.get("language").and_then(Value::as_str) == Some(language));
    let many = declaration
        .and_then(|d| d.get("languages"))
        .and_then(Value::as_array)
        .and_then(|all| all.iter().find(|d| d.get("language").and_then(Value::as_str) == Some(language)));
    single
        .or(many)
        .and_then(|d| d.get("argument"))
        .and_then(Value::as_str)
        .filter(|a| !a.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| {
            HostError::Unsupported(format!(
                "the tool {} carries no program declaration for {language} (Part III §5)",
                tool.name
            ))
        })
}

/// Whether `tool`'s `inputSchema` declares the member `name`.
pub(crate) fn declares(tool: &ToolInfo, name: &str) -> bool {
    tool.input_schema.get("properties").and_then(Value::as_object).is_some_and(|p| p.contains_key(name))
}
