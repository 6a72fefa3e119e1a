//! The JSON Patch (RFC 6902) that turns one JSON document into another: what a `STATE_DELTA`
//! carries. Objects are compared key by key (removed keys first, then added or changed ones, in
//! key order); anything else that differs (a scalar, an array) is replaced whole.

use serde_json::{Value, json};

/// The operations that turn `from` into `to` (none when they are equal).
pub(super) fn diff(from: &Value, to: &Value) -> Vec<Value> {
    let mut ops = Vec::new();
    walk(from, to, &mut String::new(), &mut ops);
    ops
}

fn walk(from: &Value, to: &Value, path: &mut String, ops: &mut Vec<Value>) {
    match (from, to) {
        (Value::Object(a), Value::Object(b)) => {
            let len = path.len();
            for key in a.keys().filter(|k| !b.contains_key(*k)) {
                push_token(path, key);
                ops.push(json!({"op": "remove", "path": path.as_str()}));
                path.truncate(len);
            }
            for (key, value) in b {
                push_token(path, key);
                match a.get(key) {
                    None => ops.push(json!({"op": "add", "path": path.as_str(), "value": value})),
                    Some(old) => walk(old, value, path, ops),
                }
                path.truncate(len);
            }
        }
        _ if from == to => {}
        _ => ops.push(json!({"op": "replace", "path": path.as_str(), "value": to})),
    }
}

/// `/key` with `~` and `/` escaped as RFC 6901 says.
fn push_token(path: &mut String, key: &str) {
    path.push('/');
    path.push_str(&key.replace('~', "~0").replace('/', "~1"));
}

#[cfg(test)]
#[allow(clippy::panic)]
mod tests {
    use super::*;

    /// Applies `ops` as RFC 6902 does (the subset `diff` writes), to check a patch by its effect.
    fn apply(doc: &mut Value, ops: &[Value]) {
        for op in ops {
            let path = op["path"].as_str().unwrap_or_default();
            if path.is_empty() {
                *doc = op["value"].clone();
                continue;
            }
            let (parent, last) = path.rsplit_once('/').unwrap_or_default();
            let key = last.replace("~1", "/").replace("~0", "~");
            let Some(Value::Object(map)) = doc.pointer_mut(parent) else { panic!("no parent {parent}") };
            match op["op"].as_str() {
                Some("remove") => {
                    map.remove(&key);
                }
                _ => {
                    map.insert(key, op["value"].clone());
                }
            }
        }
    }

    #[test]
    fn a_patch_turns_one_state_into_the_other() {
        let from = json!({"theme": "dark", "gone": 1, "nested": {"a": 1, "b/c": [1]}, "list": [1, 2]});
        let to = json!({"theme": "light", "nested": {"a": 1, "b/c": [1, 2], "new~": true}, "list": [1, 2], "x": null});
        let ops = diff(&from, &to);
        assert_eq!(ops[0], json!({"op": "remove", "path": "/gone"}));
        assert!(ops.contains(&json!({"op": "replace", "path": "/nested/b~1c", "value": [1, 2]})));
        assert!(ops.contains(&json!({"op": "add", "path": "/nested/new~0", "value": true})));
        assert_eq!(ops.len(), 5, "{ops:?}");
        let mut doc = from.clone();
        apply(&mut doc, &ops);
        assert_eq!(doc, to);
        assert!(diff(&to, &to).is_empty());
        assert_eq!(diff(&json!(1), &json!({"a": 1})), [json!({"op": "replace", "path": "", "value": {"a": 1}})]);
    }
}
