//! Short, stable content digests for opaque tokens (guide versions, catalog versions, run ids).

use sha2::{Digest, Sha256};

/// `prefix` followed by the first 12 hex digits of the SHA-256 of `bytes`.
pub fn token(prefix: &str, bytes: &[u8]) -> String {
    token_of(prefix, &Sha256::digest(bytes))
}

/// `prefix` followed by the first 12 hex digits of `hash` (a SHA-256 computed in parts).
pub fn token_of(prefix: &str, hash: &[u8]) -> String {
    let mut out = String::with_capacity(prefix.len() + 12);
    out.push_str(prefix);
    for b in hash.iter().take(6) {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// The canonical text of a JSON value: object keys sorted at every level, so two equal
/// values always hash alike whatever their key order.
pub fn canonical(v: &serde_json::Value) -> String {
    fn sorted(v: &serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                serde_json::Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&m[k]))).collect())
            }
            serde_json::Value::Array(a) => serde_json::Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(v).to_string()
}

/// The SHA-256 of `v`'s compact JSON text, hashed as it is written (the text is never built).
pub fn sha256_json<T: serde::Serialize + ?Sized>(v: &T) -> [u8; 32] {
    struct Hashing(Sha256);
    impl std::io::Write for Hashing {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.update(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut hashing = Hashing(Sha256::new());
    let _ = serde_json::to_writer(&mut hashing, v);
    hashing.0.finalize().into()
}
