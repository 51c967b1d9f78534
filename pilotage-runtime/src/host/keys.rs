//! Idempotency keys (Part II §7.5): a fresh key for every execute request the Host makes one
//! for, and a caller's key refused when it was already used with another runnable or input.

use std::collections::VecDeque;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::gate::Runnable;

/// How many keys the book remembers (the oldest is forgotten first).
const REMEMBERED: usize = 1_024;

/// The keys used on this connection and what each was used for.
#[derive(Debug, Default)]
pub(crate) struct KeyBook {
    used: VecDeque<(String, [u8; 32])>,
}

impl KeyBook {
    /// The key for one execute request: `given` when it was not used for another runnable or
    /// input (then `Err` with the reason), else a fresh one.
    pub fn key(
        &mut self,
        given: Option<&str>,
        runnable: &Runnable,
        input: Option<&Value>,
    ) -> Result<String, String> {
        let digest = digest(runnable, input);
        let key = match given {
            Some(key) => {
                if self.used.iter().any(|(k, d)| k == key && *d != digest) {
                    return Err(format!(
                        "the idempotency key {key} was used with another runnable or input; a changed Run needs a fresh key"
                    ));
                }
                key.to_owned()
            }
            None => uuid::Uuid::new_v4().to_string(),
        };
        if self.used.len() >= REMEMBERED {
            self.used.pop_front();
        }
        self.used.push_back((key.clone(), digest));
        Ok(key)
    }
}

fn digest(runnable: &Runnable, input: Option<&Value>) -> [u8; 32] {
    let mut hash = Sha256::new();
    match runnable {
        Runnable::Program(program) => hash.update(format!("program:{program}")),
        Runnable::Promoted(reference) => hash.update(format!("ref:{reference}")),
    }
    hash.update(format!("\ninput:{}", input.unwrap_or(&Value::Null)));
    hash.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_reused_for_another_program_is_refused_and_fresh_keys_differ() {
        let mut book = KeyBook::default();
        let a = Runnable::Program(Value::from("a"));
        let b = Runnable::Program(Value::from("b"));
        assert_eq!(book.key(Some("k"), &a, None).as_deref(), Ok("k"));
        assert_eq!(book.key(Some("k"), &a, None).as_deref(), Ok("k"));
        assert!(book.key(Some("k"), &b, None).unwrap_err().contains("fresh key"));
        assert!(book.key(Some("k"), &a, Some(&Value::from(1))).is_err());
        let (x, y) = (book.key(None, &a, None).unwrap(), book.key(None, &a, None).unwrap());
        assert_ne!(x, y);
    }
}
