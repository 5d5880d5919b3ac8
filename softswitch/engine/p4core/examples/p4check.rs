//! Loads BMv2 JSON files and reports whether p4core accepts them:
//! `cargo run --release -p p4core --example p4check -- prog.json...`
use p4core::Program;

fn main() {
    let mut failed = false;
    for path in std::env::args().skip(1) {
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{path}: {e}");
                failed = true;
                continue;
            }
        };
        match Program::from_json(&text) {
            Ok(p) => println!(
                "{path}: ok ({} headers, {} tables, {} actions, {} parse states)",
                p.headers.len(),
                p.tables.len(),
                p.actions.len(),
                p.parser.states.len()
            ),
            Err(e) => {
                eprintln!("{path}: {e}");
                failed = true;
            }
        }
    }
    std::process::exit(failed as i32);
}
