//! Strict mode: what BMv2's JSON loader (behavioral-model
//! `src/bm_sim/P4Objects.cpp`, simple_switch's primitives) refuses, checked on
//! the raw JSON before `load.rs` builds the program. `load.rs` alone is
//! lenient: it accepts some shapes p4core can run but BMv2 cannot load (bare
//! `{op}` operands, one-level expression parameters, `setValid`, tables
//! without `type`/`max_size`...). Messages use BMv2's wording after the JSON
//! path, e.g. `actions[3].primitives[0].parameters[1]: Invalid 'type' in expression: ''`.

use crate::load::LoadError;
use serde_json::Value;
use std::collections::HashSet;

type R<T> = Result<T, LoadError>;

fn err<T>(path: &str, msg: impl std::fmt::Display) -> R<T> {
    Err(LoadError(format!("{path}: {msg}")))
}

/// The newest `__meta__.version` minor BMv2 accepts (major must be 2).
const MAX_MINOR_VERSION: u64 = 23;

/// simple_switch's action primitives (bm_sim core + targets/simple_switch)
/// and the exact number of parameters each takes.
const PRIMITIVES: &[(&str, usize)] = &[
    ("assign", 2),
    ("assign_VL", 2),
    ("assign_header", 2),
    ("assign_union", 2),
    ("assign_header_stack", 2),
    ("assign_union_stack", 2),
    ("push", 2),
    ("pop", 2),
    ("_jump", 1),
    ("_jump_if_zero", 2),
    ("exit", 0),
    ("assert", 1),
    ("assume", 1),
    ("log_msg", 2),
    ("modify_field", 2),
    ("modify_field_rng_uniform", 3),
    ("tna_lpf_sample", 5), // not BMv2's: the engine's TNA Lpf (tna.rs), only in lowered TNA programs
    ("add_to_field", 2),
    ("subtract_from_field", 2),
    ("drop", 0),
    ("mark_to_drop", 1),
    ("generate_digest", 2),
    ("add_header", 1),
    ("remove_header", 1),
    ("copy_header", 2),
    ("clone_ingress_pkt_to_egress", 2),
    ("clone_egress_pkt_to_egress", 2),
    ("resubmit", 1),
    ("recirculate", 1),
    ("resubmit_preserving_field_list", 1),
    ("recirculate_preserving_field_list", 1),
    ("modify_field_with_hash_based_offset", 4),
    ("no_op", 0),
    ("execute_meter", 3),
    ("count", 2),
    ("register_read", 3),
    ("register_write", 3),
    ("truncate", 1),
];

/// Primitive parameter types `add_primitive_to_action` knows.
const PARAM_TYPES: &[&str] = &[
    "hexstr",
    "runtime_data",
    "header",
    "field",
    "calculation",
    "meter_array",
    "counter_array",
    "register_array",
    "header_stack",
    "expression",
    "register",
    "extern",
    "string",
    "stack_field",
    "header_union",
    "header_union_stack",
    "parameters_vector",
];

/// `{type, value}` node types `build_expression` knows.
const EXPR_TYPES: &[&str] = &[
    "expression",
    "header",
    "field",
    "bool",
    "hexstr",
    "local",
    "register",
    "header_stack",
    "stack_field",
    "header_union",
    "header_union_stack",
];

/// Operators of `ExprOpcodesMap` (an unknown op is not refused by BMv2 but
/// silently read as a field load, so it is refused here).
const EXPR_OPS: &[&str] = &[
    "+", "-", "%", "/", "*", "<<", ">>", "==", "!=", ">", "<", ">=", "<=", "and", "or", "not", "&", "|", "^", "~",
    "valid", "valid_union", "?", "two_comp_mod", "usat_cast", "sat_cast", "d2b", "b2d", "dereference_stack",
    "dereference_header_stack", "dereference_union_stack", "last_stack_index", "size_stack", "access_field",
    "access_union_header",
];

/// Key match types `match_name_to_match_type` knows (BMv2 has no `optional`).
const MATCH_TYPES: &[&str] = &["exact", "lpm", "ternary", "valid", "range"];

/// Checks the whole document; the first violation is the error.
pub(crate) fn check_root(root: &Value) -> R<()> {
    check_version(root)?;
    check_unique_ids(root)?;
    check_errors_and_enums(root)?;
    for (i, a) in items(root, "actions").iter().enumerate() {
        let n_params = items(a, "runtime_data").len();
        for (j, p) in items(a, "primitives").iter().enumerate() {
            check_primitive(p, n_params, &format!("actions[{i}].primitives[{j}]"))?;
        }
    }
    for (i, p) in items(root, "parsers").iter().enumerate() {
        let mut names = HashSet::new();
        for (j, s) in items(p, "parse_states").iter().enumerate() {
            let path = format!("parsers[{i}].parse_states[{j}]");
            let name = s.get("name").and_then(Value::as_str).unwrap_or("");
            if !names.insert(name) {
                return err(&path, format!("Duplicate objects of type 'parse state' with name '{name}'"));
            }
            check_parse_state(s, &path)?;
        }
    }
    for (i, p) in items(root, "pipelines").iter().enumerate() {
        check_pipeline(root, p, &format!("pipelines[{i}]"))?;
    }
    for (i, c) in items(root, "checksums").iter().enumerate() {
        let path = format!("checksums[{i}]");
        match c.get("type").and_then(Value::as_str) {
            Some("generic" | "ipv4") => {}
            t => return err(&path, format!("checksum type '{}' is neither 'generic' nor 'ipv4'", t.unwrap_or(""))),
        }
        if let Some(cond) = c.get("if_cond").filter(|x| !x.is_null()) {
            check_expr(cond, &format!("{path}.if_cond"))?;
        }
    }
    Ok(())
}

/// The elements of an array attribute; absent or not an array reads as empty
/// (as jsoncpp iterates it); `load.rs` reports wrong types.
fn items<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn type_of(v: &Value) -> &str {
    v.get("type").and_then(Value::as_str).unwrap_or("")
}

fn check_version(root: &Value) -> R<()> {
    let Some(version) = root.get("__meta__").and_then(|m| m.get("version")) else { return Ok(()) };
    let (major, minor) = match version.as_array().map(Vec::as_slice) {
        Some([a, b]) => (a.as_u64(), b.as_u64()),
        _ => return err("__meta__.version", "Expected 'version' to be a JSON array of size 2"),
    };
    match (major, minor) {
        (Some(2), Some(m)) if m <= MAX_MINOR_VERSION => Ok(()),
        (Some(2), Some(m)) => err(
            "__meta__.version",
            format!("The most recent bmv2 JSON version number supported is 2.{MAX_MINOR_VERSION} but this JSON input is tagged with version number 2.{m}"),
        ),
        _ => err("__meta__.version", "We require a bmv2 JSON major version number of 2"),
    }
}

/// BMv2's `DupIdChecker`: ids (a missing id reads as 0) must be unique per kind.
fn check_unique_ids(root: &Value) -> R<()> {
    let kinds = [
        ("header_types", "header type"),
        ("headers", "header"),
        ("header_stacks", "header stack"),
        ("actions", "action"),
        ("pipelines", "pipeline"),
        ("counter_arrays", "counter"),
        ("meter_arrays", "meter"),
        ("register_arrays", "register"),
        ("checksums", "checksum"),
        ("learn_lists", "learn list"),
        ("field_lists", "field list"),
        ("parsers", "parser"),
        ("deparsers", "deparser"),
        ("extern_instances", "extern"),
        ("parse_vsets", "parser vset"),
    ];
    for (key, kind) in kinds {
        unique_ids(items(root, key), key, kind)?;
    }
    for (i, p) in items(root, "parsers").iter().enumerate() {
        unique_ids(items(p, "parse_states"), &format!("parsers[{i}].parse_states"), "parse state")?;
    }
    for (i, p) in items(root, "pipelines").iter().enumerate() {
        unique_ids(items(p, "tables"), &format!("pipelines[{i}].tables"), "table")?;
        unique_ids(items(p, "conditionals"), &format!("pipelines[{i}].conditionals"), "condition")?;
    }
    Ok(())
}

fn unique_ids(list: &[Value], path: &str, kind: &str) -> R<()> {
    let mut seen = HashSet::new();
    for (i, o) in list.iter().enumerate() {
        let id = match o.get("id") {
            None | Some(Value::Null) => 0,
            Some(v) => v.as_i64().map_or_else(|| err(&format!("{path}[{i}]"), "'id' must be an integer"), Ok)?,
        };
        if !seen.insert(id) {
            return err(&format!("{path}[{i}]"), format!("Several objects of type '{kind}' have the same id {id}"));
        }
    }
    Ok(())
}

/// `ErrorCodeMap::add` / `EnumMap::add_entry`: names and values unique (within an enum for enums).
fn check_errors_and_enums(root: &Value) -> R<()> {
    let pair = |e: &Value| (e.get(0).and_then(Value::as_str).map(str::to_string), e.get(1).and_then(Value::as_i64));
    let unique = |entries: &[Value], path: &str, what: &str| -> R<()> {
        let (mut names, mut values) = (HashSet::new(), HashSet::new());
        for (i, e) in entries.iter().enumerate() {
            let (name, value) = pair(e);
            if !names.insert(name) || !values.insert(value) {
                return err(&format!("{path}[{i}]"), format!("Invalid {what} specification in json: name or value repeated"));
            }
        }
        Ok(())
    };
    unique(items(root, "errors"), "errors", "errors")?;
    let mut enum_names = HashSet::new();
    for (i, e) in items(root, "enums").iter().enumerate() {
        let path = format!("enums[{i}]");
        if !enum_names.insert(e.get("name").and_then(Value::as_str)) {
            return err(&path, "Invalid enums specification in json: enum name repeated");
        }
        unique(items(e, "entries"), &format!("{path}.entries"), "enums")?;
    }
    Ok(())
}

/// One primitive call: a known name, its exact parameter count, known parameter types.
fn check_primitive(p: &Value, n_action_params: usize, path: &str) -> R<()> {
    let name = p.get("op").and_then(Value::as_str).unwrap_or("");
    let Some((_, expected)) = PRIMITIVES.iter().find(|(n, _)| *n == name) else {
        return err(path, format!("Unknown primitive action: {name}"));
    };
    let params = items(p, "parameters");
    if params.len() != *expected {
        return err(
            path,
            format!("Invalid number of parameters for primitive action {name}: expected {expected} but got {}", params.len()),
        );
    }
    for (k, param) in params.iter().enumerate() {
        check_param(param, name, n_action_params, &format!("{path}.parameters[{k}]"))?;
    }
    Ok(())
}

fn check_param(param: &Value, primitive: &str, n_action_params: usize, path: &str) -> R<()> {
    let ty = type_of(param);
    if !PARAM_TYPES.contains(&ty) {
        return err(path, format!("Parameter type '{ty}' not supported"));
    }
    let value = param.get("value").unwrap_or(&Value::Null);
    match ty {
        "runtime_data" => match value.as_u64() {
            Some(i) if (i as usize) < n_action_params => Ok(()),
            _ => err(path, format!("Invalid 'runtime_data' parameter reference when calling primitive '{primitive}': offset {value} but the action has {n_action_params} parameter(s)")),
        },
        // The parameter's value is itself a {type, value} node (so an
        // operation is written {"type": "expression", "value": {"type": "expression", "value": {op...}}}).
        "expression" => check_expr(value, path),
        "register" => check_register(value, path),
        "parameters_vector" => {
            for (j, e) in value.as_array().map_or(&[][..], Vec::as_slice).iter().enumerate() {
                check_expr(e, &format!("{path}.value[{j}]"))?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn check_register(value: &Value, path: &str) -> R<()> {
    match value.as_array().map(Vec::as_slice) {
        Some([_, index]) => check_expr(index, path),
        _ => err(path, "register value must be [name, index]"),
    }
}

/// `build_expression`: a `{type, value}` node; an `expression` node's value is an `{op, left, right}` node.
fn check_expr(v: &Value, path: &str) -> R<()> {
    if v.is_null() {
        return Ok(());
    }
    let ty = type_of(v);
    if !EXPR_TYPES.contains(&ty) {
        return err(path, format!("Invalid 'type' in expression: '{ty}'"));
    }
    let value = v.get("value").unwrap_or(&Value::Null);
    match ty {
        "expression" => check_op(value, path),
        "register" => check_register(value, path),
        _ => Ok(()),
    }
}

fn check_op(node: &Value, path: &str) -> R<()> {
    let Some(op) = node.get("op").and_then(Value::as_str) else {
        return err(path, "the value of an 'expression' node must be an {op, left, right} node");
    };
    if !EXPR_OPS.contains(&op) {
        return err(path, format!("unknown expression op '{op}'"));
    }
    let operand = |k: &str| node.get(k).unwrap_or(&Value::Null);
    if op == "access_field" || op == "access_union_header" {
        // `right` is an integer offset (a field, or a member of the union), not an expression
        return check_expr(operand("left"), path);
    }
    for k in ["cond", "left", "right"] {
        check_expr(operand(k), path)?;
    }
    Ok(())
}

fn tuple_size(op: &Value, n: usize, path: &str) -> R<()> {
    match op.get("parameters").and_then(Value::as_array) {
        Some(a) if a.len() == n => Ok(()),
        Some(a) => err(path, format!("Expected 'parameters' to be a JSON array of size {n} but array has size {}", a.len())),
        None => err(path, "Expected 'parameters' to be a JSON array"),
    }
}

fn check_parse_state(s: &Value, path: &str) -> R<()> {
    for (j, o) in items(s, "parser_ops").iter().enumerate() {
        check_parser_op(o, &format!("{path}.parser_ops[{j}]"))?;
    }
    for (j, k) in items(s, "transition_key").iter().enumerate() {
        if !["field", "stack_field", "union_stack_field", "lookahead"].contains(&type_of(k)) {
            return err(&format!("{path}.transition_key[{j}]"), format!("Invalid entry in parse state key: type '{}'", type_of(k)));
        }
    }
    Ok(())
}

fn check_parser_op(o: &Value, path: &str) -> R<()> {
    let op = o.get("op").and_then(Value::as_str).unwrap_or("");
    let params = items(o, "parameters");
    let param = |i: usize| params.get(i).unwrap_or(&Value::Null);
    let ppath = |i: usize| format!("{path}.parameters[{i}]");
    match op {
        "extract" | "extract_VL" => {
            tuple_size(o, if op == "extract" { 1 } else { 2 }, path)?;
            if op == "extract_VL" {
                if type_of(param(1)) != "expression" {
                    return err(&ppath(1), format!("Parser 'extract_VL' operation has invalid length type '{}', expected 'expression'", type_of(param(1))));
                }
                check_expr(param(1).get("value").unwrap_or(&Value::Null), &ppath(1))?;
            }
            match type_of(param(0)) {
                "regular" | "stack" | "union_stack" => Ok(()),
                t => err(&ppath(0), format!("Extract type '{t}' not supported")),
            }
        }
        "set" => {
            tuple_size(o, 2, path)?;
            if type_of(param(0)) != "field" {
                return err(path, format!("Parser 'set' operation has invalid destination type '{}', expected 'field'", type_of(param(0))));
            }
            match type_of(param(1)) {
                "field" | "hexstr" | "lookahead" => Ok(()),
                "expression" => check_expr(param(1).get("value").unwrap_or(&Value::Null), &ppath(1)),
                t => err(path, format!("Parser 'set' operation has unsupported source type '{t}'")),
            }
        }
        "verify" => {
            tuple_size(o, 2, path)?;
            check_expr(param(0), &ppath(0))?;
            if param(1).is_i64() { Ok(()) } else { check_expr(param(1), &ppath(1)) }
        }
        "primitive" => {
            tuple_size(o, 1, path)?;
            check_primitive(param(0), 0, &ppath(0))
        }
        "shift" | "advance" if params.len() != 1 => {
            err(path, format!("Parser '{op}' operation has invalid number of arguments, expected 1"))
        }
        "shift" => {
            if param(0).is_u64() { Ok(()) } else { err(&ppath(0), "Parser 'shift' operation takes a byte count (integer)") }
        }
        "advance" => match type_of(param(0)) {
            "field" | "hexstr" => Ok(()),
            "expression" => check_expr(param(0).get("value").unwrap_or(&Value::Null), &ppath(0)),
            t => err(path, format!("Parser 'advance' operation has unsupported parameter type '{t}'")),
        },
        _ => err(path, format!("Parser op '{op}' not supported")),
    }
}

fn check_pipeline(root: &Value, p: &Value, path: &str) -> R<()> {
    for (i, t) in items(p, "tables").iter().enumerate() {
        check_table(t, &format!("{path}.tables[{i}]"))?;
    }
    for (i, c) in items(p, "conditionals").iter().enumerate() {
        let cpath = format!("{path}.conditionals[{i}]");
        check_expr(c.get("expression").unwrap_or(&Value::Null), &format!("{cpath}.expression"))?;
    }
    for (i, c) in items(p, "action_calls").iter().enumerate() {
        let id = c.get("action_id").and_then(Value::as_i64);
        let action = items(root, "actions").iter().find(|a| a.get("id").and_then(Value::as_i64) == id);
        if let Some(a) = action.filter(|a| !items(a, "runtime_data").is_empty()) {
            let name = a.get("name").and_then(Value::as_str).unwrap_or("");
            return err(&format!("{path}.action_calls[{i}]"), format!("Cannot call action '{name}' directly from control as it expects parameters"));
        }
    }
    Ok(())
}

fn check_table(t: &Value, path: &str) -> R<()> {
    let name = t.get("name").and_then(Value::as_str).unwrap_or("");
    match type_of(t) {
        "simple" | "indirect" | "indirect_ws" => {}
        ty => return err(path, format!("Invalid table type '{ty}'")),
    }
    if t.get("max_size").is_none() && t.get("entries").is_none() {
        return err(path, format!("Table '{name}' has neither 'max_size' nor 'entries' attribute"));
    }
    for (j, k) in items(t, "key").iter().enumerate() {
        let mt = k.get("match_type").and_then(Value::as_str).unwrap_or("");
        if !MATCH_TYPES.contains(&mt) {
            return err(&format!("{path}.key[{j}]"), format!("Invalid match type: '{mt}'"));
        }
    }
    Ok(())
}
