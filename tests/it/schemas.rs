//! `schemas/` is generated from the Rust wire types. Regenerate with
//! `UPDATE_SCHEMAS=1 cargo test --test it schemas`.

use std::path::Path;

#[test]
fn committed_schemas_are_up_to_date() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas");
    let update = std::env::var_os("UPDATE_SCHEMAS").is_some();
    let mut stale = Vec::new();
    let mut expected_files = Vec::new();
    for (name, schema) in compactd::protocol::schemas() {
        let file = dir.join(format!("{name}.json"));
        expected_files.push(format!("{name}.json"));
        let text = serde_json::to_string_pretty(&schema).unwrap() + "\n";
        if update {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&file, &text).unwrap();
        } else if std::fs::read_to_string(&file).ok().as_deref() != Some(text.as_str()) {
            stale.push(name);
        }
    }
    let mut extra: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".json") && !expected_files.contains(f))
        .collect();
    extra.sort();
    assert!(
        stale.is_empty(),
        "stale schemas {stale:?}: run UPDATE_SCHEMAS=1 cargo test --test it schemas"
    );
    assert!(extra.is_empty(), "schemas with no Rust type: {extra:?}");
}
