//! BMv2 JSON -> `Program`. Every error names the JSON part it comes from,
//! e.g. `pipelines[0].tables[3].key[1]: unknown match_type 'foo'`.

use crate::program::*;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fmt;

/// A JSON program that could not be loaded: `path: what is wrong`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError(pub String);

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LoadError {}

type R<T> = Result<T, LoadError>;

/// Resolves a parse state name (None: accept) at a JSON path.
type StateRef<'a> = dyn Fn(Option<&str>, &str) -> R<Option<usize>> + 'a;

fn err<T>(path: &str, msg: impl fmt::Display) -> R<T> {
    Err(LoadError(format!("{path}: {msg}")))
}

fn obj<'a>(v: &'a Value, path: &str) -> R<&'a Map<String, Value>> {
    v.as_object().map_or_else(|| err(path, "expected a JSON object"), Ok)
}

fn get<'a>(v: &'a Value, key: &str, path: &str) -> R<&'a Value> {
    match obj(v, path)?.get(key) {
        Some(x) => Ok(x),
        None => err(path, format!("missing attribute '{key}'")),
    }
}

fn get_str<'a>(v: &'a Value, key: &str, path: &str) -> R<&'a str> {
    get(v, key, path)?
        .as_str()
        .map_or_else(|| err(path, format!("'{key}' must be a string")), Ok)
}

fn get_arr<'a>(v: &'a Value, key: &str, path: &str) -> R<&'a [Value]> {
    get(v, key, path)?
        .as_array()
        .map_or_else(|| err(path, format!("'{key}' must be an array")), |a| Ok(a.as_slice()))
}

/// An optional array attribute: absent or null reads as empty.
fn opt_arr<'a>(v: &'a Value, key: &str, path: &str) -> R<&'a [Value]> {
    match obj(v, path)?.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => err(path, format!("'{key}' must be an array")),
    }
}

fn get_u64(v: &Value, key: &str, path: &str) -> R<u64> {
    get(v, key, path)?
        .as_u64()
        .map_or_else(|| err(path, format!("'{key}' must be a non-negative integer")), Ok)
}

fn get_i64(v: &Value, key: &str, path: &str) -> R<i64> {
    get(v, key, path)?
        .as_i64()
        .map_or_else(|| err(path, format!("'{key}' must be an integer")), Ok)
}

fn opt_bool(v: &Value, key: &str, default: bool, path: &str) -> R<bool> {
    match obj(v, path)?.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => err(path, format!("'{key}' must be a boolean")),
    }
}

fn opt_str<'a>(v: &'a Value, key: &str, path: &str) -> R<Option<&'a str>> {
    match obj(v, path)?.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => err(path, format!("'{key}' must be a string or null")),
    }
}

fn str_pair<'a>(v: &'a Value, path: &str) -> R<(&'a str, &'a str)> {
    match v.as_array().map(|a| a.as_slice()) {
        Some([Value::String(a), Value::String(b)]) => Ok((a, b)),
        _ => err(path, "expected a [header, field] pair of strings"),
    }
}

/// Parses a BMv2 hexstr (`0x..`, optionally negative) into an integer.
pub(crate) fn parse_hex(s: &str, path: &str) -> R<i128> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let digits = body
        .strip_prefix("0x")
        .or_else(|| body.strip_prefix("0X"))
        .unwrap_or(body);
    let trimmed = digits.trim_start_matches('0');
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
        return err(path, format!("invalid hexstr '{s}'"));
    }
    if trimmed.len() > 32 {
        return err(path, format!("hexstr '{s}' is wider than 128 bits (unsupported)"));
    }
    let v = if trimmed.is_empty() { 0 } else { u128::from_str_radix(trimmed, 16).unwrap() } as i128;
    Ok(if neg { v.wrapping_neg() } else { v })
}

/// Parses a hexstr into big-endian bytes, left-padded to `len` bytes.
fn parse_hex_bytes(s: &str, len: usize, path: &str) -> R<Vec<u8>> {
    let digits = s.strip_prefix("0x").unwrap_or(s);
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
        return err(path, format!("invalid hexstr '{s}'"));
    }
    let padded = if digits.len() % 2 == 1 { format!("0{digits}") } else { digits.to_string() };
    let mut bytes: Vec<u8> = (0..padded.len() / 2)
        .map(|i| u8::from_str_radix(&padded[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    while bytes.len() > len && bytes[0] == 0 {
        bytes.remove(0);
    }
    if bytes.len() > len {
        return err(path, format!("hexstr '{s}' is wider than the {len}-byte key"));
    }
    let mut out = vec![0u8; len - bytes.len()];
    out.extend(bytes);
    Ok(out)
}

/// The byte length BMv2's `ByteContainer` gives a hexstr (two digits a byte, rounded up).
fn hex_byte_len(s: &str) -> Option<usize> {
    let digits = s.strip_prefix("0x").unwrap_or(s);
    digits.chars().all(|c| c.is_ascii_hexdigit()).then(|| digits.len().div_ceil(2))
}

/// BMv2 wants a select value (or mask) exactly as wide as the select key, in bytes.
fn check_transition_width(what: &str, hex: Option<&str>, key_bytes: usize, path: &str) -> R<()> {
    // An invalid hexstr is reported where it is parsed.
    let width = hex.and_then(hex_byte_len).unwrap_or(key_bytes);
    if width != key_bytes {
        return err(path, format!("Parser transition {what} has incorrect width, expected width is {key_bytes} bytes but actual width is {width} bytes"));
    }
    Ok(())
}

fn hex_value(v: &Value, path: &str) -> R<i128> {
    match v {
        Value::String(s) => parse_hex(s, path),
        Value::Number(n) if n.is_i64() => Ok(n.as_i64().unwrap() as i128),
        _ => err(path, "expected a hexstr"),
    }
}

pub(crate) fn mask_of(width: u32) -> u128 {
    if width >= 128 { u128::MAX } else { (1u128 << width) - 1 }
}

const CORE_ERRORS: [(&str, i128); 7] = [
    ("NoError", 0),
    ("PacketTooShort", 1),
    ("NoMatch", 2),
    ("StackOutOfBounds", 3),
    ("HeaderTooShort", 4),
    ("ParserTimeout", 5),
    ("ParserInvalidArgument", 6),
];

/// Names local to one pipeline (tables, conditionals, action calls share a namespace).
#[derive(Default)]
struct PipelineNames {
    nodes: HashMap<String, Node>,
}

struct Loader {
    p: Program,
    action_ids: HashMap<i64, usize>,
    field_list_ids: HashMap<i64, usize>,
    learn_list_ids: HashMap<i64, usize>,
    calc_names: HashMap<String, usize>,
    aliases: HashMap<String, usize>,
    header_type_names: HashMap<String, usize>,
    header_ids: HashMap<i64, usize>,
    union_ids: HashMap<i64, usize>,
    union_type_names: HashMap<String, Vec<(String, String)>>,
    /// Parameter count of the action being loaded (runtime_data bounds).
    action_params: std::cell::Cell<Option<usize>>,
    /// Refuse what BMv2's loader refuses (see `strict.rs`), not only what p4core cannot run.
    strict: bool,
}

impl Program {
    /// Loads and validates a BMv2 JSON program (v1model / simple_switch),
    /// refusing everything BMv2's loader refuses (strict mode).
    pub fn from_json(text: &str) -> Result<Program, LoadError> {
        Self::load_json(text, true)
    }

    /// Like `from_json`, but also accepts shapes BMv2 refuses and p4core can
    /// still run (one-level expression parameters, bare `{op}` operands,
    /// `setValid`, tables without `type`/`max_size`...). For debugging only.
    pub fn from_json_lenient(text: &str) -> Result<Program, LoadError> {
        Self::load_json(text, false)
    }

    fn load_json(text: &str, strict: bool) -> Result<Program, LoadError> {
        let root: Value = serde_json::from_str(text)
            .map_err(|e| LoadError(format!("JSON syntax error: {e}")))?;
        let mut l = Loader {
            p: Program::default(),
            action_ids: HashMap::new(),
            field_list_ids: HashMap::new(),
            learn_list_ids: HashMap::new(),
            calc_names: HashMap::new(),
            aliases: HashMap::new(),
            header_type_names: HashMap::new(),
            header_ids: HashMap::new(),
            union_ids: HashMap::new(),
            union_type_names: HashMap::new(),
            action_params: std::cell::Cell::new(None),
            strict,
        };
        if strict {
            crate::strict::check_root(&root)?;
        }
        l.load(&root)?;
        Ok(l.p)
    }
}

impl Loader {
    fn load(&mut self, root: &Value) -> R<()> {
        obj(root, "(root)")?;
        self.check_version(root)?;
        self.load_header_types(root)?;
        self.load_headers(root)?;
        self.load_stacks_and_unions(root)?;
        self.load_errors(root)?;
        self.load_aliases(root)?;
        self.resolve_std_meta()?;
        self.load_arrays(root)?;
        self.load_field_lists(root)?;
        self.load_calculations(root)?;
        self.load_actions(root)?;
        self.load_value_sets(root)?;
        self.load_parser(root)?;
        self.load_deparser(root)?;
        self.load_pipelines(root)?;
        self.bind_direct_resources(root)?;
        self.load_checksums(root)?;
        self.load_tna(root)
    }

    /// `"__tna__": {"cell_bytes": N, "egress_parser": P, "ingress_deparser": D}`
    /// (softswitch-p4c --arch tna|t2na): queue depths in cells; the named parser and
    /// deparser (of `parsers`/`deparsers`) carry headers from ingress to egress.
    fn load_tna(&mut self, root: &Value) -> R<()> {
        let Some(tna) = root.get("__tna__") else { return Ok(()) };
        self.p.queue_cell_bytes = match tna.get("cell_bytes").and_then(Value::as_u64) {
            Some(n @ 1..=65535) => n as u32,
            _ => return err("__tna__.cell_bytes", "expected a cell size in bytes (1..65535)"),
        };
        if let Some(name) = opt_str(tna, "egress_parser", "__tna__")? {
            let parsers = get_arr(root, "parsers", "(root)")?;
            let Some(i) = parsers.iter().position(|p| p.get("name").and_then(Value::as_str) == Some(name)) else {
                return err("__tna__.egress_parser", format!("no parser named '{name}'"));
            };
            self.p.tna_egress_parser = Some(self.parser_at(&parsers[i], &format!("parsers[{i}]"))?);
        }
        if let Some(name) = opt_str(tna, "ingress_deparser", "__tna__")? {
            let deparsers = get_arr(root, "deparsers", "(root)")?;
            let Some(i) = deparsers.iter().position(|d| d.get("name").and_then(Value::as_str) == Some(name)) else {
                return err("__tna__.ingress_deparser", format!("no deparser named '{name}'"));
            };
            for (j, h) in get_arr(&deparsers[i], "order", "__tna__")?.iter().enumerate() {
                let h = self.header_name(h, &format!("deparsers[{i}].order[{j}]"))?;
                self.p.tna_ingress_deparser.push(h);
            }
        }
        Ok(())
    }

    fn check_version(&self, root: &Value) -> R<()> {
        let Some(meta) = root.get("__meta__") else { return Ok(()) };
        let version = get_arr(meta, "version", "__meta__")?;
        match version.first().and_then(Value::as_u64) {
            Some(2) => Ok(()),
            Some(v) => err("__meta__.version", format!("unsupported major version {v} (expected 2)")),
            None => err("__meta__.version", "expected [major, minor]"),
        }
    }

    fn load_header_types(&mut self, root: &Value) -> R<()> {
        for (i, ht) in get_arr(root, "header_types", "(root)")?.iter().enumerate() {
            let path = format!("header_types[{i}]");
            let name = get_str(ht, "name", &path)?.to_string();
            let mut fields = Vec::new();
            let mut offsets = Vec::new();
            let mut bits = 0u32;
            let mut varbit_index = None;
            for (j, f) in get_arr(ht, "fields", &path)?.iter().enumerate() {
                let fpath = format!("{path}.fields[{j}]");
                let arr = f.as_array().map_or_else(|| err(&fpath, "expected [name, width(, signed)]"), Ok)?;
                let fname = arr.first().and_then(Value::as_str).map_or_else(|| err(&fpath, "field name must be a string"), Ok)?;
                let signed = arr.get(2).and_then(Value::as_bool).unwrap_or(false);
                let (width, varbit) = match arr.get(1) {
                    Some(Value::String(s)) if s == "*" => (0, true),
                    Some(Value::Number(n)) if n.as_u64().is_some_and(|w| w >= 1) => (n.as_u64().unwrap() as u32, false),
                    _ => return err(&fpath, "field width must be a positive integer or \"*\""),
                };
                if width > 128 {
                    return err(&fpath, format!("field '{fname}' is {width} bits; fields wider than 128 bits are not supported"));
                }
                if signed && width < 2 {
                    return err(&fpath, "a signed field needs at least 2 bits");
                }
                if varbit {
                    if varbit_index.is_some() {
                        return err(&fpath, "at most one variable-length field per header type");
                    }
                    varbit_index = Some(j);
                }
                offsets.push(bits);
                bits += width;
                fields.push(FieldDef { name: fname.to_string(), width, signed, varbit });
            }
            if let Some(e) = obj(ht, &path)?.get("length_exp") {
                if !e.is_null() {
                    return err(&path, "'length_exp' (P4_14 variable-length headers) is not supported; use extract_VL");
                }
            }
            let max_length = match obj(ht, &path)?.get("max_length") {
                Some(Value::Number(n)) => n.as_u64().unwrap_or(0) as u32,
                _ => 0,
            };
            if varbit_index.is_some() && max_length * 8 < bits {
                return err(&path, "a header type with a variable-length field needs 'max_length' (bytes) covering its fixed fields");
            }
            if self.header_type_names.insert(name.clone(), i).is_some() {
                return err(&path, format!("duplicate header type '{name}'"));
            }
            self.p.header_types.push(HeaderType {
                name,
                fields,
                bit_offsets: offsets,
                fixed_bits: bits,
                varbit_index,
                max_length,
            });
        }
        Ok(())
    }

    fn load_headers(&mut self, root: &Value) -> R<()> {
        let mut ids = HashMap::new();
        for (i, h) in get_arr(root, "headers", "(root)")?.iter().enumerate() {
            let path = format!("headers[{i}]");
            let name = get_str(h, "name", &path)?.to_string();
            let tname = get_str(h, "header_type", &path)?;
            let type_idx = *self.header_type_names.get(tname).map_or_else(|| err(&path, format!("unknown header_type '{tname}'")), Ok)?;
            let metadata = opt_bool(h, "metadata", false, &path)?;
            let ht = &self.p.header_types[type_idx];
            if !metadata && !ht.fixed_bits.is_multiple_of(8) {
                return err(&path, format!("header '{name}' is {} bits, not a whole number of bytes", ht.fixed_bits));
            }
            let varbit_slot = ht.varbit_index.map(|_| {
                self.p.num_varbits += 1;
                self.p.num_varbits - 1
            });
            let first_field = self.p.field_locs.len();
            for (offset, fd) in ht.fields.iter().enumerate() {
                self.p.field_locs.push(FieldLoc { header: i, offset });
                self.p.field_info.push((fd.width, fd.signed));
                self.p.field_masks.push((mask_of(fd.width), fd.signed));
            }
            if let Some(id) = h.get("id").and_then(Value::as_i64) {
                ids.insert(id, i);
            }
            if self.p.names.headers.insert(name.clone(), i).is_some() {
                return err(&path, format!("duplicate header instance '{name}'"));
            }
            self.p.headers.push(HeaderInst {
                name,
                type_idx,
                metadata,
                first_field,
                num_fields: ht.fields.len(),
                varbit_slot,
                stack: None,
                union: None,
            });
        }
        self.header_ids = ids;
        Ok(())
    }

    fn header_by_id(&self, id: &Value, path: &str) -> R<usize> {
        id.as_i64()
            .and_then(|i| self.header_ids.get(&i).copied())
            .map_or_else(|| err(path, format!("unknown header id {id}")), Ok)
    }

    fn load_stacks_and_unions(&mut self, root: &Value) -> R<()> {
        for (i, s) in opt_arr(root, "header_stacks", "(root)")?.iter().enumerate() {
            let path = format!("header_stacks[{i}]");
            let name = get_str(s, "name", &path)?.to_string();
            let mut headers = Vec::new();
            for (j, id) in get_arr(s, "header_ids", &path)?.iter().enumerate() {
                let h = self.header_by_id(id, &format!("{path}.header_ids[{j}]"))?;
                self.p.headers[h].stack = Some(i);
                headers.push(h);
            }
            self.p.names.stacks.insert(name.clone(), i);
            self.p.stacks.push(HeaderStack { name, headers });
        }
        for (i, t) in opt_arr(root, "header_union_types", "(root)")?.iter().enumerate() {
            let path = format!("header_union_types[{i}]");
            let name = get_str(t, "name", &path)?.to_string();
            let mut members = Vec::new();
            for (j, m) in get_arr(t, "headers", &path)?.iter().enumerate() {
                let (a, b) = str_pair(m, &format!("{path}.headers[{j}]"))?;
                members.push((a.to_string(), b.to_string()));
            }
            self.union_type_names.insert(name, members);
        }
        for (i, u) in opt_arr(root, "header_unions", "(root)")?.iter().enumerate() {
            let path = format!("header_unions[{i}]");
            let name = get_str(u, "name", &path)?.to_string();
            let mut headers = Vec::new();
            for (j, id) in get_arr(u, "header_ids", &path)?.iter().enumerate() {
                let h = self.header_by_id(id, &format!("{path}.header_ids[{j}]"))?;
                self.p.headers[h].union = Some(i);
                headers.push(h);
            }
            if let Some(uid) = u.get("id").and_then(Value::as_i64) {
                self.union_ids.insert(uid, i);
            }
            self.p.names.unions.insert(name.clone(), i);
            self.p.unions.push(HeaderUnion { name, headers });
        }
        for (i, s) in opt_arr(root, "header_union_stacks", "(root)")?.iter().enumerate() {
            let path = format!("header_union_stacks[{i}]");
            let name = get_str(s, "name", &path)?.to_string();
            let mut unions = Vec::new();
            for (j, id) in get_arr(s, "header_union_ids", &path)?.iter().enumerate() {
                let u = id.as_i64().and_then(|x| self.union_ids.get(&x).copied());
                unions.push(u.map_or_else(|| err(&format!("{path}.header_union_ids[{j}]"), format!("unknown header union id {id}")), Ok)?);
            }
            self.p.names.union_stacks.insert(name.clone(), i);
            self.p.union_stacks.push(UnionStack { name, unions });
        }
        Ok(())
    }

    fn load_errors(&mut self, root: &Value) -> R<()> {
        let mut map: HashMap<String, i128> = CORE_ERRORS.iter().map(|(n, v)| (n.to_string(), *v)).collect();
        for (i, e) in opt_arr(root, "errors", "(root)")?.iter().enumerate() {
            let path = format!("errors[{i}]");
            match e.as_array().map(|a| a.as_slice()) {
                Some([Value::String(n), Value::Number(v)]) if v.is_i64() => {
                    map.insert(n.clone(), v.as_i64().unwrap() as i128);
                }
                _ => return err(&path, "expected [name, value]"),
            }
        }
        self.p.errors = ErrorCodes {
            packet_too_short: map["PacketTooShort"],
            no_match: map["NoMatch"],
            stack_out_of_bounds: map["StackOutOfBounds"],
            header_too_short: map["HeaderTooShort"],
            parser_timeout: map["ParserTimeout"],
            parser_invalid_argument: map["ParserInvalidArgument"],
        };
        Ok(())
    }

    fn load_aliases(&mut self, root: &Value) -> R<()> {
        for (i, a) in opt_arr(root, "field_aliases", "(root)")?.iter().enumerate() {
            let path = format!("field_aliases[{i}]");
            let (alias, target) = match a.as_array().map(|x| x.as_slice()) {
                Some([Value::String(n), t]) => (n.clone(), t),
                _ => return err(&path, "expected [alias, [header, field]]"),
            };
            let (h, f) = str_pair(target, &path)?;
            let fi = self.p.field_index(h, f).map_or_else(|| err(&path, format!("unknown field '{h}.{f}'")), Ok)?;
            self.aliases.insert(alias, fi);
        }
        Ok(())
    }

    /// Finds a standard_metadata field, directly or through simple_switch's aliases.
    fn std_field(&self, name: &str) -> Option<(usize, u32)> {
        let aliased = ["standard_metadata", "intrinsic_metadata", "queueing_metadata"]
            .iter()
            .find_map(|prefix| self.aliases.get(&format!("{prefix}.{name}")).copied());
        let f = aliased.or_else(|| self.p.field_index("standard_metadata", name))?;
        Some((f, self.p.field_width(f)))
    }

    fn resolve_std_meta(&mut self) -> R<()> {
        let s = StdMeta {
            ingress_port: self.std_field("ingress_port"),
            egress_spec: self.std_field("egress_spec"),
            egress_port: self.std_field("egress_port"),
            instance_type: self.std_field("instance_type"),
            packet_length: self.std_field("packet_length"),
            enq_timestamp: self.std_field("enq_timestamp"),
            enq_qdepth: self.std_field("enq_qdepth"),
            deq_timedelta: self.std_field("deq_timedelta"),
            deq_qdepth: self.std_field("deq_qdepth"),
            ingress_global_timestamp: self.std_field("ingress_global_timestamp"),
            egress_global_timestamp: self.std_field("egress_global_timestamp"),
            mcast_grp: self.std_field("mcast_grp"),
            egress_rid: self.std_field("egress_rid"),
            checksum_error: self.std_field("checksum_error"),
            parser_error: self.std_field("parser_error"),
            priority: self.std_field("priority"),
        };
        // simple_switch refuses programs without these.
        for (name, f) in [
            ("ingress_port", s.ingress_port),
            ("egress_spec", s.egress_spec),
            ("egress_port", s.egress_port),
            ("instance_type", s.instance_type),
            ("packet_length", s.packet_length),
        ] {
            if f.is_none() {
                return err("headers", format!("required field 'standard_metadata.{name}' is missing"));
            }
        }
        self.p.std = s;
        Ok(())
    }

    fn load_arrays(&mut self, root: &Value) -> R<()> {
        for (i, r) in opt_arr(root, "register_arrays", "(root)")?.iter().enumerate() {
            let path = format!("register_arrays[{i}]");
            let name = get_str(r, "name", &path)?.to_string();
            let size = get_u64(r, "size", &path)? as usize;
            let width = get_u64(r, "bitwidth", &path)? as u32;
            if width == 0 || width > 128 {
                return err(&path, format!("register bitwidth {width} not in 1..=128"));
            }
            self.p.names.registers.insert(name.clone(), i);
            self.p.registers.push(RegisterArray { name, size, width });
        }
        for (i, c) in opt_arr(root, "counter_arrays", "(root)")?.iter().enumerate() {
            let path = format!("counter_arrays[{i}]");
            let name = get_str(c, "name", &path)?.to_string();
            let direct = opt_bool(c, "is_direct", false, &path)?;
            let size = if direct { 0 } else { get_u64(c, "size", &path)? as usize };
            self.p.names.counters.insert(name.clone(), i);
            self.p.counters.push(CounterArray { name, size, direct_table: None });
        }
        for (i, m) in opt_arr(root, "meter_arrays", "(root)")?.iter().enumerate() {
            let path = format!("meter_arrays[{i}]");
            let name = get_str(m, "name", &path)?.to_string();
            let direct = opt_bool(m, "is_direct", false, &path)?;
            let size = if direct { 0 } else { get_u64(m, "size", &path)? as usize };
            let unit = match get_str(m, "type", &path)? {
                "bytes" => MeterUnit::Bytes,
                "packets" => MeterUnit::Packets,
                t => return err(&path, format!("unknown meter type '{t}' (bytes|packets)")),
            };
            let rate_count = obj(m, &path)?.get("rate_count").and_then(Value::as_u64).unwrap_or(2);
            if rate_count != 2 {
                return err(&path, format!("rate_count {rate_count} unsupported (only 2-rate 3-color meters)"));
            }
            let result_target = match obj(m, &path)?.get("result_target") {
                Some(t) if direct && !t.is_null() => Some(self.field_ref(t, &format!("{path}.result_target"))?),
                _ => None,
            };
            self.p.names.meters.insert(name.clone(), i);
            self.p.meters.push(MeterArray { name, size, unit, direct_table: None, result_target });
        }
        Ok(())
    }

    fn field_ref(&self, v: &Value, path: &str) -> R<usize> {
        let (h, f) = str_pair(v, path)?;
        self.p.field_index(h, f).map_or_else(|| err(path, format!("unknown field '{h}.{f}'")), Ok)
    }

    fn field_list_elems(&self, l: &Value, path: &str) -> R<Vec<usize>> {
        let mut fields = Vec::new();
        for (j, e) in get_arr(l, "elements", path)?.iter().enumerate() {
            let epath = format!("{path}.elements[{j}]");
            match get_str(e, "type", &epath)? {
                "field" => fields.push(self.field_ref(get(e, "value", &epath)?, &epath)?),
                t => return err(&epath, format!("unsupported field list element type '{t}'")),
            }
        }
        Ok(fields)
    }

    fn load_field_lists(&mut self, root: &Value) -> R<()> {
        for (i, l) in opt_arr(root, "field_lists", "(root)")?.iter().enumerate() {
            let path = format!("field_lists[{i}]");
            let name = get_str(l, "name", &path)?.to_string();
            let fields = self.field_list_elems(l, &path)?;
            self.field_list_ids.insert(get_i64(l, "id", &path)?, i);
            self.p.field_lists.push(FieldList { name, fields });
        }
        for (i, l) in opt_arr(root, "learn_lists", "(root)")?.iter().enumerate() {
            let path = format!("learn_lists[{i}]");
            let name = get_str(l, "name", &path)?.to_string();
            let fields = self.field_list_elems(l, &path)?;
            self.learn_list_ids.insert(get_i64(l, "id", &path)?, i);
            self.p.learn_lists.push(FieldList { name, fields });
        }
        Ok(())
    }

    fn load_calculations(&mut self, root: &Value) -> R<()> {
        for (i, c) in opt_arr(root, "calculations", "(root)")?.iter().enumerate() {
            let path = format!("calculations[{i}]");
            let name = get_str(c, "name", &path)?.to_string();
            let calc = self.calculation(c, name.clone(), &path)?;
            self.calc_names.insert(name, i);
            self.p.calculations.push(calc);
        }
        Ok(())
    }

    /// A hash over fields (a calculation, or an action selector's `{algo, input}`).
    fn calculation(&self, c: &Value, name: String, path: &str) -> R<Calculation> {
        let algo = match get_str(c, "algo", path)? {
            "crc16" => HashAlgo::Crc16,
            "crc32" => HashAlgo::Crc32,
            "crc16_custom" => HashAlgo::Crc16Custom,
            "crc32_custom" => HashAlgo::Crc32Custom,
            "csum16" | "cksum16" => HashAlgo::Csum16,
            "identity" => HashAlgo::Identity,
            "xor16" => HashAlgo::Xor16,
            "random" => HashAlgo::Random,
            a => return err(path, format!("unsupported hash algorithm '{a}'")),
        };
        let mut inputs = Vec::new();
        for (j, inp) in get_arr(c, "input", path)?.iter().enumerate() {
            let ipath = format!("{path}.input[{j}]");
            let value = get(inp, "value", &ipath);
            inputs.push(match get_str(inp, "type", &ipath)? {
                "field" => {
                    let f = self.field_ref(value?, &ipath)?;
                    if self.is_varbit(f) {
                        CalcInput::Varbit(self.p.field_locs[f].header)
                    } else {
                        CalcInput::Field(f)
                    }
                }
                "hexstr" => {
                    let w = get_u64(inp, "bitwidth", &ipath)? as u32;
                    if w == 0 || w > 128 {
                        return err(&ipath, "hexstr bitwidth must be in 1..=128");
                    }
                    CalcInput::Const(hex_value(value?, &ipath)?, w)
                }
                "header" => CalcInput::Header(self.header_name(value?, &ipath)?),
                "payload" => CalcInput::Payload,
                t => return err(&ipath, format!("unsupported calculation input type '{t}'")),
            });
        }
        Ok(Calculation { name, algo, inputs })
    }

    fn header_name(&self, v: &Value, path: &str) -> R<usize> {
        let name = v.as_str().map_or_else(|| err(path, "header name must be a string"), Ok)?;
        self.p.header_index(name).map_or_else(|| err(path, format!("unknown header '{name}'")), Ok)
    }

    fn named(&self, map: &HashMap<String, usize>, kind: &str, v: &Value, path: &str) -> R<usize> {
        let name = v.as_str().map_or_else(|| err(path, format!("{kind} name must be a string")), Ok)?;
        map.get(name).copied().map_or_else(|| err(path, format!("unknown {kind} '{name}'")), Ok)
    }

    // ---------- expressions ----------

    /// A type-value object (or a bare `{op, left, right}` node) as an rvalue.
    fn expr(&self, v: &Value, path: &str) -> R<Expr> {
        if v.get("op").is_some() {
            return self.op_expr(v, path);
        }
        let t = get_str(v, "type", path)?;
        let value = get(v, "value", path)?;
        Ok(match t {
            "hexstr" => Expr::Const(hex_value(value, path)?),
            "bool" => Expr::Const(value.as_bool().map_or_else(|| err(path, "bool value expected"), Ok)? as i128),
            "field" => self.field_expr(value, path)?,
            "runtime_data" | "local" => {
                let i = value.as_u64().map_or_else(|| err(path, "runtime_data index expected"), Ok)? as usize;
                match self.action_params.get() {
                    Some(n) if i < n => Expr::Local(i),
                    Some(n) => return err(path, format!("runtime_data index {i} out of range ({n} parameters)")),
                    None => return err(path, "runtime_data is only valid inside an action"),
                }
            }
            "stack_field" => {
                let (s, f) = str_pair(value, path)?;
                let si = *self.p.names.stacks.get(s).map_or_else(|| err(path, format!("unknown header stack '{s}'")), Ok)?;
                Expr::DynField(HeaderRef::StackLast(si), self.stack_field_offset(si, f, path)?)
            }
            "expression" => self.expr(value, path)?,
            "register" => match value.as_array().map(|a| a.as_slice()) {
                Some([name, idx]) => Expr::RegisterRead(
                    self.named(&self.p.names.registers, "register array", name, path)?,
                    Box::new(self.expr(idx, path)?),
                ),
                _ => return err(path, "register value must be [name, index]"),
            },
            "lookahead" => match value.as_array().map(|a| a.as_slice()) {
                Some([Value::Number(o), Value::Number(w)]) if o.is_u64() && w.is_u64() => {
                    let (o, w) = (o.as_u64().unwrap() as u32, w.as_u64().unwrap() as u32);
                    if w == 0 || w > 128 {
                        return err(path, "lookahead width must be in 1..=128");
                    }
                    Expr::Lookahead(o, w)
                }
                _ => return err(path, "lookahead value must be [offset, width]"),
            },
            "header" | "header_stack" => return err(path, format!("a {t} is not a value here")),
            t => return err(path, format!("unsupported operand type '{t}'")),
        })
    }

    fn field_expr(&self, value: &Value, path: &str) -> R<Expr> {
        let (h, f) = str_pair(value, path)?;
        let hi = self.p.header_index(h).map_or_else(|| err(path, format!("unknown header '{h}'")), Ok)?;
        if f == "$valid$" {
            return Ok(Expr::Valid(HeaderRef::Fixed(hi)));
        }
        self.p.field_index(h, f).map(Expr::Field).map_or_else(|| err(path, format!("unknown field '{h}.{f}'")), Ok)
    }

    fn stack_field_offset(&self, stack: usize, f: &str, path: &str) -> R<usize> {
        let h = &self.p.headers[self.p.stacks[stack].headers[0]];
        self.p.header_types[h.type_idx]
            .fields
            .iter()
            .position(|x| x.name == f)
            .map_or_else(|| err(path, format!("unknown field '{f}' in stack '{}'", self.p.stacks[stack].name)), Ok)
    }

    fn operand<'a>(&self, v: &'a Value, key: &str, path: &str) -> R<&'a Value> {
        match v.get(key) {
            Some(x) if !x.is_null() => Ok(x),
            _ => err(path, format!("operation needs '{key}'")),
        }
    }

    fn op_expr(&self, v: &Value, path: &str) -> R<Expr> {
        let op = get_str(v, "op", path)?;
        let bin = |o: BinOp| -> R<Expr> {
            let l = self.expr(self.operand(v, "left", path)?, path)?;
            let r = self.expr(self.operand(v, "right", path)?, path)?;
            Ok(Expr::Bin(o, Box::new(l), Box::new(r)))
        };
        let right = || self.expr(self.operand(v, "right", path)?, path).map(Box::new);
        Ok(match op {
            "+" => bin(BinOp::Add)?,
            "-" if v.get("left").is_none_or(Value::is_null) => Expr::Neg(right()?),
            "-" => bin(BinOp::Sub)?,
            "*" => bin(BinOp::Mul)?,
            "/" => bin(BinOp::Div)?,
            "%" => bin(BinOp::Mod)?,
            "<<" => bin(BinOp::Shl)?,
            ">>" => bin(BinOp::Shr)?,
            "==" | "!=" if self.varbit_operands(v) => {
                let slot = |k: &str| -> R<usize> {
                    let Expr::Field(f) = self.expr(self.operand(v, k, path)?, path)? else { unreachable!() };
                    Ok(self.p.headers[self.p.field_locs[f].header].varbit_slot.expect("varbit header has a slot"))
                };
                Expr::VarbitEq(slot("left")?, slot("right")?, op == "!=")
            }
            "==" => bin(BinOp::Eq)?,
            "!=" => bin(BinOp::Ne)?,
            ">" => bin(BinOp::Gt)?,
            ">=" => bin(BinOp::Ge)?,
            "<" => bin(BinOp::Lt)?,
            "<=" => bin(BinOp::Le)?,
            "and" => bin(BinOp::And)?,
            "or" => bin(BinOp::Or)?,
            "&" => bin(BinOp::BitAnd)?,
            "|" => bin(BinOp::BitOr)?,
            "^" => bin(BinOp::BitXor)?,
            "two_comp_mod" => bin(BinOp::TwoCompMod)?,
            "sat_cast" => bin(BinOp::SatCast)?,
            "usat_cast" => bin(BinOp::USatCast)?,
            "not" => Expr::Not(right()?),
            "~" => Expr::BitNot(right()?),
            "d2b" => Expr::D2b(right()?),
            "b2d" => *right()?,
            "?" => Expr::Ternary(
                Box::new(self.expr(self.operand(v, "cond", path)?, path)?),
                Box::new(self.expr(self.operand(v, "left", path)?, path)?),
                right()?,
            ),
            "valid" => Expr::Valid(self.header_ref(self.operand(v, "right", path)?, path)?),
            "valid_union" => Expr::ValidUnion(self.union_ref(self.operand(v, "right", path)?, path)?),
            "access_field" => {
                let h = self.header_ref(self.operand(v, "left", path)?, path)?;
                let off = v.get("right").and_then(Value::as_u64).map_or_else(|| err(path, "access_field needs an integer offset"), Ok)? as usize;
                self.check_dyn_offset(&h, off, path)?;
                Expr::DynField(h, off)
            }
            "last_stack_index" => self.last_stack_index(v, path)?,
            "size_stack" => Expr::SizeStack(self.stack_operand(v, path)?),
            "dereference_header_stack" | "dereference_union_stack" | "access_union_header" => {
                return err(path, format!("'{op}' yields a header, not a value"))
            }
            o => return err(path, format!("unknown expression op '{o}'")),
        })
    }

    /// Both operands of a comparison are varbit fields (compared by their bytes, not as integers).
    fn varbit_operands(&self, v: &Value) -> bool {
        ["left", "right"].iter().all(|k| {
            matches!(v.get(*k).map(|x| self.expr(x, "")), Some(Ok(Expr::Field(f))) if self.is_varbit(f))
        })
    }

    /// `last_stack_index` of a header stack or (BMv2 accepts both) a header union stack.
    fn last_stack_index(&self, v: &Value, path: &str) -> R<Expr> {
        let r = self.operand(v, "right", path)?;
        if r.get("type").and_then(Value::as_str) != Some("header_union_stack") {
            return Ok(Expr::LastStackIndex(self.stack_operand(v, path)?));
        }
        let s = self.named(&self.p.names.union_stacks, "header union stack", get(r, "value", path)?, path)?;
        Ok(Expr::LastUnionStackIndex(s))
    }

    fn stack_operand(&self, v: &Value, path: &str) -> R<usize> {
        let r = self.operand(v, "right", path)?;
        self.named(&self.p.names.stacks, "header stack", get(r, "value", path)?, path)
    }

    /// The type of the header a `HeaderRef` designates (for field offset checks).
    fn header_ref_type(&self, h: &HeaderRef) -> usize {
        match h {
            HeaderRef::Fixed(i) => self.p.headers[*i].type_idx,
            HeaderRef::StackElem(s, _) | HeaderRef::StackLast(s) => self.p.headers[self.p.stacks[*s].headers[0]].type_idx,
            HeaderRef::UnionMember(u, m) => {
                let un = match u.as_ref() {
                    UnionRef::Fixed(i) => *i,
                    UnionRef::StackElem(s, _) | UnionRef::StackLast(s) => self.p.union_stacks[*s].unions[0],
                };
                self.p.headers[self.p.unions[un].headers[*m]].type_idx
            }
        }
    }

    fn check_dyn_offset(&self, h: &HeaderRef, off: usize, path: &str) -> R<()> {
        let n = self.p.header_types[self.header_ref_type(h)].fields.len();
        if off >= n {
            return err(path, format!("field offset {off} out of range (header has {n} fields)"));
        }
        Ok(())
    }

    fn header_ref(&self, v: &Value, path: &str) -> R<HeaderRef> {
        if v.get("op").is_some() {
            let op = get_str(v, "op", path)?;
            return match op {
                "dereference_header_stack" => {
                    let s = self.named(&self.p.names.stacks, "header stack", get(self.operand(v, "left", path)?, "value", path)?, path)?;
                    if self.p.stacks[s].headers.is_empty() {
                        return err(path, "empty header stack");
                    }
                    Ok(HeaderRef::StackElem(s, Box::new(self.expr(self.operand(v, "right", path)?, path)?)))
                }
                "access_union_header" => {
                    let u = self.union_ref(self.operand(v, "left", path)?, path)?;
                    let m = v.get("right").and_then(Value::as_u64).map_or_else(|| err(path, "access_union_header needs an integer offset"), Ok)? as usize;
                    let un = match &u {
                        UnionRef::Fixed(i) => *i,
                        UnionRef::StackElem(s, _) | UnionRef::StackLast(s) => self.p.union_stacks[*s].unions[0],
                    };
                    if m >= self.p.unions[un].headers.len() {
                        return err(path, format!("union member offset {m} out of range"));
                    }
                    Ok(HeaderRef::UnionMember(Box::new(u), m))
                }
                o => err(path, format!("'{o}' does not yield a header")),
            };
        }
        let t = get_str(v, "type", path)?;
        let value = get(v, "value", path)?;
        match t {
            "header" | "regular" => Ok(HeaderRef::Fixed(self.header_name(value, path)?)),
            "expression" => self.header_ref(value, path),
            t => err(path, format!("expected a header, got '{t}'")),
        }
    }

    fn union_ref(&self, v: &Value, path: &str) -> R<UnionRef> {
        if v.get("op").is_some() {
            return match get_str(v, "op", path)? {
                "dereference_union_stack" => {
                    let s = self.named(&self.p.names.union_stacks, "header union stack", get(self.operand(v, "left", path)?, "value", path)?, path)?;
                    if self.p.union_stacks[s].unions.is_empty() {
                        return err(path, "empty header union stack");
                    }
                    Ok(UnionRef::StackElem(s, Box::new(self.expr(self.operand(v, "right", path)?, path)?)))
                }
                o => err(path, format!("'{o}' does not yield a header union")),
            };
        }
        match get_str(v, "type", path)? {
            "header_union" => Ok(UnionRef::Fixed(self.named(&self.p.names.unions, "header union", get(v, "value", path)?, path)?)),
            "expression" => self.union_ref(get(v, "value", path)?, path),
            t => err(path, format!("expected a header union, got '{t}'")),
        }
    }

    fn lvalue(&self, v: &Value, path: &str) -> R<LValue> {
        match self.expr(v, path)? {
            Expr::Field(f) => Ok(LValue::Field(f)),
            Expr::DynField(h, o) => Ok(LValue::DynField(h, o)),
            _ => err(path, "expected a writable field"),
        }
    }

    fn lvalue_field(&self, lv: &LValue) -> Option<usize> {
        match lv {
            LValue::Field(f) => Some(*f),
            LValue::DynField(..) => None,
        }
    }

    fn is_varbit(&self, f: usize) -> bool {
        let loc = self.p.field_locs[f];
        self.p.header_types[self.p.headers[loc.header].type_idx].fields[loc.offset].varbit
    }

    // ---------- primitives ----------

    fn prim(&self, v: &Value, path: &str, n_params: Option<usize>) -> R<Prim> {
        let op = get_str(v, "op", path)?;
        let params = opt_arr(v, "parameters", path)?;
        let p = |i: usize| -> R<&Value> {
            params.get(i).map_or_else(|| err(path, format!("'{op}' needs parameter {i}")), Ok)
        };
        let pe = |i: usize| -> R<Expr> { self.expr(p(i)?, &format!("{path}.parameters[{i}]")) };
        let plv = |i: usize| -> R<LValue> { self.lvalue(p(i)?, &format!("{path}.parameters[{i}]")) };
        let pname = |i: usize, map: &HashMap<String, usize>, kind: &str| -> R<usize> {
            self.named(map, kind, get(p(i)?, "value", path)?, &format!("{path}.parameters[{i}]"))
        };
        let field_list = |i: usize| -> R<Option<usize>> {
            match params.get(i) {
                None => Ok(None),
                Some(x) => {
                    let id = hex_value(get(x, "value", path)?, path)? as i64;
                    match self.field_list_ids.get(&id) {
                        Some(fl) => Ok(Some(*fl)),
                        None if id == 0 => Ok(None),
                        None => err(path, format!("unknown field list id {id}")),
                    }
                }
            }
        };
        let prim = match op {
            "assign" | "modify_field" => {
                let lv = plv(0)?;
                match (self.lvalue_field(&lv), pe(1)?) {
                    (Some(d), Expr::Field(s)) if self.is_varbit(d) && self.is_varbit(s) => Prim::AssignVL(d, s),
                    (_, rv) => Prim::Assign(lv, rv),
                }
            }
            "assign_VL" => match (plv(0)?, pe(1)?) {
                (LValue::Field(d), Expr::Field(s)) if self.is_varbit(d) && self.is_varbit(s) => Prim::AssignVL(d, s),
                _ => return err(path, "assign_VL needs two variable-length fields"),
            },
            "add_to_field" | "subtract_from_field" => {
                let lv = plv(0)?;
                let cur = match &lv {
                    LValue::Field(f) => Expr::Field(*f),
                    LValue::DynField(h, o) => Expr::DynField(h.clone(), *o),
                };
                let o = if op == "add_to_field" { BinOp::Add } else { BinOp::Sub };
                Prim::Assign(lv, Expr::Bin(o, Box::new(cur), Box::new(pe(1)?)))
            }
            "assign_header" | "copy_header" => {
                let d = self.header_ref(p(0)?, path)?;
                let s = self.header_ref(p(1)?, path)?;
                if self.header_ref_type(&d) != self.header_ref_type(&s) {
                    return err(path, "assign_header between different header types");
                }
                Prim::AssignHeader(d, s)
            }
            "assign_union" => Prim::AssignUnion(self.union_ref(p(0)?, path)?, self.union_ref(p(1)?, path)?),
            "assign_header_stack" => Prim::AssignHeaderStack(
                pname(0, &self.p.names.stacks, "header stack")?,
                pname(1, &self.p.names.stacks, "header stack")?,
            ),
            "assign_union_stack" => Prim::AssignUnionStack(
                pname(0, &self.p.names.union_stacks, "header union stack")?,
                pname(1, &self.p.names.union_stacks, "header union stack")?,
            ),
            "add_header" | "setValid" => Prim::SetValid(self.header_ref(p(0)?, path)?),
            "remove_header" | "setInvalid" => Prim::SetInvalid(self.header_ref(p(0)?, path)?),
            "push" | "pop" => {
                let target = p(0)?;
                let count = pe(1)?;
                let is_union = get_str(target, "type", path)? == "header_union_stack";
                match (op, is_union) {
                    ("push", false) => Prim::Push(pname(0, &self.p.names.stacks, "header stack")?, count),
                    ("pop", false) => Prim::Pop(pname(0, &self.p.names.stacks, "header stack")?, count),
                    ("push", true) => Prim::PushUnion(pname(0, &self.p.names.union_stacks, "header union stack")?, count),
                    _ => Prim::PopUnion(pname(0, &self.p.names.union_stacks, "header union stack")?, count),
                }
            }
            "mark_to_drop" | "drop" => Prim::MarkToDrop,
            "exit" => Prim::Exit,
            "_jump" => Prim::Jump(self.jump_target(p(0)?, path, n_params)?),
            "_jump_if_zero" => Prim::JumpIfZero(pe(0)?, self.jump_target(p(1)?, path, n_params)?),
            "modify_field_rng_uniform" => Prim::Random(plv(0)?, pe(1)?, pe(2)?),
            "tna_lpf_sample" => Prim::LpfSample(plv(0)?, pe(1)?, pe(2)?, pe(3)?, pe(4)?),
            "count" => Prim::Count(pname(0, &self.p.names.counters, "counter array")?, pe(1)?),
            "execute_meter" => Prim::ExecuteMeter(pname(0, &self.p.names.meters, "meter array")?, pe(1)?, plv(2)?),
            "register_read" => Prim::RegisterRead(plv(0)?, pname(1, &self.p.names.registers, "register array")?, pe(2)?),
            "register_write" => Prim::RegisterWrite(pname(0, &self.p.names.registers, "register array")?, pe(1)?, pe(2)?),
            "modify_field_with_hash_based_offset" => {
                Prim::Hash(plv(0)?, pe(1)?, pname(2, &self.calc_names, "calculation")?, pe(3)?)
            }
            "generate_digest" => {
                let id = hex_value(get(p(1)?, "value", path)?, path)? as i64;
                let l = self.learn_list_ids.get(&id).map_or_else(|| err(path, format!("unknown learn list id {id}")), Ok)?;
                Prim::Digest(*l)
            }
            "clone_ingress_pkt_to_egress" | "clone_i2e" => Prim::CloneI2E(pe(0)?, field_list(1)?),
            "clone_egress_pkt_to_egress" | "clone_e2e" => Prim::CloneE2E(pe(0)?, field_list(1)?),
            "resubmit" | "resubmit_preserving_field_list" => Prim::Resubmit(field_list(0)?),
            "recirculate" | "recirculate_preserving_field_list" => Prim::Recirculate(field_list(0)?),
            "truncate" => Prim::Truncate(pe(0)?),
            "log_msg" => {
                let fmt = get(p(0)?, "value", path)?.as_str().map_or_else(|| err(path, "log_msg format must be a string"), Ok)?;
                let mut args = Vec::new();
                if let Some(pv) = params.get(1) {
                    for (j, a) in get_arr(pv, "value", path)?.iter().enumerate() {
                        args.push(self.expr(a, &format!("{path}.parameters[1][{j}]"))?);
                    }
                }
                Prim::Log(fmt.to_string(), args)
            }
            "assert" | "assume" => Prim::Assert(pe(0)?),
            "no_op" => Prim::NoOp,
            o => return err(path, format!("unsupported primitive '{o}'")),
        };
        Ok(prim)
    }

    fn jump_target(&self, v: &Value, path: &str, n: Option<usize>) -> R<usize> {
        let t = hex_value(get(v, "value", path)?, path)?;
        match n {
            Some(n) if t >= 0 && (t as usize) <= n => Ok(t as usize),
            Some(n) => err(path, format!("jump target {t} outside the action's {n} primitives")),
            None => err(path, "jumps are only allowed in actions"),
        }
    }

    fn load_actions(&mut self, root: &Value) -> R<()> {
        let arr = get_arr(root, "actions", "(root)")?;
        // Names first: primitives do not refer to actions, but tables do.
        for (i, a) in arr.iter().enumerate() {
            let path = format!("actions[{i}]");
            let name = get_str(a, "name", &path)?.to_string();
            let id = get_i64(a, "id", &path)?;
            if self.action_ids.insert(id, i).is_some() {
                return err(&path, format!("duplicate action id {id}"));
            }
            // Several actions may share a name (p4c suffixes them); first wins for lookups.
            self.p.names.actions.entry(name).or_insert(i);
        }
        for (i, a) in arr.iter().enumerate() {
            let path = format!("actions[{i}]");
            let mut params = Vec::new();
            for (j, rd) in opt_arr(a, "runtime_data", &path)?.iter().enumerate() {
                let rpath = format!("{path}.runtime_data[{j}]");
                let w = get_u64(rd, "bitwidth", &rpath)? as u32;
                if w > 128 {
                    return err(&rpath, "action parameters wider than 128 bits are not supported");
                }
                params.push((get_str(rd, "name", &rpath)?.to_string(), w));
            }
            let prims_json = get_arr(a, "primitives", &path)?;
            let mut prims = Vec::new();
            for (j, pj) in prims_json.iter().enumerate() {
                let ppath = format!("{path}.primitives[{j}]");
                self.action_params.set(Some(params.len()));
                let prim = self.prim(pj, &ppath, Some(prims_json.len()));
                self.action_params.set(None);
                prims.push(prim?);
            }
            self.p.actions.push(Action {
                name: get_str(a, "name", &path)?.to_string(),
                id: get_i64(a, "id", &path)?,
                params,
                prims,
            });
        }
        Ok(())
    }

    fn load_value_sets(&mut self, root: &Value) -> R<()> {
        for (i, s) in opt_arr(root, "parse_vsets", "(root)")?.iter().enumerate() {
            let path = format!("parse_vsets[{i}]");
            let name = get_str(s, "name", &path)?.to_string();
            let width = get_u64(s, "compressed_bitwidth", &path)? as u32;
            self.p.names.value_sets.insert(name.clone(), i);
            self.p.value_sets.push(ValueSet { name, width });
        }
        Ok(())
    }

    fn extract_target(&self, v: &Value, path: &str) -> R<ExtractTarget> {
        let value = get(v, "value", path)?;
        match get_str(v, "type", path)? {
            "regular" | "header" => {
                let h = self.header_name(value, path)?;
                if self.p.headers[h].metadata {
                    return err(path, format!("cannot extract metadata '{}'", self.p.headers[h].name));
                }
                Ok(ExtractTarget::Header(h))
            }
            "stack" | "header_stack" => {
                let s = self.named(&self.p.names.stacks, "header stack", value, path)?;
                if self.p.stacks[s].headers.is_empty() {
                    return err(path, "empty header stack");
                }
                Ok(ExtractTarget::Stack(s))
            }
            "union_stack" => {
                let (s, m) = str_pair(value, path)?;
                let si = *self.p.names.union_stacks.get(s).map_or_else(|| err(path, format!("unknown union stack '{s}'")), Ok)?;
                let u0 = self.p.union_stacks[si].unions.first().copied().map_or_else(|| err(path, "empty union stack"), Ok)?;
                let mi = self.p.unions[u0]
                    .headers
                    .iter()
                    .position(|h| self.p.headers[*h].name.ends_with(&format!(".{m}")) || self.p.headers[*h].name == m)
                    .map_or_else(|| err(path, format!("unknown union member '{m}'")), Ok)?;
                Ok(ExtractTarget::UnionStack(si, mi))
            }
            t => err(path, format!("unknown extract target type '{t}'")),
        }
    }

    fn parser_op(&self, v: &Value, path: &str) -> R<ParserOp> {
        let op = get_str(v, "op", path)?;
        let params = get_arr(v, "parameters", path)?;
        let p = |i: usize| -> R<&Value> {
            params.get(i).map_or_else(|| err(path, format!("parser op '{op}' needs parameter {i}")), Ok)
        };
        Ok(match op {
            "extract" => ParserOp::Extract(self.extract_target(p(0)?, path)?),
            "extract_VL" => ParserOp::ExtractVL(self.extract_target(p(0)?, path)?, self.expr(p(1)?, path)?),
            "set" => ParserOp::Set(self.lvalue(p(0)?, path)?, self.expr(p(1)?, path)?),
            "verify" => ParserOp::Verify(self.expr(p(0)?, path)?, self.expr(p(1)?, path)?),
            "advance" => ParserOp::Advance(self.expr(p(0)?, path)?),
            "shift" => ParserOp::Advance(Expr::Const(hex_value(get(p(0)?, "value", path)?, path)? * 8)),
            "primitive" => ParserOp::Primitive(self.prim(p(0)?, path, None)?),
            o => return err(path, format!("unknown parser op '{o}'")),
        })
    }

    fn load_parser(&mut self, root: &Value) -> R<()> {
        let parsers = get_arr(root, "parsers", "(root)")?;
        let Some(pj) = parsers.first() else { return err("parsers", "the program has no parser") };
        self.p.parser = self.parser_at(pj, "parsers[0]")?;
        Ok(())
    }

    fn parser_at(&mut self, pj: &Value, path: &str) -> R<Parser> {
        let states_json = get_arr(pj, "parse_states", path)?;
        let mut state_names = HashMap::new();
        for (i, s) in states_json.iter().enumerate() {
            state_names.insert(get_str(s, "name", &format!("{path}.parse_states[{i}]"))?.to_string(), i);
        }
        let state_ref = |v: Option<&str>, p: &str| -> R<Option<usize>> {
            match v {
                None => Ok(None),
                Some(n) => state_names.get(n).map(|i| Some(*i)).map_or_else(|| err(p, format!("unknown parse state '{n}'")), Ok),
            }
        };
        let mut states = Vec::new();
        for (i, s) in states_json.iter().enumerate() {
            let spath = format!("{path}.parse_states[{i}]");
            let mut ops = Vec::new();
            for (j, o) in get_arr(s, "parser_ops", &spath)?.iter().enumerate() {
                ops.push(self.parser_op(o, &format!("{spath}.parser_ops[{j}]"))?);
            }
            let (key, key_bytes) = self.parse_key(s, &spath)?;
            let mut transitions = Vec::new();
            for (j, t) in get_arr(s, "transitions", &spath)?.iter().enumerate() {
                let tpath = format!("{spath}.transitions[{j}]");
                transitions.push(self.transition(t, key_bytes, &tpath, &state_ref)?);
            }
            states.push(ParseState { name: get_str(s, "name", &spath)?.to_string(), ops, key, key_bytes, transitions });
        }
        let init = state_ref(opt_str(pj, "init_state", path)?, path)?;
        Ok(Parser { name: get_str(pj, "name", path)?.to_string(), init, states })
    }

    fn parse_key(&self, s: &Value, spath: &str) -> R<(Vec<KeyPart>, usize)> {
        let mut key = Vec::new();
        let mut bytes = 0usize;
        for (j, k) in opt_arr(s, "transition_key", spath)?.iter().enumerate() {
            let kpath = format!("{spath}.transition_key[{j}]");
            let part = match self.expr(k, &kpath)? {
                Expr::Lookahead(o, w) => KeyPart::Lookahead(o, w),
                e @ (Expr::Field(_) | Expr::DynField(..)) => {
                    let w = self.expr_width(&e);
                    KeyPart::Field(e, w)
                }
                _ => return err(&kpath, "transition key must be a field, stack_field or lookahead"),
            };
            bytes += match &part {
                KeyPart::Field(_, w) | KeyPart::Lookahead(_, w) => w.div_ceil(8) as usize,
            };
            key.push(part);
        }
        Ok((key, bytes))
    }

    fn expr_width(&self, e: &Expr) -> u32 {
        match e {
            Expr::Field(f) => self.p.field_width(*f),
            Expr::DynField(h, o) => self.p.header_types[self.header_ref_type(h)].fields[*o].width,
            _ => 1,
        }
    }

    fn transition(
        &self,
        t: &Value,
        key_bytes: usize,
        tpath: &str,
        state_ref: &StateRef,
    ) -> R<Transition> {
        let next = state_ref(opt_str(t, "next_state", tpath)?, tpath)?;
        let ty = opt_str(t, "type", tpath)?.unwrap_or("hexstr");
        let value = opt_str(t, "value", tpath)?;
        if self.strict && ty == "hexstr" {
            check_transition_width("value", value, key_bytes, tpath)?;
            check_transition_width("mask", opt_str(t, "mask", tpath)?, key_bytes, tpath)?;
        }
        let mask = match opt_str(t, "mask", tpath)? {
            Some(m) => Some(parse_hex_bytes(m, key_bytes, tpath)?),
            None => None,
        };
        let matcher = match (ty, value) {
            ("default", _) => TransitionMatch::Default,
            ("hexstr", None) => TransitionMatch::Default,
            ("hexstr", Some(v)) => TransitionMatch::Value { value: parse_hex_bytes(v, key_bytes, tpath)?, mask },
            ("parse_vset", Some(v)) => {
                let vs = self.p.names.value_sets.get(v).map_or_else(|| err(tpath, format!("unknown parse_vset '{v}'")), Ok)?;
                TransitionMatch::ValueSet { vset: *vs, mask }
            }
            (t, _) => return err(tpath, format!("unknown transition type '{t}'")),
        };
        Ok(Transition { matcher, next })
    }

    fn load_deparser(&mut self, root: &Value) -> R<()> {
        let deparsers = get_arr(root, "deparsers", "(root)")?;
        let Some(d) = deparsers.first() else { return err("deparsers", "the program has no deparser") };
        for (j, h) in get_arr(d, "order", "deparsers[0]")?.iter().enumerate() {
            self.p.deparser.push(self.header_name(h, &format!("deparsers[0].order[{j}]"))?);
        }
        Ok(())
    }

    fn load_pipelines(&mut self, root: &Value) -> R<()> {
        let pipes = get_arr(root, "pipelines", "(root)")?;
        for (i, pj) in pipes.iter().enumerate() {
            let path = format!("pipelines[{i}]");
            let name = get_str(pj, "name", &path)?.to_string();
            let init = self.load_pipeline(pj, &path)?;
            let pipe = Pipeline { name: name.clone(), init };
            match name.as_str() {
                "ingress" => self.p.ingress = pipe,
                "egress" => self.p.egress = pipe,
                _ => return err(&path, format!("unknown pipeline '{name}' (v1model has 'ingress' and 'egress')")),
            }
        }
        if self.p.ingress.name.is_empty() || self.p.egress.name.is_empty() {
            return err("pipelines", "v1model needs pipelines named 'ingress' and 'egress'");
        }
        Ok(())
    }

    /// Loads one pipeline's tables, conditionals and action calls; returns its first node.
    fn load_pipeline(&mut self, pj: &Value, path: &str) -> R<Option<Node>> {
        self.load_action_profiles(pj, path)?;
        let tables = opt_arr(pj, "tables", path)?;
        let conds = opt_arr(pj, "conditionals", path)?;
        let calls = opt_arr(pj, "action_calls", path)?;
        let mut names = PipelineNames::default();
        let (t0, c0, a0) = (self.p.tables.len(), self.p.conditionals.len(), self.p.action_calls.len());
        for (i, t) in tables.iter().enumerate() {
            names.nodes.insert(get_str(t, "name", &format!("{path}.tables[{i}]"))?.to_string(), Node::Table(t0 + i));
        }
        for (i, c) in conds.iter().enumerate() {
            names.nodes.insert(get_str(c, "name", &format!("{path}.conditionals[{i}]"))?.to_string(), Node::Cond(c0 + i));
        }
        for (i, c) in calls.iter().enumerate() {
            names.nodes.insert(get_str(c, "name", &format!("{path}.action_calls[{i}]"))?.to_string(), Node::ActionCall(a0 + i));
        }
        for (i, t) in tables.iter().enumerate() {
            let table = self.load_table(t, &format!("{path}.tables[{i}]"), &names)?;
            if self.p.names.tables.insert(table.name.clone(), t0 + i).is_some() {
                return err(&format!("{path}.tables[{i}]"), format!("duplicate table name '{}'", table.name));
            }
            self.p.tables.push(table);
        }
        for (i, c) in conds.iter().enumerate() {
            let cpath = format!("{path}.conditionals[{i}]");
            let cond = Conditional {
                name: get_str(c, "name", &cpath)?.to_string(),
                expr: self.expr(get(c, "expression", &cpath)?, &format!("{cpath}.expression"))?,
                true_next: node_ref(&names, opt_str(c, "true_next", &cpath)?, &cpath)?,
                false_next: node_ref(&names, opt_str(c, "false_next", &cpath)?, &cpath)?,
            };
            self.p.conditionals.push(cond);
        }
        for (i, c) in calls.iter().enumerate() {
            let cpath = format!("{path}.action_calls[{i}]");
            let id = get_i64(c, "action_id", &cpath)?;
            let action = *self.action_ids.get(&id).map_or_else(|| err(&cpath, format!("unknown action id {id}")), Ok)?;
            let next = node_ref(&names, opt_str(c, "next_node", &cpath)?, &cpath)?;
            self.p.action_calls.push(ActionCallNode { name: get_str(c, "name", &cpath)?.to_string(), action, next });
        }
        node_ref(&names, opt_str(pj, "init_table", path)?, path)
    }

    fn load_table(&self, t: &Value, path: &str, names: &PipelineNames) -> R<Table> {
        let name = get_str(t, "name", path)?.to_string();
        let profile = self.table_profile(t, path)?;
        let mut keys = Vec::new();
        for (j, k) in opt_arr(t, "key", path)?.iter().enumerate() {
            keys.push(self.key_field(k, &format!("{path}.key[{j}]"))?);
        }
        if keys.iter().filter(|k| k.kind == MatchKind::Lpm).count() > 1 {
            return err(path, "more than one lpm key field");
        }
        let mut actions = Vec::new();
        let mut by_name: HashMap<&str, usize> = HashMap::new();
        for (j, a) in get_arr(t, "actions", path)?.iter().enumerate() {
            let apath = format!("{path}.actions[{j}]");
            let aname = a.as_str().map_or_else(|| err(&apath, "action name must be a string"), Ok)?;
            // Among same-named actions, prefer the one listed under the table's action_ids.
            let idx = self.table_action(t, aname, j, &apath)?;
            by_name.insert(aname, idx);
            actions.push(idx);
        }
        let mut next_by_action = vec![None; self.p.actions.len()];
        let (mut next_hit, mut next_miss) = (None, None);
        if let Some(nt) = obj(t, path)?.get("next_tables") {
            let npath = format!("{path}.next_tables");
            for (k, v) in obj(nt, &npath)? {
                let target = node_ref(names, v.as_str(), &npath)?;
                match k.as_str() {
                    "__HIT__" => next_hit = Some(target),
                    "__MISS__" => next_miss = Some(target),
                    a => {
                        let idx = by_name.get(a).map_or_else(|| err(&npath, format!("action '{a}' is not an action of the table")), Ok)?;
                        next_by_action[*idx] = Some(target);
                    }
                }
            }
        }
        let base_default_next = node_ref(names, opt_str(t, "base_default_next", path)?, path)?;
        let (default_entry, default_const) = self.default_entry(t, &actions, path)?;
        let entry_const = t.get("default_entry").is_some_and(|d| opt_bool(d, "action_entry_const", false, path).unwrap_or(false));
        let needs_priority = keys.iter().any(|k| matches!(k.kind, MatchKind::Ternary | MatchKind::Range | MatchKind::Optional));
        let mut table = Table {
            name,
            id: get_i64(t, "id", path)?,
            all_exact: keys.iter().all(|k| matches!(k.kind, MatchKind::Exact | MatchKind::Valid)),
            needs_priority,
            keys,
            actions,
            max_size: obj(t, path)?.get("max_size").and_then(Value::as_u64).unwrap_or(1024) as usize,
            next_by_action,
            next_hit,
            next_miss,
            base_default_next,
            default_entry,
            default_const,
            default_fixed: false,
            const_entries: Vec::new(),
            direct_counter: None,
            direct_meter: None,
            profile,
        };
        if profile.is_some() && (table.default_entry.is_some() || !opt_arr(t, "entries", path)?.is_empty()) {
            return err(path, "an indirect table (action profile) cannot have a default_entry or const entries");
        }
        for (j, e) in opt_arr(t, "entries", path)?.iter().enumerate() {
            let entry = self.const_entry(&table, e, &format!("{path}.entries[{j}]"))?;
            table.const_entries.push(entry);
        }
        table.default_fixed = table.keys.is_empty() && table.default_const && entry_const && table.default_entry.is_some();
        Ok(table)
    }

    /// The action profile of an `indirect` (`indirect_ws`: with a selector) table; None for `simple`.
    fn table_profile(&self, t: &Value, path: &str) -> R<Option<usize>> {
        let ty = opt_str(t, "type", path)?.unwrap_or("simple");
        if ty == "simple" {
            return Ok(None);
        }
        if ty != "indirect" && ty != "indirect_ws" {
            return err(path, format!("Invalid table type '{ty}'"));
        }
        let name = get_str(t, "action_profile", path)?;
        let p = *self.p.names.action_profiles.get(name).map_or_else(|| err(path, format!("unknown action profile '{name}'")), Ok)?;
        if (ty == "indirect_ws") != self.p.action_profiles[p].selector.is_some() {
            return err(path, format!("table type '{ty}' does not match action profile '{name}' (selector: indirect_ws)"));
        }
        Ok(Some(p))
    }

    fn load_action_profiles(&mut self, pj: &Value, path: &str) -> R<()> {
        for (i, a) in opt_arr(pj, "action_profiles", path)?.iter().enumerate() {
            let apath = format!("{path}.action_profiles[{i}]");
            let name = get_str(a, "name", &apath)?.to_string();
            let selector = match obj(a, &apath)?.get("selector") {
                None | Some(Value::Null) => None,
                Some(s) => {
                    let calc = self.calculation(s, format!("{name}$selector"), &format!("{apath}.selector"))?;
                    self.p.calculations.push(calc);
                    Some(self.p.calculations.len() - 1)
                }
            };
            let max_size = get_u64(a, "max_size", &apath)? as usize;
            if self.p.names.action_profiles.insert(name.clone(), self.p.action_profiles.len()).is_some() {
                return err(&apath, format!("duplicate action profile '{name}'"));
            }
            self.p.action_profiles.push(ActionProfile { name, max_size, selector });
        }
        Ok(())
    }

    fn table_action(&self, t: &Value, aname: &str, j: usize, apath: &str) -> R<usize> {
        if let Some(id) = t.get("action_ids").and_then(|a| a.get(j)).and_then(Value::as_i64) {
            if let Some(i) = self.action_ids.get(&id) {
                if self.p.actions[*i].name == aname {
                    return Ok(*i);
                }
            }
        }
        self.p.names.actions.get(aname).copied().map_or_else(|| err(apath, format!("unknown action '{aname}'")), Ok)
    }

    fn key_field(&self, k: &Value, kpath: &str) -> R<KeyField> {
        let mt = get_str(k, "match_type", kpath)?;
        let kind = match mt {
            "exact" => MatchKind::Exact,
            "lpm" => MatchKind::Lpm,
            "ternary" => MatchKind::Ternary,
            "range" => MatchKind::Range,
            "optional" => MatchKind::Optional,
            "valid" => MatchKind::Valid,
            m => return err(kpath, format!("unknown match_type '{m}'")),
        };
        let target = get(k, "target", kpath)?;
        let (source, width) = if kind == MatchKind::Valid {
            (Expr::Valid(HeaderRef::Fixed(self.header_name(target, kpath)?)), 1)
        } else {
            let e = self.field_expr(target, kpath)?;
            let w = match &e {
                Expr::Field(f) => self.p.field_width(*f),
                _ => 1,
            };
            (e, w)
        };
        if let Expr::Field(f) = source {
            if self.is_varbit(f) {
                return err(kpath, "cannot match on a variable-length field");
            }
        }
        let mask = match opt_str(k, "mask", kpath)? {
            Some(m) => Some(parse_hex(m, kpath)? as u128 & mask_of(width)),
            None => None,
        };
        let name = opt_str(k, "name", kpath)?.map(str::to_string).unwrap_or_else(|| match target {
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("."),
            v => v.as_str().unwrap_or("").to_string(),
        });
        Ok(KeyField { name, kind, source, width, mask })
    }

    fn action_data(&self, action: usize, data: &[Value], path: &str) -> R<Vec<i128>> {
        let params = &self.p.actions[action].params;
        if data.len() != params.len() {
            return err(path, format!("action '{}' takes {} arguments, got {}", self.p.actions[action].name, params.len(), data.len()));
        }
        let mut args = Vec::new();
        for (i, (d, (pname, w))) in data.iter().zip(params).enumerate() {
            let v = hex_value(d, &format!("{path}.action_data[{i}]"))?;
            if (v as u128) & !mask_of(*w) != 0 && v >= 0 {
                return err(path, format!("argument '{pname}' does not fit in {w} bits"));
            }
            args.push(v);
        }
        Ok(args)
    }

    fn default_entry(&self, t: &Value, actions: &[usize], path: &str) -> R<(Option<ActionCall>, bool)> {
        let Some(d) = t.get("default_entry").filter(|d| !d.is_null()) else { return Ok((None, false)) };
        let dpath = format!("{path}.default_entry");
        let id = get_i64(d, "action_id", &dpath)?;
        let action = *self.action_ids.get(&id).map_or_else(|| err(&dpath, format!("unknown action id {id}")), Ok)?;
        if !actions.contains(&action) {
            return err(&dpath, format!("default action '{}' is not an action of the table", self.p.actions[action].name));
        }
        let data = opt_arr(d, "action_data", &dpath)?;
        let args = self.action_data(action, data, &dpath)?;
        let is_const = opt_bool(d, "action_const", false, &dpath)?;
        Ok((Some(ActionCall { action, args }), is_const))
    }

    fn const_entry(&self, table: &Table, e: &Value, path: &str) -> R<ConstEntry> {
        let mk = get_arr(e, "match_key", path)?;
        if mk.len() != table.keys.len() {
            return err(path, format!("match_key has {} fields, the table key has {}", mk.len(), table.keys.len()));
        }
        let mut key = Vec::new();
        for (j, (m, kf)) in mk.iter().zip(&table.keys).enumerate() {
            let mpath = format!("{path}.match_key[{j}]");
            let mt = get_str(m, "match_type", &mpath)?;
            if mt != kf.kind.name() {
                return err(&mpath, format!("match_type '{mt}' does not match the key's '{}'", kf.kind.name()));
            }
            let hexk = |k: &str| -> R<u128> {
                let v = hex_value(get(m, k, &mpath)?, &mpath)? as u128;
                if v & !mask_of(kf.width) != 0 {
                    return err(&mpath, format!("'{k}' does not fit in {} bits", kf.width));
                }
                Ok(v)
            };
            let full = mask_of(kf.width);
            let elem = match kf.kind {
                MatchKind::Exact => KeyElem { value: hexk("key")?, mask: full, lo: 0, hi: 0, plen: kf.width },
                MatchKind::Valid => {
                    let b = get(m, "key", &mpath)?.as_bool().map_or_else(|| err(&mpath, "valid key must be a boolean"), Ok)?;
                    KeyElem { value: b as u128, mask: 1, lo: 0, hi: 0, plen: 1 }
                }
                MatchKind::Lpm => {
                    let plen = get_u64(m, "prefix_length", &mpath)? as u32;
                    if plen > kf.width {
                        return err(&mpath, format!("prefix_length {plen} exceeds the {}-bit field", kf.width));
                    }
                    let mask = crate::state::prefix_mask(kf.width, plen);
                    KeyElem { value: hexk("key")? & mask, mask, lo: 0, hi: 0, plen }
                }
                MatchKind::Ternary | MatchKind::Optional => {
                    let mask = hexk("mask")?;
                    KeyElem { value: hexk("key")? & mask, mask, lo: 0, hi: 0, plen: 0 }
                }
                MatchKind::Range => KeyElem { value: 0, mask: 0, lo: hexk("start")?, hi: hexk("end")?, plen: 0 },
            };
            key.push(elem);
        }
        let ae = get(e, "action_entry", path)?;
        let apath = format!("{path}.action_entry");
        let id = get_i64(ae, "action_id", &apath)?;
        let action = *self.action_ids.get(&id).map_or_else(|| err(&apath, format!("unknown action id {id}")), Ok)?;
        if !table.actions.contains(&action) {
            return err(&apath, format!("action '{}' is not an action of the table", self.p.actions[action].name));
        }
        let args = self.action_data(action, opt_arr(ae, "action_data", &apath)?, &apath)?;
        let priority = obj(e, path)?.get("priority").and_then(Value::as_i64).unwrap_or(0) as i32;
        Ok(ConstEntry { key, call: ActionCall { action, args }, priority })
    }

    fn bind_direct_resources(&mut self, root: &Value) -> R<()> {
        for (i, c) in opt_arr(root, "counter_arrays", "(root)")?.iter().enumerate() {
            let path = format!("counter_arrays[{i}]");
            if opt_bool(c, "is_direct", false, &path)? {
                let b = get_str(c, "binding", &path)?;
                let t = *self.p.names.tables.get(b).map_or_else(|| err(&path, format!("binding: unknown table '{b}'")), Ok)?;
                self.p.counters[i].direct_table = Some(t);
                self.p.tables[t].direct_counter = Some(i);
            }
        }
        for (i, m) in opt_arr(root, "meter_arrays", "(root)")?.iter().enumerate() {
            let path = format!("meter_arrays[{i}]");
            if opt_bool(m, "is_direct", false, &path)? {
                let b = get_str(m, "binding", &path)?;
                let t = *self.p.names.tables.get(b).map_or_else(|| err(&path, format!("binding: unknown table '{b}'")), Ok)?;
                self.p.meters[i].direct_table = Some(t);
                self.p.tables[t].direct_meter = Some(i);
            }
        }
        // Tables naming a direct meter by attribute must agree with the meter's binding.
        let pipes = get_arr(root, "pipelines", "(root)")?;
        for (pi, pj) in pipes.iter().enumerate() {
            for (ti, t) in opt_arr(pj, "tables", "")?.iter().enumerate() {
                let path = format!("pipelines[{pi}].tables[{ti}]");
                if let Some(m) = opt_str(t, "direct_meters", &path)? {
                    let mi = *self.p.names.meters.get(m).map_or_else(|| err(&path, format!("direct_meters: unknown meter array '{m}'")), Ok)?;
                    let tname = get_str(t, "name", &path)?;
                    if self.p.meters[mi].direct_table != self.p.names.tables.get(tname).copied() {
                        return err(&path, format!("direct_meters: meter '{m}' is not bound to this table"));
                    }
                }
                if opt_bool(t, "with_counters", false, &path)? {
                    let tname = get_str(t, "name", &path)?;
                    if self.p.tables[self.p.names.tables[tname]].direct_counter.is_none() {
                        return err(&path, "with_counters is true but no direct counter array is bound to the table");
                    }
                }
            }
        }
        Ok(())
    }

    fn load_checksums(&mut self, root: &Value) -> R<()> {
        for (i, c) in opt_arr(root, "checksums", "(root)")?.iter().enumerate() {
            let path = format!("checksums[{i}]");
            let target = self.field_ref(get(c, "target", &path)?, &format!("{path}.target"))?;
            let cname = get_str(c, "calculation", &path)?;
            let calc = *self.calc_names.get(cname).map_or_else(|| err(&path, format!("unknown calculation '{cname}'")), Ok)?;
            let cond = match obj(c, &path)?.get("if_cond") {
                None | Some(Value::Null) => None,
                Some(e) => Some(self.expr(e, &format!("{path}.if_cond"))?),
            };
            self.p.checksums.push(Checksum {
                name: get_str(c, "name", &path)?.to_string(),
                target,
                calc,
                verify: opt_bool(c, "verify", true, &path)?,
                update: opt_bool(c, "update", true, &path)?,
                cond,
            });
        }
        Ok(())
    }
}

fn node_ref(names: &PipelineNames, name: Option<&str>, path: &str) -> R<Option<Node>> {
    match name {
        None => Ok(None),
        Some(n) => names.nodes.get(n).map(|x| Some(*x)).map_or_else(|| err(path, format!("unknown control node '{n}'")), Ok),
    }
}
