//! The standard loop's Host duties (Part II §7): validate, the gate, execute, drift recovery.
//! A [`Language`] is one Language of a [`Host`]; its requests are built from the discovery
//! (see [`super::requests`]) and their answers read as typed values (see [`super::results`]).

use serde_json::{json, Value};

use super::connect::Host;
use super::error::HostError;
use super::gate::{decide, decide_promoted, Approval, GateDecision, GateRequest, Runnable};
use super::requests::{execute_request, idempotent, validate_request, ExecuteOptions, ValidateOptions};
use super::results::{execute_response, structured, typed, validate_response, RunStatus};
use crate::model::catalog::{CatalogEntry, CatalogGet};
use crate::model::diagnostic::{Diagnostic, Severity};
use crate::model::execution::ExecuteResponse;
use crate::model::guide::{Guide, GuideFetch, GuideIndex};
use crate::model::plan::{Plan, ValidateResponse};

/// The most references whose entries the gate looks up for one Run; more, and the Run needs
/// approval (the entries not looked up count as unknown).
pub const MAX_GATE_LOOKUPS: usize = 256;

/// One Language of a [`Host`].
pub struct Language<'h> {
    host: &'h Host,
    name: String,
}

/// A validation's answer, kept with the program it judged: the input to
/// [`Language::execute`].
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    language: String,
    program: Value,
    response: ValidateResponse,
}

impl Verdict {
    /// `valid: true` and no error-severity diagnostic (Part II §7.2).
    pub fn valid(&self) -> bool {
        self.response.valid && !self.response.diagnostics.iter().any(|d| d.severity == Severity::Error)
    }
    /// Every diagnostic.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.response.diagnostics
    }
    /// The plan, when the Language plans.
    pub fn plan(&self) -> Option<&Plan> {
        self.response.plan.as_ref()
    }
    /// The whole response.
    pub fn response(&self) -> &ValidateResponse {
        &self.response
    }
    /// The program judged.
    pub fn program(&self) -> &Value {
        &self.program
    }
    /// The Language.
    pub fn language(&self) -> &str {
        &self.language
    }
}

/// A Run the server answered (every outcome, failures included, is a value).
#[derive(Clone, Debug, PartialEq)]
pub struct Ran {
    /// The execute response (`structuredContent`).
    pub response: ExecuteResponse,
    /// The outcome's status, classified (an unknown `ok: false` status is `Partial`).
    pub status: RunStatus,
    /// The idempotency key sent, if the Language takes keys.
    pub idempotency_key: Option<String>,
}

/// A Run the gate held and the approver did not grant: the server saw no execute request.
#[derive(Clone, Debug, PartialEq)]
pub struct Denial {
    /// What the approver was asked.
    pub request: GateRequest,
    /// The approver's reason.
    pub reason: String,
}

/// What an execute came to.
#[derive(Clone, Debug, PartialEq)]
pub enum Execution {
    /// The server ran (or refused) it; see [`Ran::status`].
    Ran(Ran),
    /// The gate held it and approval was not granted.
    Denied(Denial),
}

/// What [`Language::run`] came to.
#[derive(Clone, Debug, PartialEq)]
pub enum Attempt {
    /// The program is invalid: revise it with these diagnostics (nothing was executed).
    Invalid(Verdict),
    /// Executed, or held by the gate.
    Executed(Execution),
}

impl Host {
    /// The Language `name`, for the loop (an error when the manifest does not declare it).
    pub fn language(&self, name: &str) -> Result<Language<'_>, HostError> {
        self.snapshot().language(name)?;
        Ok(Language { host: self, name: name.to_owned() })
    }
}

impl<'h> Language<'h> {
    /// The Language's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The guide index (Part III §4.1).
    pub async fn guides(&self) -> Result<Vec<Guide>, HostError> {
        let found = self.host.current().await?;
        let entry = found.language(&self.name)?;
        let args = json!({"language": self.name});
        let answer = self.host.call(&entry.guides, object(args), self.host.limits().request_timeout).await?;
        Ok(typed::<GuideIndex>(structured(answer, &entry.guides)?, &entry.guides)?.guides)
    }

    /// One guide with its body, no longer than [`HostLimits::max_guide_bytes`](super::HostLimits).
    pub async fn guide(&self, id: &str) -> Result<Guide, HostError> {
        let found = self.host.current().await?;
        let entry = found.language(&self.name)?;
        let args = json!({"language": self.name, "id": id});
        let answer = self.host.call(&entry.guides, object(args), self.host.limits().request_timeout).await?;
        let value = structured(answer, &entry.guides)?;
        let limit = self.host.limits().max_guide_bytes;
        if value["guide"]["body"].as_str().is_some_and(|b| b.len() > limit) {
            return Err(HostError::TooLarge { what: format!("the guide {id}"), limit });
        }
        Ok(typed::<GuideFetch>(value, &entry.guides)?.guide)
    }

    /// A catalog entry and the current `catalog_version` (`get`, Part III §4.2).
    pub async fn entry(&self, id: &str) -> Result<CatalogGet, HostError> {
        let found = self.host.current().await?;
        let entry = found.language(&self.name)?;
        let tool = entry
            .catalog
            .clone()
            .ok_or_else(|| HostError::Unsupported(format!("{} has no catalog", self.name)))?;
        let args = json!({"language": self.name, "verb": "get", "id": id});
        let answer = self.host.call(&tool, object(args), self.host.limits().request_timeout).await?;
        typed(structured(answer, &tool)?, &tool)
    }

    /// Validate `program`. Invalid programs are `Ok` values ([`Verdict::valid`] false).
    pub async fn validate(&self, program: Value) -> Result<Verdict, HostError> {
        self.validate_with(program, &ValidateOptions::default()).await
    }

    /// Validate `program` with `options`.
    pub async fn validate_with(
        &self,
        program: Value,
        options: &ValidateOptions,
    ) -> Result<Verdict, HostError> {
        let found = self.host.current().await?;
        let entry = found.language(&self.name)?;
        let (tool, args) = validate_request(&found, entry, &program, options)?;
        let answer = self.host.call(&tool, args, self.host.limits().request_timeout).await?;
        let response = validate_response(answer, &tool)?;
        Ok(Verdict { language: self.name.clone(), program, response })
    }

    /// Execute the program `verdict` judged, through the gate: refused (nothing sent) while an
    /// error-severity diagnostic stands; held until the approver grants it when the plan, the
    /// references' entries or missing risk information say so. The request carries the
    /// validation's `catalog_version` and a trace level of at least `summary`.
    pub async fn execute(&self, verdict: &Verdict, options: &ExecuteOptions) -> Result<Execution, HostError> {
        if verdict.language != self.name {
            return Err(HostError::Loop(format!(
                "a verdict of {} executed as {}",
                verdict.language, self.name
            )));
        }
        if !verdict.valid() {
            return Err(HostError::Loop(
                "an error-severity diagnostic stands: revise and validate again".into(),
            ));
        }
        let entries = self.referenced_entries(&verdict.response).await;
        let decision = decide(&self.name, &verdict.program, &verdict.response, &entries);
        let runnable = Runnable::Program(verdict.program.clone());
        self.gated(decision, runnable, verdict.response.catalog_version.as_deref(), options).await
    }

    /// Execute the promoted program `program_ref` (Part II §7.4): its entry is looked up for
    /// its `risk_hints` and the current token, the gate applied to the entry's hints.
    pub async fn execute_promoted(
        &self,
        program_ref: &str,
        options: &ExecuteOptions,
    ) -> Result<Execution, HostError> {
        let got = self.entry(program_ref).await?;
        let decision = decide_promoted(&self.name, program_ref, Some(&got.entry));
        let runnable = Runnable::Promoted(program_ref.to_owned());
        self.gated(decision, runnable, Some(&got.catalog_version), options).await
    }

    /// The loop for `program`: validate; when invalid, hand the verdict back; else execute
    /// through the gate, and after `catalog_drift` validate again against the current snapshot
    /// and resume, at most [`HostLimits::max_drift_recoveries`](super::HostLimits) times.
    pub async fn run(&self, program: Value, options: &ExecuteOptions) -> Result<Attempt, HostError> {
        let mut recoveries = 0;
        loop {
            let verdict = self
                .validate_with(program.clone(), &ValidateOptions { context: options.context.clone() })
                .await?;
            if !verdict.valid() {
                return Ok(Attempt::Invalid(verdict));
            }
            let execution = self.execute(&verdict, options).await?;
            let drifted = matches!(&execution, Execution::Ran(ran) if ran.status == RunStatus::CatalogDrift);
            if !drifted || recoveries >= self.host.limits().max_drift_recoveries {
                return Ok(Attempt::Executed(execution));
            }
            recoveries += 1;
        }
    }

    async fn gated(
        &self,
        decision: GateDecision,
        runnable: Runnable,
        catalog_version: Option<&str>,
        options: &ExecuteOptions,
    ) -> Result<Execution, HostError> {
        if let GateDecision::NeedsApproval(request) = decision {
            if let Approval::Denied(reason) = self.host.approver().approve(&request).await {
                return Ok(Execution::Denied(Denial { request: *request, reason }));
            }
        }
        let found = self.host.current().await?;
        let entry = found.language(&self.name)?;
        let key = if idempotent(entry) {
            let mut keys = self.host.keys.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            Some(
                keys.key(options.idempotency_key.as_deref(), &runnable, options.input.as_ref())
                    .map_err(HostError::Loop)?,
            )
        } else {
            None
        };
        let (tool, args) =
            execute_request(&found, entry, &runnable, catalog_version, key.as_deref(), options)?;
        let answer = self.host.call(&tool, args, self.host.limits().execute_timeout).await?;
        let response = execute_response(answer, &tool, self.host.limits())?;
        let status = RunStatus::classify(response.outcome.ok(), response.outcome.status());
        Ok(Execution::Ran(Ran { response, status, idempotency_key: key }))
    }

    /// The catalog entries of a plan-less validation's `references` (entries that cannot be
    /// looked up are left out, so the gate counts them unknown: risky).
    async fn referenced_entries(&self, response: &ValidateResponse) -> Vec<CatalogEntry> {
        let Some(references) = response.references.as_ref().filter(|_| response.plan.is_none()) else {
            return Vec::new();
        };
        let mut entries = Vec::new();
        for id in references.iter().take(MAX_GATE_LOOKUPS) {
            if let Ok(got) = self.entry(id).await {
                entries.push(got.entry);
            }
        }
        entries
    }
}

fn object(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}
