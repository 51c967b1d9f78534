//! The world's catalog: the built-in capabilities and dataset, the hidden admin entry, and
//! the entries the admin tools add at run time (which echo their input).

use std::collections::BTreeMap;

use pilotage::prelude::*;

use super::{WfKind, WfRisk};

/// How an entry behaves when a step calls it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behaviour {
    /// One of the world's own functions.
    Builtin,
    /// Added at run time: the output is the input.
    Echo,
}

/// One entry as the world keeps it.
#[derive(Clone, Debug)]
pub struct EntryDef {
    pub id: String,
    pub kind: WfKind,
    pub name: String,
    pub description: String,
    pub risk: WfRisk,
    pub input_schema: Option<Json>,
    pub output_schema: Option<Json>,
    pub tags: Vec<String>,
    /// Visible to session callers (the hidden admin entry is not).
    pub visible: bool,
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

/// All entries, by id.
#[derive(Clone, Debug)]
pub struct Catalog {
    entries: BTreeMap<String, EntryDef>,
}

fn object(props: Json, required: &[&str]) -> Json {
    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

#[allow(clippy::too_many_arguments)]
fn capability(
    id: &str,
    name: &str,
    risk: WfRisk,
    description: &str,
    input: Json,
    output: Json,
    tags: &[&str],
    visible: bool,
) -> EntryDef {
    EntryDef {
        id: id.to_owned(),
        kind: WfKind::Capability,
        name: name.to_owned(),
        description: description.to_owned(),
        risk,
        input_schema: Some(input),
        output_schema: Some(output),
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        visible,
        behaviour: Behaviour::Builtin,
    }
}

impl Catalog {
    /// The built-in entries.
    pub fn seeded() -> Self {
        let s = json!({"type": "string"});
        let user_id = json!({"type": "string", "description": "A user id such as \"42\"."});
        let profile = object(
            json!({"user_id": s, "name": s, "email": s, "tier": {"type": "string", "enum": ["gold", "silver", "bronze"]}}),
            &["user_id", "name", "email", "tier"],
        );
        let ticket_ref = object(json!({"id": s, "title": s}), &["id", "title"]);
        let defs = vec![
            capability(
                "cap_read_user_profile",
                "Read user profile",
                WfRisk::Safe,
                "Returns the stored profile of one user: name, email and tier. Fails with not_found for an unknown user.",
                object(json!({"user_id": user_id}), &["user_id"]),
                profile,
                &["users", "read"],
                true,
            ),
            capability(
                "cap_list_users",
                "List users",
                WfRisk::Safe,
                "Lists every user with id, name and tier.",
                object(json!({}), &[]),
                object(
                    json!({"users": {"type": "array", "items": object(json!({"user_id": s, "name": s, "tier": s}), &["user_id", "name", "tier"])}}),
                    &["users"],
                ),
                &["users", "read"],
                true,
            ),
            capability(
                "cap_list_open_tickets",
                "List open tickets",
                WfRisk::Safe,
                "Lists the open tickets of one user (possibly none). Fails with not_found for an unknown user.",
                object(json!({"user_id": user_id}), &["user_id"]),
                object(
                    json!({"count": {"type": "integer"}, "tickets": {"type": "array", "items": ticket_ref}}),
                    &["count", "tickets"],
                ),
                &["tickets", "read"],
                true,
            ),
            capability(
                "cap_create_ticket",
                "Create ticket",
                WfRisk::Write,
                "Opens a new ticket for a user and returns it with its new id.",
                object(json!({"user_id": user_id, "title": {"type": "string", "description": "Non-empty title."}}), &["user_id", "title"]),
                object(json!({"id": s, "user_id": s, "title": s, "status": s}), &["id", "user_id", "title", "status"]),
                &["tickets", "write"],
                true,
            ),
            capability(
                "cap_close_ticket",
                "Close ticket",
                WfRisk::Write,
                "Closes an open ticket. Fails with not_found for an unknown ticket and conflict for a closed one.",
                object(json!({"ticket_id": {"type": "string", "description": "A ticket id such as \"T-1001\"."}}), &["ticket_id"]),
                object(json!({"id": s, "status": s}), &["id", "status"]),
                &["tickets", "write"],
                true,
            ),
            capability(
                "cap_delete_user",
                "Delete user",
                WfRisk::Destructive,
                "Deletes a user and all of their tickets, irreversibly.",
                object(json!({"user_id": user_id}), &["user_id"]),
                object(
                    json!({"user_id": s, "deleted": {"type": "boolean"}, "tickets_removed": {"type": "integer"}}),
                    &["user_id", "deleted", "tickets_removed"],
                ),
                &["users", "write"],
                true,
            ),
            capability(
                "cap_send_email",
                "Send email",
                WfRisk::External,
                "Sends an email outside the system (to the outbox of the mail relay). `to` must be an email address.",
                object(json!({"to": s, "subject": s, "body": s}), &["to", "subject"]),
                object(json!({"message_id": s, "to": s, "subject": s}), &["message_id", "to", "subject"]),
                &["email", "external"],
                true,
            ),
            capability(
                "cap_admin_purge",
                "Purge all tickets",
                WfRisk::Destructive,
                "Administrative: deletes every ticket. Not visible to session callers.",
                object(json!({}), &[]),
                object(json!({"tickets_removed": {"type": "integer"}}), &["tickets_removed"]),
                &["admin"],
                false,
            ),
            EntryDef {
                id: "ds_tiers".to_owned(),
                kind: WfKind::Dataset,
                name: "Customer tiers".to_owned(),
                description: "The customer tiers, best first: gold, silver, bronze (the values of a profile's `tier`). \
                              A dataset is looked up, never called."
                    .to_owned(),
                risk: WfRisk::Safe,
                input_schema: None,
                output_schema: Some(json!({"type": "string", "enum": ["gold", "silver", "bronze"]})),
                tags: vec!["users".to_owned(), "reference".to_owned()],
                visible: true,
                behaviour: Behaviour::Builtin,
            },
        ];
        Catalog { entries: defs.into_iter().map(|d| (d.id.clone(), d)).collect() }
    }

    /// Any entry, hidden ones included (the world's own view).
    pub fn get(&self, id: &str) -> Option<&EntryDef> {
        self.entries.get(id)
    }

    /// A visible entry.
    pub fn visible(&self, id: &str) -> Option<&EntryDef> {
        self.entries.get(id).filter(|d| d.visible)
    }

    /// A visible entry, mutably.
    pub fn visible_mut(&mut self, id: &str) -> Option<&mut EntryDef> {
        self.entries.get_mut(id).filter(|d| d.visible)
    }

    /// Whether `id` is taken (visible or not).
    pub fn contains(&self, id: &str) -> bool {
        self.entries.contains_key(id)
    }

    /// Add an entry.
    pub fn insert(&mut self, def: EntryDef) {
        self.entries.insert(def.id.clone(), def);
    }

    /// Remove a visible entry.
    pub fn remove_visible(&mut self, id: &str) -> Option<EntryDef> {
        if self.visible(id).is_some() {
            self.entries.remove(id)
        } else {
            None
        }
    }

    /// The snapshot every session caller sees: the visible entries.
    pub fn snapshot(&self) -> CatalogSnapshot {
        CatalogSnapshot::new(self.entries.values().filter(|d| d.visible).map(EntryDef::to_entry).collect())
    }

    /// Canonical form for the world fingerprint (every entry, hidden included).
    pub fn canonical(&self) -> Json {
        Json::Array(
            self.entries
                .values()
                .map(|d| {
                    let mut v = serde_json::to_value(d.to_entry()).unwrap_or(Json::Null);
                    if let Json::Object(m) = &mut v {
                        m.insert("visible".into(), Json::Bool(d.visible));
                    }
                    v
                })
                .collect(),
        )
    }
}
