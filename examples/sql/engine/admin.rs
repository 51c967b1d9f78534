//! The plain (non-Pilotage) tools harnesses and administrators use: schema changes (which
//! move `catalog_version`) through DDL, create-table and drop-table. They run with the
//! authorizer open, in one transaction each.

use pilotage::prelude::*;
use sqlparser::dialect::SQLiteDialect;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, Tokenizer};

use super::db::{quote, Db};

/// A tool that takes no arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// The arguments of `sql_schema_apply`: the DDL to apply.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SchemaApply {
    /// DDL statements separated by `;`.
    pub ddl: String,
}

/// The arguments of `sql_create_table`: the table and its columns.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateTable {
    /// Letters, digits and '_', not starting with a digit or 'sqlite_'.
    pub name: String,
    /// Each column's name and declaration, in table order.
    #[schemars(extend("additionalProperties" = {"type": "string"}))]
    pub columns: serde_json::Map<String, Json>,
}

/// The arguments of `sql_drop_table`: the table or view to drop.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DropTable {
    pub name: String,
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.to_ascii_lowercase().starts_with("sqlite_")
}

/// Run `sql` in one transaction with the authorizer open.
fn apply(db: &mut Db, sql: &str) -> Result<(), String> {
    db.admin(|conn| {
        conn.execute_batch("BEGIN IMMEDIATE").map_err(|e| e.to_string())?;
        match conn.execute_batch(sql) {
            Ok(()) => conn.execute_batch("COMMIT").map_err(|e| e.to_string()),
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                Err(e.to_string())
            }
        }
    })
}

/// `sql_schema_apply`: DDL only (CREATE TABLE/VIEW/INDEX, ALTER TABLE, DROP TABLE/VIEW/INDEX);
/// triggers and virtual tables would act behind the plan's back, so they are refused.
pub fn schema_apply(db: &mut Db, args: SchemaApply) -> Result<Json, String> {
    let ddl = args.ddl.as_str();
    let tokens = Tokenizer::new(&SQLiteDialect {}, ddl).tokenize().map_err(|e| e.to_string())?;
    let mut statements = 0;
    let mut at_start = true;
    for t in &tokens {
        match t {
            Token::Whitespace(_) => {}
            Token::SemiColon => at_start = true,
            Token::Word(w) => {
                if matches!(w.keyword, Keyword::TRIGGER | Keyword::VIRTUAL) {
                    return Err(
                        "triggers and virtual tables are refused: they would act behind the plan's back"
                            .into(),
                    );
                }
                if at_start {
                    if !matches!(w.keyword, Keyword::CREATE | Keyword::ALTER | Keyword::DROP) {
                        return Err(format!(
                            "`{}` is not DDL: use CREATE, ALTER or DROP statements",
                            w.value
                        ));
                    }
                    statements += 1;
                    at_start = false;
                }
            }
            other if at_start => {
                return Err(format!("unexpected `{other}`: use CREATE, ALTER or DROP statements"))
            }
            _ => {}
        }
    }
    if statements == 0 {
        return Err("`ddl` holds no statement".into());
    }
    apply(db, ddl)?;
    Ok(json!({"applied": statements}))
}

/// `sql_create_table`: a STRICT table from a name and column declarations.
pub fn create_table(db: &mut Db, args: CreateTable) -> Result<Json, String> {
    let name = args.name.as_str();
    if !is_name(name) {
        return Err(format!("'{name}' is not a usable table name: letters, digits and '_', not starting with a digit or 'sqlite_'"));
    }
    if db.tables().iter().any(|t| t.name.eq_ignore_ascii_case(name)) {
        return Err(format!("a table or view '{name}' already exists"));
    }
    let columns = &args.columns;
    if columns.is_empty() {
        return Err("`columns` needs at least one column".into());
    }
    let mut defs = Vec::new();
    for (column, decl) in columns {
        let decl = decl.as_str().ok_or_else(|| format!("the declaration of `{column}` must be a string"))?;
        if !is_name(column) || decl.contains(';') {
            return Err(format!("column `{column}`: use a plain name and a declaration without `;`"));
        }
        defs.push(format!("{} {decl}", quote(column)));
    }
    apply(db, &format!("CREATE TABLE {} ({}) STRICT", quote(name), defs.join(", ")))?;
    let entry = db.tables().into_iter().find(|t| t.name == name).map(|t| t.entry());
    Ok(json!({"created": entry}))
}

/// `sql_drop_table`: drop a table or view.
pub fn drop_table(db: &mut Db, args: DropTable) -> Result<Json, String> {
    let name = args.name.as_str();
    let Some(table) = db.tables().into_iter().find(|t| t.name.eq_ignore_ascii_case(name)) else {
        return Err(format!("no table or view '{name}'"));
    };
    let what = if table.view { "VIEW" } else { "TABLE" };
    apply(db, &format!("DROP {what} {}", quote(&table.name)))?;
    Ok(json!({"dropped": table.name}))
}
