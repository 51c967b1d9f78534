//! The plain (non-Pilotage) tools harnesses use to observe and perturb the building: its
//! fingerprint, events that fire installed rules, catalog changes (which move
//! `catalog_version`, and, for load-bearing fields, break promotion baselines) and faults.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use pilotage::engine::Caller;
use pilotage::engine::CatalogSnapshot;
use pilotage::engine::{ExecuteRequest, Recorder};
use pilotage::model::declaration::ExecutionMode;
use pilotage::prelude::*;

#[path = "../../common/admin_args.rs"]
mod admin_args;

pub use admin_args::{AddEntry, NoArgs, RemoveEntry};

use super::check::risk_named;
use super::digest::fingerprint;
use super::interpret;
use super::program::is_step_id;
use super::world::{Behaviour, EntryDef, World};
use super::{AutoKind, AutoStatus};

/// `world_fingerprint`: a digest of the building with a few counters.
pub fn fingerprint_of(world: &World) -> Json {
    let canonical = world.canonical().to_string();
    let lights_on = world
        .devices
        .values()
        .filter(|d| d.kind == "light" && d.state.get("on") == Some(&json!(true)))
        .count();
    json!({
        "fingerprint": fingerprint(canonical.as_bytes()),
        "counter": world.counter,
        "outbox": world.outbox.len(),
        "lights_on": lights_on,
        "rules": world.rules.iter().map(|r| r.rule_id.clone()).collect::<Vec<_>>(),
        "firings": world.firings,
    })
}

/// The arguments of `catalog_update_entry`: the entry, and at least one member to change.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateEntry {
    pub id: String,
    pub name: Option<String>,
    pub description: Option<String>,
    pub risk: Option<admin_args::EntryRisk>,
    pub input_schema: Option<serde_json::Map<String, Json>>,
}

/// The arguments of `inject_fault`: each given member replaces the current setting.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InjectFault {
    /// Devices that stop answering.
    pub offline: Option<Vec<String>>,
    /// Whether door_unlock fails with denied.
    pub lockdown: Option<bool>,
}

/// The arguments of `emit_event`: the event and its payload.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmitEvent {
    /// An event id of the catalog (kind event).
    pub event: String,
    /// The event's payload; it must fit the event's output_schema.
    pub payload: Option<serde_json::Map<String, Json>>,
}

/// `catalog_add_entry`: a new action whose output is its arguments.
pub fn add_entry(world: &mut World, args: AddEntry) -> Result<Json, String> {
    let id = args.id.as_str();
    if !is_step_id(id) {
        return Err(format!("'{id}' is not a usable id: use letters, digits, '_' and '-'"));
    }
    if world.catalog.contains_key(id) {
        return Err(format!("an entry '{id}' already exists"));
    }
    let def = EntryDef {
        id: id.to_owned(),
        kind: AutoKind::Action,
        name: args.name.clone().unwrap_or_else(|| id.to_owned()),
        description: args
            .description
            .unwrap_or_else(|| "Added at run time: returns its arguments unchanged.".to_owned()),
        risk: args.risk.map_or(super::AutoRisk::Safe, |r| risk_named(r.name())),
        input_schema: Some(json!({"type": "object"})),
        output_schema: None,
        tags: vec!["echo".to_owned()],
        behaviour: Behaviour::Echo,
    };
    let entry = def.to_entry();
    world.catalog.insert(id.to_owned(), def);
    Ok(json!({"added": entry}))
}

/// `catalog_remove_entry`.
pub fn remove_entry(world: &mut World, args: RemoveEntry) -> Result<Json, String> {
    let id = args.id.as_str();
    match world.catalog.remove(id) {
        Some(_) => Ok(json!({"removed": id})),
        None => Err(format!("unknown catalog entry '{id}'")),
    }
}

/// `catalog_update_entry`: change `name`, `description`, `risk` or `input_schema`.
pub fn update_entry(world: &mut World, args: UpdateEntry) -> Result<Json, String> {
    let UpdateEntry { id, name, description, risk, input_schema } = args;
    let risk = risk.map(|r| risk_named(r.name()));
    let input_schema = match input_schema.map(Json::Object) {
        None => None,
        Some(s) => {
            jsonschema::validator_for(&s).map_err(|e| format!("`input_schema` is not a JSON Schema: {e}"))?;
            Some(s)
        }
    };
    if name.is_none() && description.is_none() && risk.is_none() && input_schema.is_none() {
        return Err("give at least one of name, description, risk, input_schema".into());
    }
    let Some(def) = world.catalog.get_mut(&id) else {
        return Err(format!("unknown catalog entry '{id}'"));
    };
    if let Some(n) = name {
        def.name = n;
    }
    if let Some(d) = description {
        def.description = d;
    }
    if let Some(r) = risk {
        def.risk = r;
    }
    if let Some(s) = input_schema {
        def.input_schema = Some(s);
    }
    Ok(json!({"updated": def.to_entry()}))
}

/// `inject_fault`.
pub fn inject_fault(world: &mut World, args: InjectFault) -> Result<Json, String> {
    if let Some(offline) = args.offline {
        if let Some(id) = offline.iter().find(|id| !world.devices.contains_key(id.as_str())) {
            return Err(format!("no device '{id}'"));
        }
        world.faults.offline = offline.into_iter().collect();
    }
    if let Some(lockdown) = args.lockdown {
        world.faults.lockdown = lockdown;
    }
    Ok(json!({"offline": world.faults.offline, "lockdown": world.faults.lockdown}))
}

/// `emit_event`: fire every rule installed for the event, in installation order.
pub fn emit(
    world: &Mutex<World>,
    snapshot: &CatalogSnapshot,
    args: EmitEvent,
    caller: &Caller,
) -> Result<Json, String> {
    let event = args.event.as_str();
    let payload = Json::Object(args.payload.unwrap_or_default());
    let Some(entry) = snapshot.get(event).filter(|e| e.kind == "event") else {
        let events: Vec<&str> =
            snapshot.entries().iter().filter(|e| e.kind == "event").map(|e| e.id.as_str()).collect();
        return Err(format!("no event '{event}' in the catalog; events: {}", events.join(", ")));
    };
    if let Some(schema) = &entry.output_schema {
        let validator = jsonschema::validator_for(schema).map_err(|e| e.to_string())?;
        let misfit = validator.iter_errors(&payload).next().map(|e| e.to_string());
        if let Some(e) = misfit {
            return Err(format!("the payload does not fit event '{event}': {e}"));
        }
    }
    let rules: Vec<_> = {
        let w = world.lock().unwrap_or_else(|p| p.into_inner());
        w.rules.iter().filter(|r| r.event == event).cloned().collect()
    };
    let mut fired = Vec::new();
    for rule in rules {
        let mut entries = snapshot.entries().to_vec();
        entries.extend(rule.routines.values().map(|(_, e)| e.clone()));
        let bodies: BTreeMap<String, pilotage::engine::SubProgram> = rule
            .routines
            .iter()
            .map(|(k, (b, _))| {
                (k.clone(), pilotage::engine::SubProgram { body: b.clone(), drifted: Vec::new() })
            })
            .collect();
        let request = ExecuteRequest {
            run_id: format!("{}_{}", rule.rule_id, event),
            program: Arc::new(rule.body.clone()),
            input: None,
            context: rule.context.clone().map(Arc::new),
            catalog: Some(Arc::new(CatalogSnapshot::new(entries))),
            caller: caller.clone(),
            mode: ExecutionMode::Immediate,
            test_run: false,
            promoted: Arc::new(bodies),
        };
        let recorder = Recorder::new(10_000);
        let mut run = Run::<AutoStatus>::new(&request, recorder.clone());
        let finish = interpret::fire(world, &rule, &payload, &mut run).into_core();
        world.lock().unwrap_or_else(|p| p.into_inner()).firings += 1;
        let steps: Vec<String> = recorder.steps().into_iter().map(|s| s.id).collect();
        let mut item = json!({"rule_id": rule.rule_id, "outcome": finish.outcome, "steps": steps});
        if let Some(output) = finish.output {
            item["output"] = output;
        }
        fired.push(item);
    }
    Ok(json!({"event": event, "fired": fired}))
}
