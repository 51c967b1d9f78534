//! The in-process world one engine instance (one MCP session) owns: users, tickets, an email
//! outbox and the catalog. Seeded deterministically; every capability is a plain function of
//! the world and its arguments, so the same program on the same world does the same thing.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value as Json};

use super::catalog::{Behaviour, Catalog};
use super::WfStatus;

/// A customer.
#[derive(Clone, Debug)]
pub struct User {
    pub id: String,
    pub name: String,
    pub email: String,
    pub tier: String,
}

/// A support ticket.
#[derive(Clone, Debug)]
pub struct Ticket {
    pub id: String,
    pub user_id: String,
    pub title: String,
    pub open: bool,
}

/// A sent email.
#[derive(Clone, Debug)]
pub struct Email {
    pub id: String,
    pub to: String,
    pub subject: String,
    pub body: String,
}

/// Why a capability refused: a step-level status and a message.
#[derive(Clone, Debug)]
pub struct CapError {
    pub status: WfStatus,
    pub message: String,
}

impl CapError {
    fn new(status: WfStatus, message: impl Into<String>) -> Self {
        CapError { status, message: message.into() }
    }
    fn not_found(message: impl Into<String>) -> Self {
        Self::new(WfStatus::NotFound, message)
    }
    fn rejected(message: impl Into<String>) -> Self {
        Self::new(WfStatus::Rejected, message)
    }
}

/// The whole mutable state of one session.
#[derive(Debug)]
pub struct World {
    users: BTreeMap<String, User>,
    tickets: BTreeMap<String, Ticket>,
    outbox: Vec<Email>,
    next_ticket: u32,
    pub catalog: Catalog,
}

impl World {
    /// The seeded world: three users, four tickets (user 7 has no open ticket), an empty
    /// outbox and the built-in catalog.
    pub fn seeded() -> Self {
        let users = [
            ("42", "Amira Hassan", "amira.hassan@example.com", "gold"),
            ("7", "Ben Okafor", "ben.okafor@example.com", "silver"),
            ("13", "Chen Wei", "chen.wei@example.com", "bronze"),
        ]
        .into_iter()
        .map(|(id, name, email, tier)| {
            (
                id.to_owned(),
                User {
                    id: id.to_owned(),
                    name: name.to_owned(),
                    email: email.to_owned(),
                    tier: tier.to_owned(),
                },
            )
        })
        .collect();
        let tickets = [
            ("T-1001", "42", "Cannot reset password", true),
            ("T-1002", "42", "Invoice missing for March", true),
            ("T-1003", "7", "Upgrade to gold", false),
            ("T-1004", "13", "App crashes on login", true),
        ]
        .into_iter()
        .map(|(id, user, title, open)| {
            (
                id.to_owned(),
                Ticket { id: id.to_owned(), user_id: user.to_owned(), title: title.to_owned(), open },
            )
        })
        .collect();
        World { users, tickets, outbox: Vec::new(), next_ticket: 1005, catalog: Catalog::seeded() }
    }

    /// Invoke capability `id` with `args` (an object). Entries added at run time echo their
    /// input. A failing capability changes nothing.
    pub fn call(&mut self, id: &str, args: &Json) -> Result<Json, CapError> {
        let Some(def) = self.catalog.get(id) else {
            return Err(CapError::rejected(format!("capability '{id}' no longer exists")));
        };
        if def.behaviour == Behaviour::Echo {
            return Ok(args.clone());
        }
        let empty = Map::new();
        let args = args.as_object().unwrap_or(&empty);
        match id {
            "cap_read_user_profile" => {
                let user = self.user(str_arg(args, "user_id")?)?;
                Ok(json!({"user_id": user.id, "name": user.name, "email": user.email, "tier": user.tier}))
            }
            "cap_list_users" => Ok(json!({
                "users": self.users.values()
                    .map(|u| json!({"user_id": u.id, "name": u.name, "tier": u.tier}))
                    .collect::<Vec<_>>()
            })),
            "cap_list_open_tickets" => {
                let user = self.user(str_arg(args, "user_id")?)?.id.clone();
                let tickets: Vec<Json> = self
                    .tickets
                    .values()
                    .filter(|t| t.user_id == user && t.open)
                    .map(|t| json!({"id": t.id, "title": t.title}))
                    .collect();
                Ok(json!({"count": tickets.len(), "tickets": tickets}))
            }
            "cap_create_ticket" => {
                let user = self.user(str_arg(args, "user_id")?)?.id.clone();
                let title = str_arg(args, "title")?;
                if title.trim().is_empty() {
                    return Err(CapError::rejected("`title` must not be empty"));
                }
                let id = format!("T-{}", self.next_ticket);
                self.next_ticket += 1;
                let ticket =
                    Ticket { id: id.clone(), user_id: user.clone(), title: title.to_owned(), open: true };
                self.tickets.insert(id.clone(), ticket);
                Ok(json!({"id": id, "user_id": user, "title": title, "status": "open"}))
            }
            "cap_close_ticket" => {
                let id = str_arg(args, "ticket_id")?;
                let Some(ticket) = self.tickets.get_mut(id) else {
                    return Err(CapError::not_found(format!("no ticket '{id}'")));
                };
                if !ticket.open {
                    return Err(CapError::new(
                        WfStatus::Conflict,
                        format!("ticket '{id}' is already closed"),
                    ));
                }
                ticket.open = false;
                Ok(json!({"id": id, "status": "closed"}))
            }
            "cap_delete_user" => {
                let user = self.user(str_arg(args, "user_id")?)?.id.clone();
                self.users.remove(&user);
                let before = self.tickets.len();
                self.tickets.retain(|_, t| t.user_id != user);
                let removed = before - self.tickets.len();
                Ok(json!({"user_id": user, "deleted": true, "tickets_removed": removed}))
            }
            "cap_send_email" => {
                let to = str_arg(args, "to")?;
                let subject = str_arg(args, "subject")?;
                let body = match args.get("body") {
                    None | Some(Json::Null) => "",
                    Some(Json::String(s)) => s.as_str(),
                    Some(_) => return Err(CapError::rejected("`body` must be a string")),
                };
                if !to.contains('@') {
                    return Err(CapError::rejected(format!("'{to}' is not an email address")));
                }
                let id = format!("msg-{}", self.outbox.len() + 1);
                self.outbox.push(Email {
                    id: id.clone(),
                    to: to.to_owned(),
                    subject: subject.to_owned(),
                    body: body.to_owned(),
                });
                Ok(json!({"message_id": id, "to": to, "subject": subject}))
            }
            "cap_admin_purge" => {
                let removed = self.tickets.len();
                self.tickets.clear();
                Ok(json!({"tickets_removed": removed}))
            }
            other => Err(CapError::rejected(format!("capability '{other}' cannot be invoked"))),
        }
    }

    fn user(&self, id: &str) -> Result<&User, CapError> {
        self.users.get(id).ok_or_else(|| CapError::not_found(format!("no user '{id}'")))
    }

    /// Open tickets.
    pub fn tickets_open(&self) -> usize {
        self.tickets.values().filter(|t| t.open).count()
    }

    /// Sent emails.
    pub fn emails_sent(&self) -> usize {
        self.outbox.len()
    }

    /// A canonical JSON form of everything: users, tickets, outbox and catalog (hidden entries
    /// included), in a fixed order.
    pub fn canonical(&self) -> Json {
        json!({
            "users": self.users.values()
                .map(|u| json!([u.id, u.name, u.email, u.tier])).collect::<Vec<_>>(),
            "tickets": self.tickets.values()
                .map(|t| json!([t.id, t.user_id, t.title, t.open])).collect::<Vec<_>>(),
            "outbox": self.outbox.iter()
                .map(|e| json!([e.id, e.to, e.subject, e.body])).collect::<Vec<_>>(),
            "next_ticket": self.next_ticket,
            "catalog": self.catalog.canonical(),
        })
    }
}

/// A required string argument.
fn str_arg<'a>(args: &'a Map<String, Json>, key: &str) -> Result<&'a str, CapError> {
    match args.get(key) {
        Some(Json::String(s)) => Ok(s),
        Some(other) => Err(CapError::rejected(format!(
            "`{key}` must be a string, got {}",
            super::program::type_name(other)
        ))),
        None => Err(CapError::rejected(format!("`{key}` is required"))),
    }
}
