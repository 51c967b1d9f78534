//! What the gate knows of the upstream's Pilotage surface (which tools validate and execute
//! programs, of which Language, under which argument), and the validations it saw.

use std::collections::HashMap;

use rmcp::model::Tool;
use serde_json::Value;

/// The Pilotage extension's identifier: the `_meta` key of program declarations.
pub const EXT: &str = "io.github.jafarsa0/pilotage";

/// One Language, as the manifest declares it.
#[derive(Clone, Debug)]
pub struct Language {
    /// Its name (`automation/v1`).
    pub name: String,
    /// The validate tool, where declared.
    pub validate: Option<String>,
    /// The catalog tool, where declared.
    pub catalog: Option<String>,
    /// Whether the Language declares `plan`.
    pub plan: bool,
}

/// A tool that takes a program: its declaration in `_meta`.
#[derive(Clone, Debug)]
pub struct ProgramTool {
    /// The program argument (`automation`, `query`).
    pub argument: String,
    /// The declared Language, or every Language of a multi-Language tool.
    pub languages: Vec<String>,
    /// Whether a manifest names this tool as a Language's validate tool.
    pub validates: bool,
    /// Whether its input schema has `expected_catalog_version` (an execute tool's does; a
    /// program tool the manifest does not name, gated all the same, may not).
    pub takes_version: bool,
}

/// The surface learned from `tools/list` and `pilotage_manifest`.
#[derive(Debug, Default)]
pub struct Surface {
    /// Languages by name.
    pub languages: HashMap<String, Language>,
    /// Every tool whose `_meta` declares a program argument, by tool name. Such a tool that is
    /// no Language's validate tool is gated as an execute tool (fail closed).
    pub programs: HashMap<String, ProgramTool>,
}

impl Surface {
    /// The surface of `tools` and `manifest` (the `pilotage_manifest` result's
    /// `structuredContent`; `Null` when the server has none).
    pub fn new(tools: &[Tool], manifest: &Value) -> Surface {
        let mut languages = HashMap::new();
        for l in manifest["languages"].as_array().into_iter().flatten() {
            let Some(name) = l["name"].as_str() else { continue };
            let text = |v: &Value| v.as_str().map(str::to_owned);
            languages.insert(
                name.to_owned(),
                Language {
                    name: name.to_owned(),
                    validate: text(&l["loop"]["validate"]),
                    catalog: text(&l["catalog"]),
                    plan: l["capabilities"]["plan"] == Value::Bool(true),
                },
            );
        }
        let mut programs = HashMap::new();
        for tool in tools {
            let Some(declaration) = tool.meta.as_ref().and_then(|m| m.0.get(EXT)) else { continue };
            let Some(argument) = declaration["argument"].as_str() else { continue };
            let names = match &declaration["language"] {
                Value::String(one) => vec![one.clone()],
                Value::Array(many) => many.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
                _ => Vec::new(),
            };
            let validates = languages.values().any(|l: &Language| l.validate.as_deref() == Some(&*tool.name));
            let takes_version = tool
                .input_schema
                .get("properties")
                .is_some_and(|p| p.get("expected_catalog_version").is_some());
            programs.insert(
                tool.name.to_string(),
                ProgramTool { argument: argument.to_owned(), languages: names, validates, takes_version },
            );
        }
        Surface { languages, programs }
    }

    /// The Language of a call of `tool` with `arguments`: the tool's one Language, or the
    /// `language` argument of a multi-Language tool when it names one of the tool's.
    pub fn language_of(&self, tool: &ProgramTool, arguments: &Value) -> Option<&Language> {
        self.language_named(tool, arguments["language"].as_str())
    }

    /// [`Surface::language_of`] a call whose `language` argument is `named`.
    pub fn language_named(&self, tool: &ProgramTool, named: Option<&str>) -> Option<&Language> {
        let name = match tool.languages.as_slice() {
            [one] => one.as_str(),
            many => many.iter().find(|l| Some(l.as_str()) == named)?.as_str(),
        };
        self.languages.get(name)
    }
}
