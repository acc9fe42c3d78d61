//! Golden tests: the generated header, metadata and JSON of small schemas,
//! compared byte for byte with the files in `tests/golden/`.
//! Refresh them with `REEF_BLESS=1 cargo test -p reef-gen`.

use std::path::Path;

fn check_golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("REEF_BLESS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with REEF_BLESS=1 to create)", path.display()));
    if expected != actual {
        let line = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .map(|i| i + 1)
            .unwrap_or(expected.lines().count().min(actual.lines().count()) + 1);
        panic!(
            "{name} differs from the golden file at line {line} (REEF_BLESS=1 to accept):\n{actual}"
        );
    }
}

#[test]
fn small_schema_outputs() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let out = std::env::temp_dir().join(format!("reef-gen-golden-{}", std::process::id()));
    let generated = reef_gen::generate(&dir.join("small.reef"), &out).unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    check_golden("small.h", &read(&generated.header));
    check_golden("small.tsdl", &read(&generated.metadata));
    check_golden("small.json", &read(&generated.json));
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn ids_follow_declaration_order() {
    let s = reef_gen::parse_schema(
        "ids.reef",
        "subsystem a { event X \"\"; event Y \"\"; }; subsystem b { event Z \"\"; };",
    )
    .unwrap();
    let ids: Vec<(String, u32)> = s
        .events()
        .map(|(sub, e)| (format!("{}:{}", sub.name, e.name), e.id))
        .collect();
    assert_eq!(
        ids,
        [
            ("a:X".to_string(), 0x000),
            ("a:Y".to_string(), 0x001),
            ("b:Z".to_string(), 0x100)
        ]
    );
    // Adding an event at the end of `a` changes no other id.
    let s2 = reef_gen::parse_schema(
        "ids.reef",
        "subsystem a { event X \"\"; event Y \"\"; event W \"\"; }; subsystem b { event Z \"\"; };",
    )
    .unwrap();
    assert_eq!(s2.subsystems[1].events[0].id, 0x100);
}

#[test]
fn minimal_event_function() {
    let s = reef_gen::parse_schema("m.reef", "subsystem app { event TICK \"\"; };").unwrap();
    let h = reef_gen::c_header(&s);
    let expected = "\
/* app:TICK: TICK */
static inline void reef_app_tick(uint32_t arg)
{
\tchar *reef_p;
\tif (REEF_UNLIKELY(!reef__enabled(TRACE_SUBSYS_APP, TRACE_EVENT_APP_TICK)))
\t\treturn;
\treef_p = reef__reserve(REEF_EVENT_HEADER_SIZE + 4u);
\tif (REEF_UNLIKELY(!reef_p))
\t\treturn;
\treef_p = reef__put_header(reef_p, TRACE_EVENT_APP_TICK);
\treef_p = reef__put_32(reef_p, arg);
\treef__commit(reef_p);
}
";
    assert!(h.contains(expected), "{h}");
    assert!(h.contains("#define TRACE_SUBSYS_APP 0\n#define TRACE_NUM_SUBSYSTEMS 1\n"));
    assert!(h.contains("#define TRACE_EVENT_APP_TICK 0x0000\n"));
}

#[test]
fn tsdl_escapes_keyword_and_underscore_field_names() {
    let s = reef_gen::parse_schema(
        "k.reef",
        "subsystem s { event E \"\" (u32 clock, u32 _x, u32 plain); };",
    )
    .unwrap();
    let m = reef_gen::metadata(&s);
    assert!(m.contains("\t\tuint32_t _clock;\n\t\tuint32_t __x;\n\t\tuint32_t plain;\n"));
}
