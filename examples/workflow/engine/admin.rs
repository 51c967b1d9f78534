//! The plain (non-Pilotage) tools outside harnesses use to observe and perturb the world:
//! its fingerprint, and catalog changes (which move `catalog_version`).

use pilotage::prelude::*;

#[path = "../../common/admin_args.rs"]
mod admin_args;

pub use admin_args::{AddEntry, NoArgs, RemoveEntry};

use super::catalog::{Behaviour, EntryDef};
use super::check::risk_named;
use super::digest::fingerprint;
use super::world::World;
use super::WfKind;

/// `world_fingerprint`: a digest of users, tickets, outbox and catalog, with two counters.
pub fn fingerprint_of(world: &World) -> Json {
    let canonical = world.canonical().to_string();
    json!({
        "fingerprint": fingerprint(canonical.as_bytes()),
        "tickets_open": world.tickets_open(),
        "emails_sent": world.emails_sent(),
    })
}

/// `catalog_add_entry`: a new capability whose output is its input.
pub fn add_entry(world: &mut World, args: AddEntry) -> Result<Json, String> {
    let id = args.id.as_str();
    if !super::program::is_step_id(id) {
        return Err(format!("'{id}' is not a usable id: use letters, digits, '_' and '-'"));
    }
    if world.catalog.contains(id) {
        return Err(format!("an entry '{id}' already exists"));
    }
    let risk = args.risk.map_or(super::WfRisk::Safe, |r| risk_named(r.name()));
    let def = EntryDef {
        id: id.to_owned(),
        kind: WfKind::Capability,
        name: args.name.clone().unwrap_or_else(|| id.to_owned()),
        description: args
            .description
            .unwrap_or_else(|| "Added at run time: returns its input unchanged.".to_owned()),
        risk,
        input_schema: Some(json!({"type": "object"})),
        output_schema: None,
        tags: vec!["echo".to_owned()],
        visible: true,
        behaviour: Behaviour::Echo,
    };
    let entry = def.to_entry();
    world.catalog.insert(def);
    Ok(json!({"added": entry}))
}

/// `catalog_remove_entry`.
pub fn remove_entry(world: &mut World, args: RemoveEntry) -> Result<Json, String> {
    let id = args.id.as_str();
    match world.catalog.remove_visible(id) {
        Some(_) => Ok(json!({"removed": id})),
        None => Err(format!("unknown catalog entry '{id}'")),
    }
}

/// The arguments of `catalog_update_entry`: the entry and its new description.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateEntry {
    pub id: String,
    pub description: String,
}

/// The arguments of `inject_fault`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InjectFault {
    pub validator_panic: bool,
}

/// `catalog_update_entry`: change a defined field (the description).
pub fn update_entry(world: &mut World, args: UpdateEntry) -> Result<Json, String> {
    let id = args.id.as_str();
    match world.catalog.visible_mut(id) {
        Some(def) => {
            def.description = args.description;
            Ok(json!({"updated": def.to_entry()}))
        }
        None => Err(format!("unknown catalog entry '{id}'")),
    }
}
