//! References and reachability: a `$ref` fragment resolved in its document, the nodes the
//! root reaches, and `$ref` cycles that never descend into the instance.

use serde_json::Value;

use super::names::escape;
use super::tree::Node;

/// The value `fragment` (a `$ref` after its `#`) points at, with its canonical JSON Pointer.
pub(super) fn resolve<'s>(doc: &'s Value, fragment: &str) -> Result<(String, &'s Value), String> {
    let decoded = percent_decode(fragment).ok_or("its fragment is not percent-encoded UTF-8")?;
    if decoded.is_empty() {
        return Ok((String::new(), doc));
    }
    let Some(tokens) = decoded.strip_prefix('/') else {
        return Err(format!("no location is named `{decoded}` in the document"));
    };
    let mut here = doc;
    let mut pointer = String::new();
    for raw in tokens.split('/') {
        let token = unescape(raw).ok_or_else(|| format!("`{decoded}` is not a JSON Pointer"))?;
        let next = match here {
            Value::Object(members) => members.get(&token),
            Value::Array(items) => array_index(&token).and_then(|i| items.get(i)),
            _ => None,
        };
        here = next.ok_or_else(|| format!("`#{decoded}` does not resolve inside the document"))?;
        pointer.push('/');
        pointer.push_str(&escape(&token));
    }
    Ok((pointer, here))
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        if byte == b'%' {
            let hex = text.get(i + 1..i + 3).filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(byte);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A JSON Pointer reference token with `~1` and `~0` undone.
fn unescape(raw: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.next() {
                Some('0') => out.push('~'),
                Some('1') => out.push('/'),
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

fn array_index(token: &str) -> Option<usize> {
    let canonical = token == "0" || (!token.starts_with('0') && token.bytes().all(|b| b.is_ascii_digit()));
    if canonical {
        token.parse().ok()
    } else {
        None
    }
}

/// Which nodes the root reaches through any keyword.
pub(super) fn reachable(nodes: &[Node]) -> Vec<bool> {
    let mut seen = vec![false; nodes.len()];
    let mut stack = vec![0usize];
    let mut next = Vec::new();
    while let Some(id) = stack.pop() {
        match seen.get_mut(id) {
            Some(flag) if !*flag => *flag = true,
            _ => continue,
        }
        for kw in nodes.get(id).map(|node| node.kws.as_slice()).unwrap_or_default() {
            kw.same_instance(&mut next);
            kw.below(&mut next);
        }
        stack.append(&mut next);
    }
    seen
}

/// A reachable node on a cycle of keywords applying to the same instance, if any: evaluating it
/// would never end.
pub(super) fn cycle(nodes: &[Node], reachable: &[bool]) -> Option<usize> {
    let edges: Vec<Vec<usize>> = nodes
        .iter()
        .map(|node| {
            let mut out = Vec::new();
            node.kws.iter().for_each(|kw| kw.same_instance(&mut out));
            out
        })
        .collect();
    // 0: not visited, 1: on the current path, 2: done.
    let mut colour = vec![0u8; nodes.len()];
    let paint = |colour: &mut Vec<u8>, id: usize, to: u8| {
        if let Some(c) = colour.get_mut(id) {
            *c = to;
        }
    };
    for start in 0..nodes.len() {
        if reachable.get(start) != Some(&true) || colour.get(start) != Some(&0) {
            continue;
        }
        paint(&mut colour, start, 1);
        let mut stack = vec![(start, 0usize)];
        while let Some(top) = stack.last_mut() {
            let (node, next) = *top;
            let Some(&target) = edges.get(node).and_then(|out| out.get(next)) else {
                paint(&mut colour, node, 2);
                stack.pop();
                continue;
            };
            top.1 += 1;
            match colour.get(target) {
                Some(0) => {
                    paint(&mut colour, target, 1);
                    stack.push((target, 0));
                }
                Some(1) => return Some(target),
                _ => {}
            }
        }
    }
    None
}
