//! Schema errors: each malformed input gives `file:line:column: message`.

fn check(input: &str, expected: &str) {
    match reef_gen::parse_schema("bad.reef", input) {
        Ok(_) => panic!("accepted: {input}"),
        Err(e) => assert_eq!(e.to_string(), expected, "input: {input}"),
    }
}

#[test]
fn syntax_errors() {
    check(
        "subsystem kernel {\n    event CSWITCH \"x\" (u32 a u32 b);\n};",
        "bad.reef:2:30: expected `)`, found `u32`",
    );
    check(
        "subsystem {",
        "bad.reef:1:11: expected a subsystem name, found `{`",
    );
    check(
        "event X;",
        "bad.reef:1:1: expected `subsystem` or `enum`, found `event`",
    );
    check(
        "subsystem s {\n  event E \"\" (u32 a)\n};",
        "bad.reef:3:1: expected `;`, found `}`",
    );
    check(
        "subsystem s { event E \"\" (u32 a); ",
        "bad.reef:1:35: expected `event` or `}`, found end of file",
    );
    check(
        "subsystem s { field E; };",
        "bad.reef:1:15: expected `event` or `}`, found `field`",
    );
    check(
        "subsystem s { event E \"\" (u32 a[0]); };",
        "bad.reef:1:33: expected an array length from 1 to 65535, found 0",
    );
    check(
        "subsystem s { event E \"\" (string a[2]); };",
        "bad.reef:1:35: expected `,` or `)`: arrays of strings are not supported",
    );
    check(
        "subsystem s { event E \"\" (u32 a $); };",
        "bad.reef:1:33: expected a declaration, found unexpected character `$`",
    );
}

#[test]
fn lexical_errors() {
    check(
        "subsystem s {\n event E \"unterminated\n};",
        "bad.reef:2:10: expected `\"` to close this string",
    );
    check(
        "/* never closed",
        "bad.reef:1:1: expected `*/` to close this comment",
    );
    check(
        "subsystem s { event E \"a\\qb\"; };",
        "bad.reef:1:25: expected one of `\\\"`, `\\\\`, `\\n`, `\\t`",
    );
}

#[test]
fn semantic_errors() {
    check(
        "subsystem s { event E \"\" (colour c); };",
        "bad.reef:1:27: expected a field type (a scalar type or a declared enum), found `colour`",
    );
    check(
        "subsystem s { event E \"\"; event e \"\"; };",
        "bad.reef:1:33: expected a new event name, `e` is already declared in `s` at line 1",
    );
    check(
        "subsystem s { event E \"\"; };\nsubsystem S { event F \"\"; };",
        "bad.reef:2:11: expected a new subsystem name, `S` is already declared at line 1",
    );
    check(
        "subsystem s { event E \"\" (u32 a, u64 a); };",
        "bad.reef:1:38: expected a new field name, `a` is already used in event `E`",
    );
    check(
        "subsystem s { event E \"\" (u32 data_len, u8 data[]); };",
        "bad.reef:1:44: expected a new field name, `data_len` is already used in event `E`",
    );
    check(
        "subsystem s { event E \"\" (u32 int); };",
        "bad.reef:1:31: expected a field name that is not a C/C++ keyword and does not start with `reef`, found `int`",
    );
    check(
        "enum e : u8 { A = 256 };",
        "bad.reef:1:19: expected a value that fits in `u8`, found 256",
    );
    check(
        "enum e : u8 { A = 255, B };",
        "bad.reef:1:24: expected an explicit value: 256 does not fit in `u8`",
    );
    check(
        "subsystem register { event SCHEMA \"\"; };",
        "bad.reef:1:28: expected another event name: `reef_register_schema` is a libreef function",
    );
}

#[test]
fn limits() {
    let many: String = (0..257).map(|i| format!("event E{i} \"\";\n")).collect();
    let text = format!("subsystem s {{\n{many}}};");
    check(
        &text,
        "bad.reef:258:7: expected at most 256 events in subsystem `s`",
    );
}
