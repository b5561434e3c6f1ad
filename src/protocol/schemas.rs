//! What `schemas/` holds: the JSON Schema of every type the method table
//! names (`methods::type_schemas`), of the configuration, a message and
//! what `initialize` reports, and the method table itself.

use super::methods;
use super::{CompactdCapabilities, Config, Message};

/// Every file generated under `schemas/`, by file stem.
pub fn schemas() -> Vec<(&'static str, serde_json::Value)> {
    fn schema<T: schemars::JsonSchema>(name: &'static str) -> (&'static str, serde_json::Value) {
        let value = serde_json::to_value(schemars::schema_for!(T)).expect("schema serializes");
        (name, value)
    }
    let mut all = vec![
        schema::<Config>("config"),
        schema::<Message>("message"),
        schema::<CompactdCapabilities>("CompactdCapabilities"),
    ];
    all.extend(methods::type_schemas());
    all.push(("methods", methods::table_json()));
    all
}
