//! `reef-gen`: the `.reef` event schema language and its generators.
//!
//! A schema names subsystems and their events with typed fields:
//!
//! ```text
//! enum state : u8 { IDLE, RUNNING, BLOCKED };
//! subsystem kernel {
//!     event CSWITCH "Context switch" (u32 prev_tid, u32 next_tid);
//!     event TIMER   "";                       // no field list: one `u32 arg`
//! };
//! ```
//!
//! From it, [`generate`] writes three files into an output directory:
//! - `<name>.h`: ids as macros and one `static inline` trace function per
//!   event, the whole fast path of libreef (`tracer/`);
//! - `<name>.tsdl`: the CTF 1.8 metadata that libreef writes into every trace
//!   (placeholders for run-time values filled with neutral defaults);
//! - `<name>.json`: a dictionary of ids, names, descriptions and field types.
//!
//! ```
//! let schema = reef_gen::parse_schema("ev.reef", "subsystem app { event TICK \"\"; };").unwrap();
//! assert!(reef_gen::c_header(&schema).contains("reef_app_tick(uint32_t arg)"));
//! ```
//!
//! The crate does no printing; errors are [`GenError`] values whose
//! `Display` reads `file:line:column: expected ...`.

mod error;
mod header;
mod json;
mod lexer;
mod parser;
pub mod schema;
mod tsdl;

use std::path::{Path, PathBuf};

pub use error::{GenError, Pos, SchemaError};
pub use header::{event_macro, function_name, schema_hash, subsystem_macro};
pub use parser::parse_schema;
pub use schema::Schema;
pub use tsdl::{instantiate, tsdl_field_name, PLACEHOLDERS};

/// The metadata template embedded in the header (`@NAME@` placeholders).
pub fn metadata_template(schema: &Schema) -> String {
    tsdl::metadata_template(schema)
}

/// The standalone CTF 1.8 metadata (placeholders filled with defaults).
pub fn metadata(schema: &Schema) -> String {
    instantiate(&tsdl::metadata_template(schema))
}

/// The generated C header.
pub fn c_header(schema: &Schema) -> String {
    header::c_header(schema, &tsdl::metadata_template(schema))
}

/// The JSON dictionary.
pub fn json_dictionary(schema: &Schema) -> String {
    json::json_dictionary(schema)
}

/// What [`generate`] wrote.
#[derive(Debug, Clone)]
pub struct Generated {
    pub schema: Schema,
    pub header: PathBuf,
    pub metadata: PathBuf,
    pub json: PathBuf,
}

/// Reads `schema_path`, writes `<name>.h`, `<name>.tsdl` and `<name>.json`
/// into `out_dir` (created if missing).
pub fn generate(schema_path: &Path, out_dir: &Path) -> Result<Generated, GenError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |error| GenError::Io { path, error }
    };
    let text = std::fs::read_to_string(schema_path).map_err(io(schema_path))?;
    let schema = parse_schema(&schema_path.display().to_string(), &text)?;
    std::fs::create_dir_all(out_dir).map_err(io(out_dir))?;
    let header = out_dir.join(format!("{}.h", schema.name));
    let metadata_path = out_dir.join(format!("{}.tsdl", schema.name));
    let json = out_dir.join(format!("{}.json", schema.name));
    std::fs::write(&header, c_header(&schema)).map_err(io(&header))?;
    std::fs::write(&metadata_path, metadata(&schema)).map_err(io(&metadata_path))?;
    std::fs::write(&json, json_dictionary(&schema)).map_err(io(&json))?;
    Ok(Generated {
        schema,
        header,
        metadata: metadata_path,
        json,
    })
}
