//! The world of one session: a small smart building (lights, a thermostat, a door, sensors),
//! a notification outbox, a counter, the installed rules, the catalog, and the harness faults.
//!
//! Everything is deterministic: the same calls on a fresh world give the same results.

use std::collections::{BTreeMap, BTreeSet};

use pilotage::prelude::*;
use serde_json::Map;

use super::{AutoKind, AutoRisk, AutoStatus};

/// Why an action failed: a step-level status and a message.
#[derive(Clone, Debug)]
pub struct ActionError {
    pub status: AutoStatus,
    pub message: String,
}

fn fail(status: AutoStatus, message: impl Into<String>) -> ActionError {
    ActionError { status, message: message.into() }
}

/// How an entry behaves when a step calls it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behaviour {
    /// One of the world's own actions.
    Builtin,
    /// Added at run time (`catalog_add_entry`): the output is the input.
    Echo,
    /// Not callable (events).
    None,
}

/// One catalog entry as the world keeps it.
#[derive(Clone, Debug)]
pub struct EntryDef {
    pub id: String,
    pub kind: AutoKind,
    pub name: String,
    pub description: String,
    pub risk: AutoRisk,
    pub input_schema: Option<Json>,
    pub output_schema: Option<Json>,
    pub tags: Vec<String>,
    pub behaviour: Behaviour,
}

impl EntryDef {
    /// The wire form.
    pub fn to_entry(&self) -> CatalogEntry {
        let mut e = CatalogEntry::new(self.id.clone(), self.kind, self.name.clone(), self.risk)
            .description(self.description.clone());
        if let Some(s) = &self.input_schema {
            e = e.input_schema(s.clone());
        }
        if let Some(s) = &self.output_schema {
            e = e.output_schema(s.clone());
        }
        for t in &self.tags {
            e = e.tag(t.clone());
        }
        e
    }
}

fn object(props: Json, required: &[&str]) -> Json {
    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

fn action(
    id: &str,
    name: &str,
    risk: AutoRisk,
    description: &str,
    input: Json,
    output: Json,
    tags: &[&str],
) -> EntryDef {
    EntryDef {
        id: id.to_owned(),
        kind: AutoKind::Action,
        name: name.to_owned(),
        description: description.to_owned(),
        risk,
        input_schema: Some(input),
        output_schema: Some(output),
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        behaviour: Behaviour::Builtin,
    }
}

fn event(id: &str, name: &str, description: &str, payload: Json) -> EntryDef {
    EntryDef {
        id: id.to_owned(),
        kind: AutoKind::Event,
        name: name.to_owned(),
        description: description.to_owned(),
        risk: AutoRisk::Safe,
        input_schema: None,
        output_schema: Some(payload),
        tags: vec!["event".to_owned()],
        behaviour: Behaviour::None,
    }
}

/// The seeded catalog: actions and events.
pub fn seeded_catalog() -> BTreeMap<String, EntryDef> {
    let s = json!({"type": "string"});
    let device = json!({"type": "string", "description": "A device id such as \"hall_light\"."});
    let b = json!({"type": "boolean"});
    let n = json!({"type": "number"});
    let i = json!({"type": "integer"});
    let summary = object(json!({"device": s, "kind": s, "room": s}), &["device", "kind", "room"]);
    let defs = vec![
        action(
            "device_get",
            "Read a device",
            AutoRisk::Safe,
            "Returns one device with its kind, room and current state. Fails with not_found for an unknown device, timeout when it is offline.",
            object(json!({"device": device}), &["device"]),
            object(json!({"device": s, "kind": s, "room": s, "state": {"type": "object"}}), &["device", "kind", "room", "state"]),
            &["devices", "read"],
        ),
        action(
            "devices_list",
            "List devices",
            AutoRisk::Safe,
            "Lists the devices, optionally only those of one room and/or kind (light, thermostat, door, sensor), in id order.",
            object(json!({"room": s, "kind": {"type": "string", "enum": ["light", "thermostat", "door", "sensor"]}}), &[]),
            object(json!({"devices": {"type": "array", "items": summary}}), &["devices"]),
            &["devices", "read"],
        ),
        action(
            "light_set",
            "Switch a light",
            AutoRisk::Write,
            "Switches a light on or off, with an optional brightness level 0-100 (default 100 when on, 0 when off). Fails with rejected for a device that is not a light.",
            object(json!({"device": device, "on": b, "level": {"type": "integer", "minimum": 0, "maximum": 100}}), &["device", "on"]),
            object(json!({"device": s, "on": b, "level": i}), &["device", "on", "level"]),
            &["devices", "lights", "write"],
        ),
        action(
            "thermostat_set",
            "Set a thermostat",
            AutoRisk::Write,
            "Sets a thermostat's target temperature (5-30 °C).",
            object(json!({"device": device, "celsius": {"type": "number", "minimum": 5, "maximum": 30}}), &["device", "celsius"]),
            object(json!({"device": s, "celsius": n}), &["device", "celsius"]),
            &["devices", "climate", "write"],
        ),
        action(
            "door_lock",
            "Lock a door",
            AutoRisk::Write,
            "Locks a door.",
            object(json!({"device": device}), &["device"]),
            object(json!({"device": s, "locked": b}), &["device", "locked"]),
            &["devices", "doors", "write"],
        ),
        action(
            "door_unlock",
            "Unlock a door",
            AutoRisk::Write,
            "Unlocks a door. Fails with denied while the building is in lockdown.",
            object(json!({"device": device}), &["device"]),
            object(json!({"device": s, "locked": b}), &["device", "locked"]),
            &["devices", "doors", "write"],
        ),
        action(
            "counter_add",
            "Add to the counter",
            AutoRisk::Write,
            "Adds `by` to the building's counter and returns the new value.",
            object(json!({"by": i}), &["by"]),
            object(json!({"counter": i}), &["counter"]),
            &["counter", "write"],
        ),
        action(
            "notify",
            "Send a notification",
            AutoRisk::External,
            "Sends a text notification to a person outside the building (it lands in the outbox).",
            object(json!({"to": {"type": "string", "minLength": 1}, "text": {"type": "string", "minLength": 1}}), &["to", "text"]),
            object(json!({"notification": i}), &["notification"]),
            &["outbox", "external"],
        ),
        action(
            "outbox_clear",
            "Clear the outbox",
            AutoRisk::Destructive,
            "Deletes every notification of the outbox, irreversibly.",
            object(json!({}), &[]),
            object(json!({"cleared": i}), &["cleared"]),
            &["outbox", "destructive"],
        ),
        action(
            "wait",
            "Wait",
            AutoRisk::Safe,
            "Pauses for `ms` milliseconds (0-1000). Changes nothing.",
            object(json!({"ms": {"type": "integer", "minimum": 0, "maximum": 1000}}), &["ms"]),
            object(json!({"waited_ms": i}), &["waited_ms"]),
            &["time"],
        ),
        event(
            "motion",
            "Motion detected",
            "A motion sensor saw movement in a room. Payload: {room}.",
            object(json!({"room": {"type": "string", "examples": ["hall"]}}), &["room"]),
        ),
        event(
            "door_opened",
            "Door opened",
            "A door was opened. Payload: {device}.",
            object(json!({"device": {"type": "string", "examples": ["front_door"]}}), &["device"]),
        ),
        event(
            "temperature",
            "Temperature reading",
            "A temperature sensor reported a reading. Payload: {sensor, celsius}.",
            object(
                json!({"sensor": {"type": "string", "examples": ["office_temp"]}, "celsius": {"type": "number", "examples": [26.5]}}),
                &["sensor", "celsius"],
            ),
        ),
    ];
    defs.into_iter().map(|d| (d.id.clone(), d)).collect()
}

/// A device.
#[derive(Clone, Debug)]
pub struct Device {
    pub kind: &'static str,
    pub room: &'static str,
    pub state: Map<String, Json>,
}

/// An installed rule.
#[derive(Clone, Debug)]
pub struct Rule {
    pub rule_id: String,
    pub event: String,
    pub body: Json,
    pub inputs: Map<String, Json>,
    pub context: Option<Json>,
    /// The promoted programs the rule's `run` steps call (body and catalog entry), captured at
    /// installation so the rule can fire outside any Run.
    pub routines: BTreeMap<String, (std::sync::Arc<Json>, CatalogEntry)>,
}

/// Harness faults (`inject_fault`).
#[derive(Clone, Debug, Default)]
pub struct Faults {
    /// Devices that do not answer: actions on them fail with `timeout`.
    pub offline: BTreeSet<String>,
    /// `door_unlock` is `denied`.
    pub lockdown: bool,
}

/// The world.
#[derive(Clone, Debug)]
pub struct World {
    pub devices: BTreeMap<String, Device>,
    pub outbox: Vec<Json>,
    pub counter: i64,
    pub rules: Vec<Rule>,
    pub next_rule: u64,
    pub firings: u64,
    pub catalog: BTreeMap<String, EntryDef>,
    pub faults: Faults,
}

fn state(v: Json) -> Map<String, Json> {
    match v {
        Json::Object(m) => m,
        _ => Map::new(),
    }
}

impl World {
    /// A fresh, deterministically seeded world.
    pub fn seeded() -> Self {
        let light = |room| Device { kind: "light", room, state: state(json!({"on": false, "level": 0})) };
        let mut devices = BTreeMap::new();
        devices.insert("hall_light".to_owned(), light("hall"));
        devices.insert("kitchen_light".to_owned(), light("kitchen"));
        devices.insert("office_light".to_owned(), light("office"));
        devices.insert(
            "office_thermostat".to_owned(),
            Device { kind: "thermostat", room: "office", state: state(json!({"celsius": 21.0})) },
        );
        devices.insert(
            "front_door".to_owned(),
            Device { kind: "door", room: "hall", state: state(json!({"locked": true})) },
        );
        devices.insert(
            "office_temp".to_owned(),
            Device { kind: "sensor", room: "office", state: state(json!({"celsius": 23.5})) },
        );
        devices.insert(
            "hall_motion".to_owned(),
            Device { kind: "sensor", room: "hall", state: state(json!({"motion": false})) },
        );
        World {
            devices,
            outbox: Vec::new(),
            counter: 0,
            rules: Vec::new(),
            next_rule: 1,
            firings: 0,
            catalog: seeded_catalog(),
            faults: Faults::default(),
        }
    }

    /// The world's observable state (devices, outbox, counter, rules) as canonical JSON; the
    /// catalog and the harness faults are not part of it.
    pub fn canonical(&self) -> Json {
        let devices: Map<String, Json> = self
            .devices
            .iter()
            .map(|(id, d)| (id.clone(), json!({"kind": d.kind, "room": d.room, "state": d.state})))
            .collect();
        let rules: Vec<Json> = self
            .rules
            .iter()
            .map(|r| json!({"rule_id": r.rule_id, "event": r.event, "body": r.body, "inputs": r.inputs}))
            .collect();
        json!({"devices": devices, "outbox": self.outbox, "counter": self.counter, "rules": rules, "firings": self.firings})
    }

    /// The catalog entries as the snapshot shows them.
    pub fn entries(&self) -> Vec<CatalogEntry> {
        self.catalog.values().map(EntryDef::to_entry).collect()
    }

    fn device(&self, args: &Json) -> Result<(String, &Device), ActionError> {
        let id = args.get("device").and_then(Json::as_str).unwrap_or_default();
        let d =
            self.devices.get(id).ok_or_else(|| fail(AutoStatus::NotFound, format!("no device '{id}'")))?;
        if self.faults.offline.contains(id) {
            return Err(fail(AutoStatus::Timeout, format!("device '{id}' did not answer in time")));
        }
        Ok((id.to_owned(), d))
    }

    fn device_of_kind(&mut self, args: &Json, kind: &str) -> Result<(String, &mut Device), ActionError> {
        let (id, d) = self.device(args)?;
        if d.kind != kind {
            return Err(fail(AutoStatus::Rejected, format!("device '{id}' is a {}, not a {kind}", d.kind)));
        }
        let d = self.devices.get_mut(&id).ok_or_else(|| fail(AutoStatus::NotFound, "vanished"))?;
        Ok((id, d))
    }

    /// Invoke action `id` with evaluated arguments `args` (already checked against its
    /// `input_schema` by the interpreter).
    pub fn call(&mut self, id: &str, args: &Json) -> Result<Json, ActionError> {
        let Some(def) = self.catalog.get(id) else {
            return Err(fail(AutoStatus::NotFound, format!("no action '{id}' in the catalog")));
        };
        match def.behaviour {
            Behaviour::Echo => return Ok(args.clone()),
            Behaviour::None => return Err(fail(AutoStatus::Rejected, format!("'{id}' is not callable"))),
            Behaviour::Builtin => {}
        }
        match id {
            "device_get" => {
                let (id, d) = self.device(args)?;
                Ok(json!({"device": id, "kind": d.kind, "room": d.room, "state": d.state}))
            }
            "devices_list" => {
                let room = args.get("room").and_then(Json::as_str);
                let kind = args.get("kind").and_then(Json::as_str);
                let devices: Vec<Json> = self
                    .devices
                    .iter()
                    .filter(|(_, d)| room.is_none_or(|r| d.room == r) && kind.is_none_or(|k| d.kind == k))
                    .map(|(id, d)| json!({"device": id, "kind": d.kind, "room": d.room}))
                    .collect();
                Ok(json!({"devices": devices}))
            }
            "light_set" => {
                let on = args.get("on").and_then(Json::as_bool).unwrap_or(false);
                let level = args.get("level").and_then(Json::as_i64).unwrap_or(if on { 100 } else { 0 });
                let (id, d) = self.device_of_kind(args, "light")?;
                d.state.insert("on".into(), json!(on));
                d.state.insert("level".into(), json!(level));
                Ok(json!({"device": id, "on": on, "level": level}))
            }
            "thermostat_set" => {
                let celsius = args.get("celsius").cloned().unwrap_or(Json::Null);
                let (id, d) = self.device_of_kind(args, "thermostat")?;
                d.state.insert("celsius".into(), celsius.clone());
                Ok(json!({"device": id, "celsius": celsius}))
            }
            "door_lock" | "door_unlock" => {
                let locking = id == "door_lock";
                if !locking && self.faults.lockdown {
                    return Err(fail(AutoStatus::Denied, "the building is in lockdown: doors stay locked"));
                }
                let (id, d) = self.device_of_kind(args, "door")?;
                d.state.insert("locked".into(), json!(locking));
                Ok(json!({"device": id, "locked": locking}))
            }
            "counter_add" => {
                let by = args.get("by").and_then(Json::as_i64).unwrap_or(0);
                self.counter = self.counter.saturating_add(by);
                Ok(json!({"counter": self.counter}))
            }
            "notify" => {
                let n = self.outbox.len() + 1;
                self.outbox.push(json!({"notification": n, "to": args["to"], "text": args["text"]}));
                Ok(json!({"notification": n}))
            }
            "outbox_clear" => {
                let cleared = self.outbox.len();
                self.outbox.clear();
                Ok(json!({"cleared": cleared}))
            }
            "wait" => Ok(json!({"waited_ms": args.get("ms").and_then(Json::as_i64).unwrap_or(0)})),
            other => Err(fail(AutoStatus::NotFound, format!("no action '{other}'"))),
        }
    }
}
