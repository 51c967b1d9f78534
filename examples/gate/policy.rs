//! The Host policy (Part II §7.3's "previously established Host policy"): per server and
//! Language, the risk hints a person approved in advance; and the audit line of every gated
//! execute.
//!
//! The policy file is JSON:
//!
//! ```json
//! { "servers": { "automation": { "automation/v1": ["openWorld"] } } }
//! ```
//!
//! Server names are the upstream's `serverInfo.name`. Hints are `openWorld` and `destructive`,
//! each only where written: there is no wildcard, and unknown risk is never pre-approved.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{bail, Context};
use serde_json::Value;

use crate::decide::Risk;

/// The pre-approvals, by server name then Language name.
#[derive(Debug, Default)]
pub struct Policy {
    file: Option<PathBuf>,
    servers: HashMap<String, HashMap<String, Hints>>,
}

/// The hints pre-approved for one server's Language.
#[derive(Clone, Copy, Debug, Default)]
struct Hints {
    destructive: bool,
    open_world: bool,
}

impl Policy {
    /// Read a policy file; anything but the documented shape is an error (the gate does not
    /// start on a policy it cannot read).
    pub fn load(path: &Path) -> anyhow::Result<Policy> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the policy {}", path.display()))?;
        let value: Value = serde_json::from_str(&text)
            .with_context(|| format!("the policy {} is not JSON", path.display()))?;
        let mut policy = Policy { file: Some(path.to_owned()), servers: HashMap::new() };
        let Some(servers) = value.get("servers").and_then(Value::as_object) else {
            bail!("the policy {} has no `servers` object", path.display());
        };
        for (server, languages) in servers {
            let Some(languages) = languages.as_object() else {
                bail!("policy: `servers.{server}` is not an object of Languages");
            };
            let mut by_language = HashMap::new();
            for (language, hints) in languages {
                let mut approved = Hints::default();
                for hint in hints.as_array().into_iter().flatten() {
                    match hint.as_str() {
                        Some("destructive") => approved.destructive = true,
                        Some("openWorld") => approved.open_world = true,
                        _ => bail!(
                            "policy: `{server}` `{language}`: {hint} is not `openWorld` or `destructive`"
                        ),
                    }
                }
                if !hints.is_array() {
                    bail!("policy: `{server}` `{language}` is not a list of risk hints");
                }
                by_language.insert(language.clone(), approved);
            }
            policy.servers.insert(server.clone(), by_language);
        }
        Ok(policy)
    }

    /// Whether the policy approves `risk` for `server`'s `language`: every risky hint of it
    /// pre-approved. Unknown risk is never approved by a policy.
    pub fn approves(&self, server: &str, language: &str, risk: Risk) -> bool {
        let Some(approved) = self.servers.get(server).and_then(|l| l.get(language)) else { return false };
        match risk {
            Risk::Risky { destructive, open_world } => {
                (!destructive || approved.destructive) && (!open_world || approved.open_world)
            }
            Risk::Safe | Risk::Unknown => false,
        }
    }

    /// The policy file, for the audit line.
    pub fn file(&self) -> String {
        self.file.as_ref().map(|p| p.display().to_string()).unwrap_or_default()
    }
}

/// Where the audit lines go: stderr, or a file opened for appending.
pub struct Audit(Mutex<Box<dyn Write + Send>>);

impl Audit {
    /// The audit to `file`, or to stderr.
    pub fn open(file: Option<&Path>) -> anyhow::Result<Audit> {
        let out: Box<dyn Write + Send> = match file {
            Some(path) => Box::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .with_context(|| format!("opening the audit file {}", path.display()))?,
            ),
            None => Box::new(std::io::stderr()),
        };
        Ok(Audit(Mutex::new(out)))
    }

    /// Write one line (a JSON object), flushed: made whole first and written with one `write`,
    /// so that a line is never torn among other writers of the same file or stderr, and costs
    /// one system call instead of one per JSON token (stderr is unbuffered).
    pub fn line(&self, line: &str) {
        let mut text = String::with_capacity(line.len() + 1);
        text.push_str(line);
        text.push('\n');
        let mut out = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    }
}

#[cfg(test)]
mod tests {
    use super::Policy;
    use crate::decide::Risk;

    fn load(text: &str) -> anyhow::Result<Policy> {
        let dir = std::env::temp_dir().join(format!("gate-policy-{}-{}", std::process::id(), text.len()));
        std::fs::write(&dir, text).unwrap();
        let policy = Policy::load(&dir);
        let _ = std::fs::remove_file(&dir);
        policy
    }

    #[test]
    fn only_what_is_written_is_approved() {
        let p = load(
            r#"{"servers": {"api": {"http/v1": ["openWorld"], "sql/v1": ["destructive", "openWorld"]}}}"#,
        )
        .unwrap();
        let out = Risk::Risky { destructive: false, open_world: true };
        let gone = Risk::Risky { destructive: true, open_world: false };
        assert!(p.approves("api", "http/v1", out));
        assert!(!p.approves("api", "http/v1", gone), "destructive is approved only where written");
        assert!(p.approves("api", "sql/v1", gone));
        assert!(!p.approves("api", "sql/v1", Risk::Unknown), "unknown risk is never pre-approved");
        assert!(!p.approves("other", "http/v1", out));
        assert!(!p.approves("api", "calc/v1", out));
    }

    #[test]
    fn a_policy_it_cannot_read_stops_the_gate() {
        assert!(load(r#"{"servers": {"api": {"http/v1": ["*"]}}}"#).is_err());
        assert!(load(r#"{"servers": {"api": {"http/v1": "openWorld"}}}"#).is_err());
        assert!(load(r#"{"servers": []}"#).is_err());
        assert!(load("not json").is_err());
    }
}
