//! Strict mode refuses what BMv2's loader refuses: `strict_corpus.json` lists
//! documents BMv2 rejects, each one JSON Patch operation (RFC 6902) away from a
//! program real p4c compiled (`softswitch/tests/p4c_reference/*.json`), with
//! the exact error p4core must give. The p4c programs themselves load.

use p4core::Program;
use serde_json::Value;

const P4C_PROGRAMS: [&str; 4] = ["f01_l3", "f03_stateful", "f05_tables", "f07_types"];

/// A p4c output from the repository's reference set.
fn p4c_program(name: &str) -> Value {
    read_json(&format!("{}/../../tests/p4c_reference/{name}.json", env!("CARGO_MANIFEST_DIR")))
}

fn read_json(path: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn p4c_outputs_load_strictly() {
    for base in P4C_PROGRAMS {
        let text = p4c_program(base).to_string();
        if let Err(e) = Program::from_json(&text) {
            panic!("{base}: {e}");
        }
    }
}

#[test]
fn corpus_is_refused_entry_by_entry() {
    let corpus = read_json(&format!("{}/tests/strict_corpus.json", env!("CARGO_MANIFEST_DIR")));
    let cases = corpus.as_array().unwrap();
    assert!(cases.len() >= 30, "the corpus must hold at least 30 documents");
    let mut failures = Vec::new();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let patch: json_patch::Patch = serde_json::from_value(case["patch"].clone()).unwrap();
        assert_eq!(patch.0.len(), 1, "{name}: one edit per document");
        let mut doc = p4c_program(case["base"].as_str().unwrap());
        json_patch::patch(&mut doc, &patch).unwrap_or_else(|e| panic!("{name}: patch does not apply: {e}"));
        let want = case["error"].as_str().unwrap();
        match Program::from_json(&doc.to_string()) {
            Ok(_) => failures.push(format!("{name}: accepted")),
            Err(e) if e.to_string() != want => failures.push(format!("{name}:\n  got  {e}\n  want {want}")),
            Err(e) => assert!(!e.to_string().contains('\n'), "{name}: error spans several lines"),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn lenient_mode_accepts_the_one_level_expression_shape() {
    let corpus = read_json(&format!("{}/tests/strict_corpus.json", env!("CARGO_MANIFEST_DIR")));
    let case = &corpus.as_array().unwrap()[0];
    let patch: json_patch::Patch = serde_json::from_value(case["patch"].clone()).unwrap();
    let mut doc = p4c_program("f01_l3");
    json_patch::patch(&mut doc, &patch).unwrap();
    assert!(Program::from_json(&doc.to_string()).is_err());
    assert!(Program::from_json_lenient(&doc.to_string()).is_ok());
}
