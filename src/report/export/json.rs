//! JSON: the versioned document every later command reads.
//!
//! Reading checks a file before trusting it: its `schema` version must be the one this
//! build writes ([`crate::results::SCHEMA`]), the document must satisfy `schema/result-v1.schema.json`
//! (embedded; checked by [`validate`], a small validator for the keywords that schema
//! uses — `pattern` is not checked), and every time (`*_s`) must be within ±1e12 s (negative measured times are refused by
//! the schema's minimum)
//! (~31,700 years: anything larger is a corrupt or forged file, not a measurement).

use super::Exporter;
use crate::results::ResultSet;
use serde_json::Value;
use std::path::Path;

pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn render(&self, rs: &ResultSet) -> Result<Vec<u8>, String> {
        let mut v = serde_json::to_vec_pretty(rs).map_err(|e| e.to_string())?;
        v.push(b'\n');
        Ok(v)
    }
}

/// The schema result files are checked against.
pub const SCHEMA_TEXT: &str = include_str!("../../../schema/result-v1.schema.json");

/// Largest time (seconds) a result file may hold.
pub const MAX_SECONDS: f64 = 1e12;

pub fn read(path: &Path) -> Result<ResultSet, String> {
    let text = crate::fs::input::read_bounded(path, crate::fs::input::JSON_MAX)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let not = |why: String| format!("{} is not a manyfiles result: {why}", path.display());
    let v: Value = serde_json::from_str(&text).map_err(|e| not(e.to_string()))?;
    if !v.is_object() {
        return Err(not("not a JSON object".into()));
    }
    match v.get("schema") {
        Some(Value::Number(n)) if n.as_u64() == Some(crate::results::SCHEMA as u64) => {}
        Some(s) => {
            return Err(format!(
                "{}: schema {s} is not supported (this manyfiles reads schema {})",
                path.display(),
                crate::results::SCHEMA
            ));
        }
        None => return Err(not("no \"schema\" version".into())),
    }
    check(&v).map_err(not)?;
    serde_json::from_value(v).map_err(|e| not(e.to_string()))
}

/// Check a parsed result document: the schema, then the bound on times.
pub fn check(v: &Value) -> Result<(), String> {
    let schema: Value = serde_json::from_str(SCHEMA_TEXT).expect("the embedded schema parses");
    validate(&schema, &schema, v, "")?;
    check_times(v, "")
}

fn check_times(v: &Value, at: &str) -> Result<(), String> {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let here = format!("{at}/{k}");
                // Times end in `_s`; rates (`bandwidth_bytes_per_s`) do too, and are not
                // times: a fitted bandwidth of 2.6 TB/s (a per-byte cost near 0) made a
                // saved calibration unreadable by `predict --model` (issue 40, session 26).
                if k.ends_with("_s") && !k.ends_with("_per_s") {
                    let nums: Vec<&Value> = match x {
                        Value::Array(a) => a.iter().collect(),
                        other => vec![other],
                    };
                    for n in nums {
                        if let Some(f) = n.as_f64() {
                            if !f.is_finite() || f.abs() > MAX_SECONDS {
                                return Err(format!("{here}: {n} is not a time (more than {MAX_SECONDS:e} seconds)"));
                            }
                        }
                    }
                }
                check_times(x, &here)?;
            }
            Ok(())
        }
        Value::Array(a) => a.iter().enumerate().try_for_each(|(i, x)| check_times(x, &format!("{at}/{i}"))),
        _ => Ok(()),
    }
}

fn type_ok(t: &str, v: &Value) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "number" => v.is_number(),
        "integer" => v.as_i64().is_some() || v.as_u64().is_some() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => true,
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 40 { format!("{}…", s.chars().take(40).collect::<String>()) } else { s }
}

/// Validate `v` against `s` (JSON Schema 2020-12, the keywords the result schema uses:
/// type, const, enum, required, properties, items, minItems, maxItems, minLength,
/// minimum, maximum, exclusiveMinimum, $ref to #/$defs, oneOf, anyOf, allOf, if/then).
/// `at` is the JSON pointer of `v`, for the message.
pub fn validate(root: &Value, s: &Value, v: &Value, at: &str) -> Result<(), String> {
    let Some(s) = s.as_object() else { return Ok(()) };
    let here = || if at.is_empty() { "/".to_string() } else { at.to_string() };
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let target = r
            .strip_prefix("#")
            .and_then(|p| root.pointer(p))
            .ok_or_else(|| format!("schema: unresolved reference {r}"))?;
        validate(root, target, v, at)?;
    }
    if let Some(t) = s.get("type") {
        let ok = match t {
            Value::String(t) => type_ok(t, v),
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).any(|t| type_ok(t, v)),
            _ => true,
        };
        if !ok {
            return Err(format!("{}: {} is not of type {t}", here(), short(v)));
        }
    }
    if let Some(c) = s.get("const") {
        if c != v {
            return Err(format!("{}: {} must be {c}", here(), short(v)));
        }
    }
    if let Some(Value::Array(e)) = s.get("enum") {
        if !e.contains(v) {
            return Err(format!("{}: {} is not one of {}", here(), short(v), short(&Value::Array(e.clone()))));
        }
    }
    if let Some(f) = v.as_f64() {
        if let Some(m) = s.get("minimum").and_then(Value::as_f64) {
            if f < m {
                return Err(format!("{}: {} is below the minimum {m}", here(), short(v)));
            }
        }
        if let Some(m) = s.get("exclusiveMinimum").and_then(Value::as_f64) {
            if f <= m {
                return Err(format!("{}: {} must be above {m}", here(), short(v)));
            }
        }
        if let Some(m) = s.get("maximum").and_then(Value::as_f64) {
            if f > m {
                return Err(format!("{}: {} is above the maximum {m}", here(), short(v)));
            }
        }
    }
    if let (Some(n), Some(text)) = (s.get("minLength").and_then(Value::as_u64), v.as_str()) {
        if (text.chars().count() as u64) < n {
            return Err(format!("{}: {} is shorter than {n} characters", here(), short(v)));
        }
    }
    if let Some(obj) = v.as_object() {
        if let Some(Value::Array(req)) = s.get("required") {
            for k in req.iter().filter_map(Value::as_str) {
                if !obj.contains_key(k) {
                    return Err(format!("{}: \"{k}\" is missing", here()));
                }
            }
        }
        if let Some(Value::Object(props)) = s.get("properties") {
            for (k, ps) in props {
                if let Some(x) = obj.get(k) {
                    validate(root, ps, x, &format!("{at}/{k}"))?;
                }
            }
        }
    }
    if let Some(arr) = v.as_array() {
        if let Some(n) = s.get("minItems").and_then(Value::as_u64) {
            if (arr.len() as u64) < n {
                return Err(format!("{}: fewer than {n} items", here()));
            }
        }
        if let Some(n) = s.get("maxItems").and_then(Value::as_u64) {
            if (arr.len() as u64) > n {
                return Err(format!("{}: more than {n} items", here()));
            }
        }
        if let Some(items) = s.get("items").filter(|i| i.is_object()) {
            for (i, x) in arr.iter().enumerate() {
                validate(root, items, x, &format!("{at}/{i}"))?;
            }
        }
    }
    if let Some(Value::Array(all)) = s.get("allOf") {
        for sub in all {
            validate(root, sub, v, at)?;
        }
    }
    if let Some(Value::Array(any)) = s.get("anyOf") {
        let mut first = None;
        if !any.iter().any(|sub| match validate(root, sub, v, at) {
            Ok(()) => true,
            Err(e) => {
                first.get_or_insert(e);
                false
            }
        }) {
            return Err(first.unwrap_or_else(|| format!("{}: matches none of anyOf", here())));
        }
    }
    if let Some(Value::Array(one)) = s.get("oneOf") {
        let mut errs = Vec::new();
        let n = one.iter().filter(|sub| validate(root, sub, v, at).map_err(|e| errs.push(e)).is_ok()).count();
        if n != 1 {
            // The most telling failure: the branch of the value's own type.
            let e = errs.into_iter().find(|e| !e.contains("is not of type"));
            return Err(e.unwrap_or_else(|| format!("{}: {} matches {n} of oneOf", here(), short(v))));
        }
    }
    if let Some(cond) = s.get("if") {
        if validate(root, cond, v, at).is_ok() {
            if let Some(then) = s.get("then") {
                validate(root, then, v, at)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validator_refuses_what_the_schema_forbids() {
        let s: Value = serde_json::json!({
            "type": "object", "required": ["a"],
            "properties": {"a": {"type": "number", "minimum": 0}, "b": {"$ref": "#/$defs/e"}},
            "$defs": {"e": {"enum": ["x", "y"]}}
        });
        assert!(validate(&s, &s, &serde_json::json!({"a": 1, "b": "x"}), "").is_ok());
        let e = validate(&s, &s, &serde_json::json!({"a": -1}), "").unwrap_err();
        assert!(e.contains("/a") && e.contains("minimum"), "{e}");
        assert!(validate(&s, &s, &serde_json::json!({"a": 1, "b": "z"}), "").is_err());
        assert!(validate(&s, &s, &serde_json::json!({"b": "x"}), "").unwrap_err().contains("\"a\" is missing"));
        assert!(validate(&s, &s, &serde_json::json!({"a": "NaN"}), "").is_err());
    }

    #[test]
    fn huge_and_negative_times_are_refused() {
        assert!(check_times(&serde_json::json!({"m": [{"elapsed_s": 1.5}]}), "").is_ok());
        assert!(check_times(&serde_json::json!({"m": [{"elapsed_s": 2e12}]}), "").is_err());
        assert!(check_times(&serde_json::json!({"ci95_s": [-3e12, 2.0]}), "").is_err());
        // A Student t interval of a noisy mean may reach below 0: not refused here.
        assert!(check_times(&serde_json::json!({"ci95_s": [-1.0, 2.0]}), "").is_ok());
        // A rate is no time: a bandwidth of 2.6 TB/s (per-byte cost near 0) is read back.
        assert!(check_times(&serde_json::json!({"models": [{"bandwidth_bytes_per_s": 2.55e12}]}), "").is_ok());
    }
}
