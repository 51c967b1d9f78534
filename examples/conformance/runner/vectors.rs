//! The 54 official vectors (`tests/fixtures/vectors.json`, vendored unchanged).

use std::sync::OnceLock;

use serde_json::Value;

/// The vendored vectors file.
pub const VECTORS_JSON: &str = include_str!("../../../tests/fixtures/vectors.json");

/// One vector.
#[derive(Clone, Debug)]
pub struct Vector {
    pub id: String,
    pub requirement: String,
    /// `server` or `client`.
    pub target: String,
    /// `good` or `bad`.
    pub polarity: String,
    /// Capabilities and sub-features (`catalog.changed_since`) the vector needs.
    pub requires: Vec<String>,
    pub setup: String,
    /// The abstract operation (`discover`, `learn`, `execute`, ...).
    pub operation: String,
    /// The action's arguments, with `<placeholders>`.
    pub arguments: Value,
    /// The raw request body of a `raw_body` action.
    pub body: Option<String>,
    pub expected: Value,
    /// The prose assertions.
    pub assertions: Vec<String>,
}

impl Vector {
    pub fn is_server(&self) -> bool {
        self.target == "server"
    }
    pub fn is_good(&self) -> bool {
        self.polarity == "good"
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect()).unwrap_or_default()
}

/// Every vector, in file order.
pub fn all() -> &'static [Vector] {
    static ALL: OnceLock<Vec<Vector>> = OnceLock::new();
    ALL.get_or_init(|| {
        let file: Value = serde_json::from_str(VECTORS_JSON).expect("vectors.json is JSON");
        let vectors = file["vectors"].as_array().expect("vectors.json has a vectors array");
        assert_eq!(file["count"].as_u64(), Some(vectors.len() as u64), "vectors.json count");
        vectors
            .iter()
            .map(|v| {
                let action = &v["action"];
                Vector {
                    id: v["id"].as_str().unwrap_or_default().to_owned(),
                    requirement: v["requirement"].as_str().unwrap_or_default().to_owned(),
                    target: v["target"].as_str().unwrap_or_default().to_owned(),
                    polarity: v["polarity"].as_str().unwrap_or_default().to_owned(),
                    requires: strings(&v["requires"]),
                    setup: v["setup"].as_str().unwrap_or_default().to_owned(),
                    operation: action["operation"].as_str().unwrap_or("scenario").to_owned(),
                    arguments: action.get("arguments").cloned().unwrap_or(Value::Null),
                    body: action["body"].as_str().map(str::to_owned),
                    expected: v["expected"].clone(),
                    assertions: strings(&v["expected"]["assertions"]),
                }
            })
            .collect()
    })
}

/// The vector with `id`.
pub fn get(id: &str) -> Option<&'static Vector> {
    all().iter().find(|v| v.id == id)
}
