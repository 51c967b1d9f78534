//! The plain (non-Pilotage) tools outside harnesses use to observe and perturb the world:
//! its fingerprint, and catalog changes (which move `catalog_version`).

use pilotage::prelude::*;

#[path = "../../common/admin_args.rs"]
mod admin_args;

use admin_args::{required, risk_arg, str_arg};

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
pub fn add_entry(world: &mut World, args: &Json) -> Result<Json, String> {
    let id = required(args, "id")?;
    if !super::program::is_step_id(id) {
        return Err(format!("'{id}' is not a usable id: use letters, digits, '_' and '-'"));
    }
    if world.catalog.contains(id) {
        return Err(format!("an entry '{id}' already exists"));
    }
    let risk = risk_arg(args)?.map_or(super::WfRisk::Safe, risk_named);
    let def = EntryDef {
        id: id.to_owned(),
        kind: WfKind::Capability,
        name: str_arg(args, "name")?.unwrap_or(id).to_owned(),
        description: str_arg(args, "description")?
            .unwrap_or("Added at run time: returns its input unchanged.")
            .to_owned(),
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
pub fn remove_entry(world: &mut World, args: &Json) -> Result<Json, String> {
    let id = required(args, "id")?;
    match world.catalog.remove_visible(id) {
        Some(_) => Ok(json!({"removed": id})),
        None => Err(format!("unknown catalog entry '{id}'")),
    }
}

/// `catalog_update_entry`: change a defined field (the description).
pub fn update_entry(world: &mut World, args: &Json) -> Result<Json, String> {
    let id = required(args, "id")?;
    let description = required(args, "description")?;
    match world.catalog.visible_mut(id) {
        Some(def) => {
            def.description = description.to_owned();
            Ok(json!({"updated": def.to_entry()}))
        }
        None => Err(format!("unknown catalog entry '{id}'")),
    }
}
