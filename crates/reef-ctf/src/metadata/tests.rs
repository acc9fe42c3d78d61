//! Focused, data-driven tests of the TSDL parser.

use super::{metadata_text, parse_metadata, read_metadata, read_metadata_cut, MetadataError};
use crate::model::*;

/// Three lines: a trace block and two integer aliases.
const HDR: &str = "trace { major = 1; minor = 8; byte_order = le; };\n\
                   typealias integer { size = 8; } := u8;\n\
                   typealias integer { size = 8; signed = true; } := s8;\n";

fn parse(src: &str) -> Metadata {
    parse_metadata(src).unwrap_or_else(|e| panic!("{e}\n--- in ---\n{src}"))
}

fn parse_err(src: &str) -> MetadataError {
    match parse_metadata(src) {
        Ok(_) => panic!("expected an error for:\n{src}"),
        Err(e) => e,
    }
}

/// The payload of the first event of the first stream of `HDR` + `body`,
/// where `body` is the body of `fields := struct { ... }`.
fn payload(body: &str) -> StructClass {
    let src = format!("{HDR}event {{ name = e; fields := struct {{ {body} }}; }};\n");
    let md = parse(&src);
    match md.streams[0].events[0].payload.clone() {
        Some(FieldClass::Struct(s)) => s,
        other => panic!("payload is {other:?}"),
    }
}

/// Follows member names (through structs, variants, arrays and sequences).
fn member<'a>(s: &'a StructClass, path: &[&str]) -> &'a FieldClass {
    let mut fc = &s
        .members
        .iter()
        .find(|m| m.name == path[0])
        .unwrap_or_else(|| panic!("no member {}", path[0]))
        .class;
    for name in &path[1..] {
        loop {
            match fc {
                FieldClass::Array(a) => fc = &a.element,
                FieldClass::Sequence(q) => fc = &q.element,
                _ => break,
            }
        }
        fc = match fc {
            FieldClass::Struct(s) => &s.members.iter().find(|m| m.name == *name).unwrap().class,
            FieldClass::Variant(v) => &v.options.iter().find(|m| m.name == *name).unwrap().class,
            other => panic!("cannot find {name} in {other:?}"),
        };
    }
    fc
}

fn seq_ref(fc: &FieldClass) -> &FieldRef {
    match fc {
        FieldClass::Sequence(s) => &s.length,
        other => panic!("not a sequence: {other:?}"),
    }
}

fn tag_ref(fc: &FieldClass) -> &FieldRef {
    match fc {
        FieldClass::Variant(v) => &v.tag,
        other => panic!("not a variant: {other:?}"),
    }
}

fn fref(scope: Scope, path: &[u32]) -> FieldRef {
    FieldRef {
        scope,
        path: path.to_vec(),
    }
}

const PAYLOAD: Scope = Scope::EventPayload;

#[test]
fn relative_paths() {
    // (fields body, path to the sequence, expected reference path)
    let cases: &[(&str, &[&str], &[u32])] = &[
        ("u8 len; u8 a[len];", &["a"], &[0]),
        ("u8 x; u8 len; u8 a[len];", &["a"], &[1]),
        // Found in an enclosing struct.
        ("u8 len; struct { u8 y; u8 a[len]; } s;", &["s", "a"], &[0]),
        // The innermost declaration wins.
        (
            "u8 len; struct { u8 len; u8 a[len]; } s;",
            &["s", "a"],
            &[1, 0],
        ),
        // Dotted relative path into an earlier struct.
        ("struct { u8 y; u8 n; } s; u8 a[s.n];", &["a"], &[0, 1]),
        // From inside an array element: array elements are not path steps.
        (
            "u8 z; struct { u8 n; u8 a[n]; } arr[4];",
            &["arr", "a"],
            &[1, 0],
        ),
        // Through a variant option.
        (
            "enum : u8 { A, B } t; variant <t> { struct { u8 n; } A; u8 B; } v; u8 a[v.A.n];",
            &["a"],
            &[1, 0, 0],
        ),
        // A typedef resolves where it is written (CTF 1.8 lexical scoping):
        // `len` is the outer u8, not the later string.
        (
            "u8 len; typedef struct { u8 a[len]; } T; struct { string len; T x; } f;",
            &["f", "x", "a"],
            &[0],
        ),
        // Several declarators: the first one is visible to the second.
        ("u8 n, a[n];", &["a"], &[0]),
        // Length given by an enumeration with an unsigned container.
        ("enum : u8 { Z = 0 ... 9 } n; u8 a[n];", &["a"], &[0]),
    ];
    for (body, path, want) in cases {
        let s = payload(body);
        assert_eq!(seq_ref(member(&s, path)), &fref(PAYLOAD, want), "{body}");
    }
}

/// A relative path that is not in the lexical scope where it is written is
/// looked up where the type is used (babeltrace2's behaviour).
#[test]
fn relative_paths_resolved_where_used() {
    let src = format!(
        "{HDR}struct inner {{ u8 x[len]; }};\n\
         event {{ name = e;\n\
           variant hello <tag> {{ string A; u8 B; }};\n\
           fields := struct {{ u8 len; struct inner a; struct {{ u8 z; u8 len; struct inner b; }} c;\n\
             enum : u8 {{ A, B }} tag; variant hello v; }}; }};\n"
    );
    let md = parse(&src);
    let Some(FieldClass::Struct(s)) = &md.streams[0].events[0].payload else {
        panic!()
    };
    assert_eq!(seq_ref(member(s, &["a", "x"])), &fref(PAYLOAD, &[0]));
    assert_eq!(
        seq_ref(member(s, &["c", "b", "x"])),
        &fref(PAYLOAD, &[2, 1])
    );
    assert_eq!(tag_ref(member(s, &["v"])), &fref(PAYLOAD, &[3]));
    // Never resolved: reported even when the type is not used.
    let e = parse_err(&format!("{HDR}typedef u8 A[x];\n"));
    assert_eq!((e.line, e.column), (4, 14), "{e}");
    // Used where it cannot be resolved.
    let e = parse_err(&format!(
        "{HDR}struct inner {{ u8 x[len]; }};\n\
         event {{ name = e; fields := struct {{ struct inner a; u8 len; }}; }};\n"
    ));
    assert_eq!((e.line, e.column), (4, 21), "{e}");
    assert!(e.message.contains("no field 'len'"), "{e}");
    // Resolved where used, but not a valid length.
    let e = parse_err(&format!(
        "{HDR}struct inner {{ u8 x[len]; }};\n\
         event {{ name = e; fields := struct {{ string len; struct inner a; }}; }};\n"
    ));
    assert_eq!((e.line, e.column), (4, 21), "{e}");
    assert!(e.message.contains("found a string"), "{e}");
}

#[test]
fn named_struct_refs_follow_each_instance() {
    let src = format!(
        "{HDR}struct S {{ enum : u8 {{ a, b }} tag; variant <tag> {{ u8 a; s8 b; }} v; u8 q[4]; }};\n\
         event {{ name = e; fields := struct {{ u8 x; struct S one; struct S two; }}; }};\n"
    );
    let md = parse(&src);
    let Some(FieldClass::Struct(s)) = &md.streams[0].events[0].payload else {
        panic!()
    };
    assert_eq!(tag_ref(member(s, &["one", "v"])), &fref(PAYLOAD, &[1, 0]));
    assert_eq!(tag_ref(member(s, &["two", "v"])), &fref(PAYLOAD, &[2, 0]));
}

#[test]
fn variant_two_levels_lexical_tag() {
    let s = payload(
        "enum : u8 { s1, s2 } tag; \
         variant <tag> { struct { variant <tag> { u8 s1; u8 s2; } w; } s1; u8 s2; } v;",
    );
    assert_eq!(tag_ref(member(&s, &["v"])), &fref(PAYLOAD, &[0]));
    assert_eq!(tag_ref(member(&s, &["v", "s1", "w"])), &fref(PAYLOAD, &[0]));
}

#[test]
fn absolute_paths() {
    let src = format!(
        "{HDR}\
         typealias integer {{ size = 32; }} := u32;\n\
         stream {{\n\
           packet.context := struct {{ u32 n; u8 p[trace.packet.header.hn]; }};\n\
           event.header := struct {{ u8 id; u8 h[stream.packet.context.n]; }};\n\
           event.context := struct {{ u8 c; }};\n\
         }};\n\
         event {{ name = e; context := struct {{ u8 k; u8 x[stream.event.context.c]; }};\n\
           fields := struct {{ u8 a; u8 b[event.fields.a]; u8 d[event.context.k]; u8 f[stream.event.header.id]; }}; }};\n"
    )
    .replace(
        "byte_order = le; };",
        "byte_order = le; packet.header := struct { integer { size = 8; } hn; }; };",
    );
    let md = parse(&src);
    let st = &md.streams[0];
    let Some(FieldClass::Struct(pc)) = &st.packet_context else {
        panic!()
    };
    assert_eq!(
        seq_ref(member(pc, &["p"])),
        &fref(Scope::PacketHeader, &[0])
    );
    let Some(FieldClass::Struct(eh)) = &st.event_header else {
        panic!()
    };
    assert_eq!(
        seq_ref(member(eh, &["h"])),
        &fref(Scope::PacketContext, &[0])
    );
    let ev = &st.events[0];
    let Some(FieldClass::Struct(ctx)) = &ev.context else {
        panic!()
    };
    assert_eq!(
        seq_ref(member(ctx, &["x"])),
        &fref(Scope::EventCommonContext, &[0])
    );
    let Some(FieldClass::Struct(p)) = &ev.payload else {
        panic!()
    };
    assert_eq!(seq_ref(member(p, &["b"])), &fref(PAYLOAD, &[0]));
    assert_eq!(
        seq_ref(member(p, &["d"])),
        &fref(Scope::EventSpecificContext, &[0])
    );
    assert_eq!(seq_ref(member(p, &["f"])), &fref(Scope::EventHeader, &[0]));
}

/// Column of the first occurrence of `needle` in `body` once the body is
/// put in `event { name = e; fields := struct { BODY } };`.
fn body_col(body: &str, needle: &str) -> u32 {
    let prefix = "event { name = e; fields := struct { ";
    let at = body
        .find(needle)
        .unwrap_or_else(|| panic!("{needle} not in {body}"));
    (prefix.len() + at + 1) as u32
}

/// Errors in `event { ... fields := struct { BODY } }` on line 4: `(body,
/// text where the error is reported, part of the message)`.
fn check_body_errors(cases: &[(&str, &str, &str)]) {
    for (body, needle, msg) in cases {
        let src = format!("{HDR}event {{ name = e; fields := struct {{ {body} }}; }};\n");
        let e = parse_err(&src);
        assert_eq!(
            (e.line, e.column),
            (4, body_col(body, needle)),
            "{body}: {e}"
        );
        assert!(e.message.contains(msg), "{body}: {e}");
    }
}

#[test]
fn path_errors() {
    check_body_errors(&[
        // Declared after the sequence.
        ("u8 a[n]; u8 n;", "n]", "no field 'n'"),
        ("u8 a[nope];", "nope", "no field 'nope'"),
        ("s8 n; u8 a[n];", "n];", "unsigned"),
        ("string n; u8 a[n];", "n];", "found a string"),
        (
            "struct { u8 n; } s[2]; u8 a[s.n];",
            "s.n",
            "inside an array",
        ),
        (
            "u8 t; variant <t> { u8 a; } v;",
            "t>",
            "must be an enumeration",
        ),
        (
            "enum : u8 { X } t; variant <t> { u8 a; } v;",
            "t>",
            "no option",
        ),
        ("u8 a[event.fields.a];", "event", "not decoded before"),
        ("u8 a[event.fields.nope];", "event", "no field 'nope'"),
        ("u8 a[event.fields];", "event", "names a scope"),
        ("u8 a[stream.event.header.n];", "stream", "not defined"),
        ("u8 a[typedef];", "typedef", "keyword"),
        ("u8 a[-1];", "-1", "negative"),
        ("u8 a[];", "]", "missing array length"),
        ("u8 a[\"x\"];", "\"x", "expected an array length"),
    ]);
    // A later scope cannot be referred to.
    let e = parse_err(&format!(
        "{HDR}event {{ name = e;\n context := struct {{ u8 a[event.fields.n]; }};\n fields := struct {{ u8 n; }}; }};\n"
    ));
    assert_eq!((e.line, e.column), (5, 27), "{e}");
    assert!(e.message.contains("decoded after"), "{e}");
}

fn enum_of(fc: &FieldClass) -> &EnumClass {
    match fc {
        FieldClass::Enum(e) => e,
        other => panic!("not an enum: {other:?}"),
    }
}

fn maps(e: &EnumClass) -> Vec<(&str, Vec<(i128, i128)>)> {
    e.mappings
        .iter()
        .map(|m| (m.label.as_str(), m.ranges.clone()))
        .collect()
}

#[test]
fn enum_values() {
    type Want<'a> = &'a [(&'a str, &'a [(i128, i128)])];
    let cases: &[(&str, Want)] = &[
        (
            "enum : u8 { A, B, C }",
            &[("A", &[(0, 0)]), ("B", &[(1, 1)]), ("C", &[(2, 2)])],
        ),
        // Implicit values continue after the previous value or range.
        (
            "enum : u8 { A, B = 5, C, D = 10 ... 20, E, }",
            &[
                ("A", &[(0, 0)]),
                ("B", &[(5, 5)]),
                ("C", &[(6, 6)]),
                ("D", &[(10, 20)]),
                ("E", &[(21, 21)]),
            ],
        ),
        // Overlapping ranges are kept; a repeated label gets both ranges.
        (
            "enum : s8 { A = -5 ... 9, B = 7 ... 10, A = 100 }",
            &[("A", &[(-5, 9), (100, 100)]), ("B", &[(7, 10)])],
        ),
        // Quoted labels, keywords as labels, several labels for one value.
        (
            "enum : u8 { \"a b\" = 2, string = 2, _x }",
            &[("a b", &[(2, 2)]), ("string", &[(2, 2)]), ("_x", &[(3, 3)])],
        ),
        (
            "enum : s8 { A = -128, B = 127 }",
            &[("A", &[(-128, -128)]), ("B", &[(127, 127)])],
        ),
        (
            "enum : integer { size = 64; } { A = 0xFFFFFFFFFFFFFFFF }",
            &[("A", &[(u64::MAX as i128, u64::MAX as i128)])],
        ),
    ];
    for (decl, want) in cases {
        let s = payload(&format!("{decl} f;"));
        let got = maps(enum_of(member(&s, &["f"])));
        let want: Vec<(&str, Vec<(i128, i128)>)> =
            want.iter().map(|(l, r)| (*l, r.to_vec())).collect();
        assert_eq!(got, want, "{decl}");
    }
    // The implicit container is `int`.
    let s = payload("typealias integer { size = 16; signed = true; } := int; enum { A } f;");
    let e = enum_of(member(&s, &["f"]));
    assert_eq!((e.container.size, e.container.signed), (16, true));
}

#[test]
fn enum_errors() {
    check_body_errors(&[
        ("enum : u8 { A = 256 } f;", "256", "out of the range"),
        ("enum : u8 { A = -1 } f;", "-1", "out of the range"),
        ("enum : s8 { A = 128 } f;", "128", "out of the range"),
        ("enum : u8 { A = 255, B } f;", "B }", "implicit value 256"),
        ("enum : u8 { A = 5 ... 3 } f;", "5 ...", "lower bound"),
        ("enum : u8 { } f;", "} f", "expected an enumeration label"),
        ("enum { A } f;", "enum", "'int'"),
        (
            "typealias floating_point { exp_dig = 8; mant_dig = 24; } := fl; enum : fl { A } f;",
            "fl {",
            "must be an integer",
        ),
        ("enum : u8 { A = B } f;", "B }", "must be an integer"),
    ]);
}

fn int_of(fc: &FieldClass) -> &IntegerClass {
    match fc {
        FieldClass::Integer(i) => i,
        FieldClass::Enum(e) => &e.container,
        other => panic!("not an integer: {other:?}"),
    }
}

#[test]
fn native_byte_order_before_trace_block() {
    for (trace_bo, want) in [
        ("be", ByteOrder::Big),
        ("network", ByteOrder::Big),
        ("le", ByteOrder::Little),
    ] {
        let src = format!(
            "typealias integer {{ size = 32; byte_order = native; }} := n32;\n\
             typealias integer {{ size = 16; }} := d16;\n\
             typealias integer {{ size = 16; byte_order = le; }} := l16;\n\
             typealias integer {{ size = 16; byte_order = be; }} := b16;\n\
             typealias floating_point {{ exp_dig = 8; mant_dig = 24; }} := f32;\n\
             event {{ name = e; fields := struct {{ n32 a; d16 b; l16 c; b16 d; f32 f; }}; }};\n\
             trace {{ major = 1; minor = 8; byte_order = {trace_bo}; }};\n"
        );
        let md = parse(&src);
        assert_eq!(md.byte_order, want);
        let Some(FieldClass::Struct(s)) = &md.streams[0].events[0].payload else {
            panic!()
        };
        assert_eq!(int_of(member(s, &["a"])).byte_order, want);
        assert_eq!(int_of(member(s, &["b"])).byte_order, want);
        assert_eq!(int_of(member(s, &["c"])).byte_order, ByteOrder::Little);
        assert_eq!(int_of(member(s, &["d"])).byte_order, ByteOrder::Big);
        let FieldClass::Float(f) = member(s, &["f"]) else {
            panic!()
        };
        assert_eq!(f.byte_order, want);
    }
    let e = parse_err("trace { major = 1; minor = 8; byte_order = native; };");
    assert_eq!((e.line, e.column), (1, 44), "{e}");
}

/// Array dimensions as `(length or "seq")`, outermost first.
fn dims(mut fc: &FieldClass) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        match fc {
            FieldClass::Array(a) => {
                out.push(a.length.to_string());
                fc = &a.element;
            }
            FieldClass::Sequence(s) => {
                out.push("seq".into());
                fc = &s.element;
            }
            _ => return out,
        }
    }
}

#[test]
fn multi_dimensional_arrays() {
    let cases: &[(&str, &[&str])] = &[
        // C order, as babeltrace2 decodes it: 2 arrays of 3 elements.
        ("u8 x[2][3];", &["2", "3"]),
        ("typedef u8 A[2]; A x[3];", &["3", "2"]),
        (
            "typedef u8 A[10][1]; typedef A X[4][5]; X x;",
            &["4", "5", "10", "1"],
        ),
        ("u8 n; u8 x[n][2];", &["seq", "2"]),
        ("u8 n; u8 x[2][n];", &["2", "seq"]),
        ("u8 n; u8 x[n][n];", &["seq", "seq"]),
        // A huge length is just a number (nothing is allocated for it).
        ("u8 x[0xFFFFFFFFFFFFFFFF];", &["18446744073709551615"]),
    ];
    for (body, want) in cases {
        let s = payload(body);
        assert_eq!(dims(member(&s, &["x"])), want.to_vec(), "{body}");
    }
}

#[test]
fn integer_defaults_and_attributes() {
    let s = payload(
        "integer { size = 8; } a; integer { size = 3; } b; \
         integer { size = 16; align = 32; signed = true; base = hex; encoding = UTF8; } c; \
         integer { size = 1024; } d; integer { size = 8; base = o; } e; \
         integer { size = 8; base = 2; signed = 1; } f; integer { size = 8; base = p; } g;",
    );
    let a = int_of(member(&s, &["a"]));
    assert_eq!(
        (a.size, a.align, a.signed, a.base, a.encoding),
        (8, 8, false, 10, Encoding::None)
    );
    assert_eq!(int_of(member(&s, &["b"])).align, 1);
    let c = int_of(member(&s, &["c"]));
    assert_eq!(
        (c.size, c.align, c.signed, c.base, c.encoding),
        (16, 32, true, 16, Encoding::Utf8)
    );
    assert_eq!(int_of(member(&s, &["d"])).size, 1024);
    assert_eq!(int_of(member(&s, &["e"])).base, 8);
    let f = int_of(member(&s, &["f"]));
    assert_eq!((f.base, f.signed), (2, true));
    assert_eq!(int_of(member(&s, &["g"])).base, 16);
}

#[test]
fn syntax_errors_have_positions() {
    let cases: &[(&str, (u32, u32), &str)] = &[
        (
            "typealias integer { size = 8 } := x;",
            (1, 30),
            "expected ';' after integer attribute, found '}'",
        ),
        (
            "typealias integer { size = 8; ] := x;",
            (1, 31),
            "found ']'",
        ),
        ("trace { major = 1x; };", (1, 17), "integer literal"),
        ("trace { major = \"abc; };", (1, 17), "unterminated string"),
        ("/* abc", (1, 1), "unterminated comment"),
        (
            "trace { major = 1; minor = 8; byte_order = le; }",
            (1, 49),
            "expected ';'",
        ),
        (
            "trace {\n  x = 99999999999999999999;\n};",
            (2, 7),
            "out of range",
        ),
        ("trace { x = \"\\q\"; };", (1, 14), "invalid escape"),
        ("trace { x = 1; } ;\n@", (2, 1), "invalid character '@'"),
        (
            "typealias integer { size = 8; } := trace;",
            (1, 36),
            "expected a type name",
        ),
        (
            "typedef integer { size = 8; } int;",
            (1, 31),
            "keyword 'int'",
        ),
        (
            "struct s { integer { size = 8; } event; };",
            (1, 34),
            "keyword 'event'",
        ),
        ("struct s { x y; };", (1, 12), "type 'x' is not defined"),
    ];
    for (src, (line, col), msg) in cases {
        let e = parse_err(src);
        assert_eq!((e.line, e.column), (*line, *col), "{src}: {e}");
        assert!(e.message.contains(msg), "{src}: {e}");
    }
}

#[test]
fn declarations_and_scopes() {
    // Duplicates in the same scope are errors; shadowing is not.
    let e = parse_err(&format!("{HDR}typealias integer {{ size = 8; }} := u8;\n"));
    assert_eq!((e.line, e.column), (4, 36), "{e}");
    let e = parse_err(&format!(
        "{HDR}struct a {{ u8 x; }};\nstruct a {{ u8 y; }};\n"
    ));
    assert_eq!((e.line, e.column), (5, 8), "{e}");
    let e = parse_err(&format!("{HDR}struct a {{ u8 x; u8 x; }};\n"));
    assert_eq!((e.line, e.column), (4, 21), "{e}");
    let s = payload("typedef s8 u8; u8 x;");
    assert!(int_of(member(&s, &["x"])).signed);
    // A type declared inside a struct is not visible outside of it.
    let e = parse_err(&format!(
        "{HDR}struct a {{ typedef u8 inner; inner x; }};\nstruct b {{ inner y; }};\n"
    ));
    assert_eq!((e.line, e.column), (5, 12), "{e}");
    // C-like multi-word type names and pointers.
    let s = payload(
        "typealias integer { size = 64; } := unsigned long; \
         typealias integer { size = 32; } := void *; unsigned long a; void *b;",
    );
    assert_eq!(int_of(member(&s, &["a"])).size, 64);
    assert_eq!(int_of(member(&s, &["b"])).size, 32);
    // Struct alignment.
    let s = payload("struct { u8 a; } align(64) x; struct s2 { u8 b; } y; struct s2 z;");
    let FieldClass::Struct(x) = member(&s, &["x"]) else {
        panic!()
    };
    assert_eq!(x.min_align, 64);
    // Two struct definitions in one declaration (ctf-testsuite's
    // struct-inner-struct).
    parse(&format!(
        "{HDR}struct d1 {{ u8 a; }}\nstruct d2 {{ struct d1 b; }};\n"
    ));
}

#[test]
fn streams_and_events() {
    // No stream block: an implicit stream 0.
    let md = parse(&format!("{HDR}event {{ name = a; }};\n"));
    assert_eq!(md.streams.len(), 1);
    assert_eq!(md.streams[0].id, 0);
    assert_eq!(md.streams[0].events[0].id, 0);
    assert!(md.streams[0].event_header.is_none());
    let md = parse(HDR);
    assert_eq!((md.streams.len(), md.streams[0].events.len()), (1, 0));
    // Several events need an event header `id`.
    let md = parse(&format!(
        "{HDR}stream {{ event.header := struct {{ u8 id; }}; }};\n\
         event {{ name = a; }};\nevent {{ name = b; id = 1; }};\n"
    ));
    let ids: Vec<(u64, &str)> = md.streams[0]
        .events
        .iter()
        .map(|e| (e.id, e.name.as_str()))
        .collect();
    assert_eq!(ids, vec![(0, "a"), (1, "b")]);
    // A single stream without id has id 0; events default to it.
    let md = parse(&format!(
        "{HDR}stream {{ event.header := struct {{ u8 id; }}; }};\nevent {{ name = \"x y\"; id = 3; loglevel = -2; model.emf.uri = \"u\"; }};\n"
    ));
    assert_eq!(md.streams[0].id, 0);
    let ev = &md.streams[0].events[0];
    assert_eq!((ev.id, ev.name.as_str(), ev.loglevel), (3, "x y", Some(-2)));
    assert_eq!(ev.model_emf_uri.as_deref(), Some("u"));
    // Events before the stream block still belong to it.
    let md = parse(&format!(
        "{HDR}event {{ name = a; id = 1; }};\nstream {{ id = 7; }};\n"
    ));
    assert_eq!((md.streams[0].id, md.streams[0].events.len()), (7, 1));
    // Same event id in two streams is fine.
    let two = "trace { major = 1; minor = 8; byte_order = le; \
               packet.header := struct { integer { size = 8; } stream_id; }; };\n\
               stream { id = 0; };\nstream { id = 1; };\n";
    let md = parse(&format!(
        "{two}event {{ name = a; id = 5; stream_id = 0; }};\nevent {{ name = b; id = 5; stream_id = 1; }};\n"
    ));
    assert_eq!(md.streams[1].events[0].name, "b");
    // Errors.
    let cases: &[(&str, (u32, u32), &str)] = &[
        (
            "event { name = a; };\nevent { name = b; };",
            (5, 1),
            "no 'id'",
        ),
        (
            "event { name = a; id = 1; };\nevent { name = b; id = 1; };",
            (5, 1),
            "used twice",
        ),
        ("event { id = 1; };", (4, 1), "'name'"),
        (
            "event { name = a; id = 1; };\nevent { name = b; id = 2; };",
            (4, 1),
            "no 'id' field",
        ),
        (
            "stream { event.header := struct { s8 id; }; };",
            (4, 1),
            "unsigned",
        ),
        (
            "stream { packet.context := struct { string content_size; }; };",
            (4, 1),
            "integer",
        ),
        (
            "stream { id = 0; };\nstream { id = 1; };",
            (1, 1),
            "'stream_id'",
        ),
        (
            "stream { id = 0; };\nstream { id = 0; };",
            (5, 1),
            "defined twice",
        ),
        ("stream { id = 0; };\nstream { };", (5, 1), "'id'"),
        (
            "stream { id = 0; };\nstream { id = 1; };\nevent { name = a; };",
            (6, 1),
            "stream_id",
        ),
        (
            "stream { id = 0; };\nevent { name = a; stream_id = 2; };",
            (5, 31),
            "undefined stream 2",
        ),
        ("event { name = a; id = -1; };", (4, 24), "unsigned"),
        (
            "stream { packet.context := u8; };",
            (4, 28),
            "must be a structure",
        ),
        ("stream { packet.context = 3; };", (4, 10), "expects a type"),
    ];
    for (body, (line, col), msg) in cases {
        let e = parse_err(&format!("{HDR}{body}\n"));
        assert_eq!((e.line, e.column), (*line, *col), "{body}: {e}");
        assert!(e.message.contains(msg), "{body}: {e}");
    }
}

#[test]
fn trace_clock_env() {
    let md = parse(
        "/* CTF 1.8 */\n\
         trace { major = 1; minor = 8; uuid = \"2a6422d0-6cee-11e0-8c08-cb07d7b3a564\"; byte_order = be; unknown = x; };\n\
         clock { name = monotonic; uuid = \"00000000-0000-0000-0000-0000000000ff\"; description = \"d\";\n\
           freq = 1000; precision = 2; offset_s = -3; offset = 4; absolute = TRUE; };\n\
         clock { name = \"other\"; };\n\
         env { hostname = \"h\\x41\\101\\n\\0hidden\"; n = -5; big = 0xFFFFFFFFFFFFFFFF; domain = kernel; n = 6; };\n\
         typealias integer { size = 64; map = clock.monotonic.value; } := ts;\n\
         event { name = e; fields := struct { ts t; }; };\n",
    );
    assert_eq!(md.byte_order, ByteOrder::Big);
    assert_eq!((md.major, md.minor), (1, 8));
    assert_eq!(md.uuid.map(|u| u[0]), Some(0x2a));
    let c = md.clock("monotonic").unwrap();
    assert_eq!(c.uuid.map(|u| u[15]), Some(0xff));
    assert_eq!(
        (c.freq, c.precision, c.offset_s, c.offset, c.absolute),
        (1000, 2, -3, 4, true)
    );
    assert_eq!(c.description.as_deref(), Some("d"));
    let o = md.clock("other").unwrap();
    assert_eq!((o.freq, o.offset_s, o.absolute), (1_000_000_000, 0, false));
    assert_eq!(
        md.env,
        vec![
            ("hostname".into(), EnvValue::Str("hAA\n".into())),
            ("n".into(), EnvValue::Int(6)),
            ("big".into(), EnvValue::Int(-1)),
            ("domain".into(), EnvValue::Str("kernel".into())),
        ]
    );
    let Some(FieldClass::Struct(s)) = &md.streams[0].events[0].payload else {
        panic!()
    };
    assert_eq!(
        int_of(member(s, &["t"])).mapped_clock.as_deref(),
        Some("monotonic")
    );

    let cases: &[(&str, (u32, u32), &str)] = &[
        ("", (1, 1), "no trace block"),
        ("trace { major = 1; minor = 8; };", (1, 1), "byte_order"),
        ("trace { major = 2; minor = 0; byte_order = le; };", (1, 17), "version"),
        ("trace { minor = 8; byte_order = le; };", (1, 1), "'major'"),
        ("trace { major = 1; major = 1; minor = 8; byte_order = le; };", (1, 20), "duplicate"),
        ("trace { major = 1; minor = 8; byte_order = le; uuid = \"1234\"; };", (1, 55), "invalid UUID"),
        ("trace { major = 1; minor = 8; byte_order = le; };\ntrace { major = 1; minor = 8; byte_order = le; };", (2, 1), "more than one"),
        ("/* CTF 1.9 */ trace { major = 1; minor = 8; byte_order = le; };", (1, 8), "1.9"),
        ("trace { major = 1; minor = 8; byte_order = le; };\nclock { freq = 1; };", (2, 1), "'name'"),
        ("trace { major = 1; minor = 8; byte_order = le; };\nclock { name = c; freq = 0; };", (2, 26), "0"),
        ("trace { major = 1; minor = 8; byte_order = le; };\nclock { name = c; };\nclock { name = c; };", (3, 1), "twice"),
        (
            "trace { major = 1; minor = 8; byte_order = le; };\ntypealias integer { size = 64; map = clock.nope.value; } := t;",
            (2, 38),
            "'nope'",
        ),
    ];
    for (src, (line, col), msg) in cases {
        let e = parse_err(src);
        assert_eq!((e.line, e.column), (*line, *col), "{src}: {e}");
        assert!(e.message.contains(msg), "{src}: {e}");
    }
}

/// Packs `text` into metadata packets of at most `chunk` payload bytes,
/// with `pad` bytes of padding each.
fn packetize(text: &str, chunk: usize, pad: usize, le: bool, version: (u8, u8)) -> Vec<u8> {
    let mut out = Vec::new();
    for part in text.as_bytes().chunks(chunk) {
        let content = (37 + part.len()) as u32 * 8;
        let packet = content + pad as u32 * 8;
        let w = |v: u32| if le { v.to_le_bytes() } else { v.to_be_bytes() };
        out.extend_from_slice(&w(0x75D1_1D57));
        out.extend_from_slice(&[7u8; 16]);
        out.extend_from_slice(&w(0));
        out.extend_from_slice(&w(content));
        out.extend_from_slice(&w(packet));
        out.extend_from_slice(&[0, 0, 0, version.0, version.1]);
        out.extend_from_slice(part);
        out.extend(std::iter::repeat_n(0u8, pad));
    }
    out
}

#[test]
fn packetized_metadata() {
    for (le, bo) in [(true, "le"), (false, "be")] {
        let text = format!(
            "/* CTF 1.8 */\ntrace {{ major = 1; minor = 8; byte_order = {bo}; }};\nevent {{ name = x; }};\n"
        );
        let bytes = packetize(&text, 10, 3, le, (1, 8));
        assert_eq!(metadata_text(&bytes).unwrap(), text);
        parse(&metadata_text(&bytes).unwrap());
        // One packet in the other byte order.
        let mut mixed = packetize(&text[..20], 20, 0, le, (1, 8));
        mixed.extend(packetize(&text[20..], 100, 0, !le, (1, 8)));
        let e = metadata_text(&mixed).unwrap_err();
        assert!(e.message.contains("byte order"), "{e}");
        // The trace byte order must match the packets'.
        let other = if le { "be" } else { "le" };
        let wrong = text.replace(&format!("= {bo};"), &format!("= {other};"));
        let e = metadata_text(&packetize(&wrong, 50, 0, le, (1, 8))).unwrap_err();
        assert_eq!((e.line, e.column), (2, 44), "{e}");
        // Unsupported version.
        assert!(metadata_text(&packetize(&text, 50, 0, le, (1, 7))).is_err());
        // Truncated in the middle of a packet's content.
        let bytes = packetize(&text, 50, 0, le, (1, 8));
        for cut in [10, 36, 40, bytes.len() - 1] {
            assert!(metadata_text(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        // content_size larger than packet_size, smaller than the header,
        // not a multiple of 8.
        for (off, v) in [(24, 10_000u32), (24, 8), (24, 301), (28, 8)] {
            let mut b = bytes.clone();
            let w = if le { v.to_le_bytes() } else { v.to_be_bytes() };
            b[off..off + 4].copy_from_slice(&w);
            assert!(metadata_text(&b).is_err(), "field at {off} = {v}");
        }
    }
    // Plain text with a NUL character.
    let e = metadata_text(b"trace {\n  ma\0jor = 1; };").unwrap_err();
    assert_eq!((e.line, e.column), (2, 5), "{e}");
}

#[test]
fn nesting_and_size_limits() {
    // Deeply nested structures: an error, not a stack overflow.
    let n = 100_000;
    let src = format!(
        "{HDR}struct s {{ {} u8 x; {} }};\n",
        "struct {".repeat(n),
        "} y;".repeat(n)
    );
    let e = parse_err(&src);
    assert!(e.message.contains("nested too deeply"), "{e}");
    // Deeply nested parentheses.
    let src = format!("trace {{ major = {}1{}; }};", "(".repeat(n), ")".repeat(n));
    assert!(parse_err(&src).message.contains("nested too deeply"));
    // Deep types built through type aliases.
    let mut src = format!("{HDR}typedef u8 t0;\n");
    for i in 1..400 {
        src.push_str(&format!("typedef struct {{ t{} a; }} t{i};\n", i - 1));
    }
    assert!(parse_err(&src).message.contains("nested too deeply"));
    let mut src = format!("{HDR}typedef u8 t0;\n");
    for i in 1..400 {
        src.push_str(&format!("typedef t{} t{i}[1];\n", i - 1));
    }
    assert!(parse_err(&src).message.contains("nested too deeply"));
    // Exponential expansion through aliases: bounded.
    let mut src = format!("{HDR}typedef u8 t0;\n");
    for i in 1..60 {
        src.push_str(&format!(
            "typedef struct {{ t{0} a; t{0} b; }} t{i};\n",
            i - 1
        ));
    }
    src.push_str("event { name = e; fields := struct { t59 x; }; };\n");
    let e = parse_err(&src);
    assert!(e.message.contains("field classes"), "{e}");
}

/// Mutated variants of a valid metadata never make the parser panic.
#[test]
fn mutations_do_not_panic() {
    let base = format!(
        "/* CTF 1.8 */\n{HDR}\
         typealias integer {{ size = 32; align = 8; base = hex; }} := u32;\n\
         clock {{ name = c; freq = 1000; offset = -1; }};\n\
         env {{ a = \"b\\x41\"; c = 4; }};\n\
         stream {{ id = 0; event.header := struct {{ enum : u8 {{ A, B = 3 ... 4 }} id; variant <id> {{ u8 A; u32 B; }} v; }};\n\
           packet.context := struct {{ u32 content_size; }}; }};\n\
         event {{ name = \"e\"; id = 0; fields := struct {{ u8 n; string s[n][2]; struct {{ u8 m; u8 q[m]; }} align(16) st; \
         u8 r[stream.packet.context.content_size]; }}; }};\n"
    );
    parse(&base);
    let bytes = base.as_bytes();
    let mut seed: u64 = 0x1234_5678_9abc_def0;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let alphabet = b"{}[]();:=<>.,*+-\"'\\/ \n0123456789abxXuUL_";
    for _ in 0..3000 {
        let mut m = bytes.to_vec();
        for _ in 0..(next() % 4 + 1) {
            let pos = (next() as usize) % m.len();
            match next() % 3 {
                0 => m[pos] = alphabet[(next() as usize) % alphabet.len()],
                1 => {
                    m.remove(pos);
                }
                _ => {
                    let len = (next() as usize % 30).min(m.len() - pos);
                    let chunk: Vec<u8> = m[pos..pos + len].to_vec();
                    let at = (next() as usize) % m.len();
                    m.splice(at..at, chunk);
                }
            }
        }
        if let Ok(text) = metadata_text(&m) {
            let _ = parse_metadata(&text);
        }
    }
}

/// Metadata cut inside a declaration (a trace copied while recording, a
/// full disk): read with the declarations before the cut when the error is
/// the text's end, and only then.
#[test]
fn metadata_cut_inside_a_declaration() {
    let whole = format!(
        "/* CTF 1.8 */\n{HDR}stream {{ event.header := struct {{ u8 id; }}; }};\n\
         event {{ name = \"first\"; id = 0; fields := struct {{ u8 a; }}; }};\n\
         /* the second event */\n\
         event {{ name = \"second\"; id = 1; fields := struct {{ u8 b; s8 c; }}; }};\n"
    );
    let second = whole.find("/* the second").unwrap();
    let decl = whole.find("event { name = \"second").unwrap();
    let names = |md: &Metadata| -> Vec<String> {
        md.streams[0]
            .events
            .iter()
            .map(|e| e.name.clone())
            .collect()
    };
    // Whole: no cut.
    let (md, cut) = read_metadata_cut(whole.as_bytes()).unwrap();
    assert_eq!((names(&md).len(), cut), (2, None));
    // Inside the second event: in its name (a string), after `fields`, in
    // a member's type name, before its final `;`.
    for needle in ["\"seco", "fields :", "s8", "}; }", "}; };"] {
        let at = decl + whole[decl..].find(needle).unwrap() + needle.len() - 1;
        let text = &whole[..at];
        assert!(read_metadata(text.as_bytes()).is_err(), "cut at {at}");
        let (md, cut) = read_metadata_cut(text.as_bytes())
            .unwrap_or_else(|e| panic!("cut at {at} ({needle}): {e}"));
        assert_eq!(names(&md), ["first"], "cut at {at}");
        let cut = cut.unwrap();
        assert_eq!(cut.offset, second as u64, "cut at {at}: {}", cut.msg);
        assert!(
            cut.msg
                .starts_with("the metadata ends inside a declaration ("),
            "{}",
            cut.msg
        );
        assert!(
            cut.msg
                .contains("read with the declarations before it (lines 1 to 6)"),
            "{}",
            cut.msg
        );
    }
    // Inside the comment before it: an unterminated comment.
    let (md, cut) = read_metadata_cut(&whole.as_bytes()[..second + 6]).unwrap();
    assert_eq!(names(&md), ["first"]);
    assert!(cut.unwrap().msg.contains("unterminated comment"));
    // Between two declarations: a valid metadata, nothing to report.
    let (md, cut) = read_metadata_cut(&whole.as_bytes()[..second]).unwrap();
    assert_eq!((names(&md), cut), (vec!["first".to_string()], None));
    // Inside the trace block: nothing before it makes a trace, the
    // error is the parser's.
    let at = whole.find("minor").unwrap();
    let e = read_metadata_cut(&whole.as_bytes()[..at]).unwrap_err();
    assert!(e.message.contains("found end of metadata"), "{e}");
    // A syntax error that is not the end of the text stays an error, even
    // in the last declaration.
    let bad = whole.replace("s8 c;", "s8 c c;");
    assert!(read_metadata_cut(bad.as_bytes()).is_err());
    let bad_then_cut = whole.replace("u8 a;", "u8 ] a;");
    let at = bad_then_cut.find("s8 c").unwrap();
    assert!(read_metadata_cut(&bad_then_cut.as_bytes()[..at]).is_err());
    // Packetized metadata cut inside a packet's content, then inside a
    // packet's header.
    for le in [true, false] {
        let text = whole.replace(
            "byte_order = le",
            if le {
                "byte_order = le"
            } else {
                "byte_order = be"
            },
        );
        let bytes = packetize(&text, 64, 5, le, (1, 8));
        let in_second = text.find("s8 c").unwrap();
        // Packet k holds text[64k..64(k+1)], at byte k * (37 + 64 + 5).
        let k = in_second / 64;
        let file_at = k * 106 + 37 + in_second % 64;
        let (md, cut) = read_metadata_cut(&bytes[..file_at]).unwrap();
        assert_eq!(names(&md), ["first"]);
        let cut = cut.unwrap();
        let size = 37 + (text.len() - 64 * k).min(64) + 5;
        assert!(
            cut.msg.starts_with(&format!(
                "the file ends inside metadata packet {k} ({} bytes of its {size} present); the metadata ends inside a declaration",
                file_at - k * 106
            )),
            "{}",
            cut.msg
        );
        let decl_at = text.find("/* the second").unwrap();
        assert_eq!(cut.offset as usize, decl_at / 64 * 106 + 37 + decl_at % 64);
        // The file ends inside the header of the packet after the one
        // that ends the first event's declaration: the text before it.
        let first_end = text.find("/* the second").unwrap();
        let k = first_end.div_ceil(64);
        if first_end % 64 == 0 {
            continue;
        }
        let (md, cut) = read_metadata_cut(&bytes[..k * 106 + 20]).unwrap();
        assert_eq!(names(&md), ["first"]);
        assert!(cut
            .unwrap()
            .msg
            .contains(&format!("metadata packet {k} (20 bytes present)")));
    }
}

/// Integer types written the same way again are parsed once
/// (`Parser::integer_type`): each use still gets its own type, the
/// positions of what follows stay right, and clock mappings (not
/// memoized) are recorded at each use.
#[test]
fn repeated_integer_types() {
    let int = "integer { size = 32; align = 8;\n signed = 1; base = 16; }";
    let body = format!("{int} a; {int} b;\n{int} c; integer {{ size = 32; align = 8;\n signed = 1; base = 10; }} d;");
    let s = payload(&body);
    for (name, base) in [("a", 16), ("b", 16), ("c", 16), ("d", 10)] {
        let i = int_of(member(&s, &[name]));
        assert_eq!(
            (i.size, i.align, i.signed, i.base),
            (32, 8, true, base),
            "{name}"
        );
    }
    // An error after three uses of the same text is placed as before.
    let src = format!(
        "{HDR}event {{ name = e; fields := struct {{ {int} a;\n{int} b; {int} c; u8 ! ; }}; }};\n"
    );
    let e = parse_err(&src);
    let (n, line) = src.lines().enumerate().find(|l| l.1.contains('!')).unwrap();
    let col = line.find('!').unwrap() as u32 + 1;
    assert!(n > 4);
    assert_eq!((e.line, e.column), (n as u32 + 1, col), "{e}");
    // The same text with a comment or a string between the braces is read
    // token by token (and gives the same type).
    let s = payload(&format!(
        "{int} a; integer {{ size = 32; /* }} */ align = 8;\n signed = 1; base = 16; }} b;"
    ));
    assert_eq!(int_of(member(&s, &["a"])), int_of(member(&s, &["b"])));
    // Clock mappings are not memoized: both uses map the clock.
    let mapped = "integer { size = 64; map = clock.c.value; }";
    let src = format!(
        "{HDR}clock {{ name = c; }};\nevent {{ name = e; fields := struct {{ {mapped} a; {mapped} b; }}; }};\n"
    );
    let s = {
        let md = parse(&src);
        match md.streams[0].events[0].payload.clone() {
            Some(FieldClass::Struct(s)) => s,
            other => panic!("payload is {other:?}"),
        }
    };
    for name in ["a", "b"] {
        assert_eq!(
            int_of(member(&s, &[name])).mapped_clock.as_deref(),
            Some("c")
        );
    }
}

/// A structure's text parsed once stands for the same text elsewhere only
/// where it cannot read otherwise: not in a block that declares its own
/// types, not after a new type name, and with every field in place.
#[test]
fn same_structure_text_same_structure_only_where_it_reads_the_same() {
    let ev = |name: &str, id: u32, pre: &str| {
        format!(
            "event {{ name = {name}; id = {id}; {pre} fields := struct {{ u8 x; u8 y[x]; }}; }};\n"
        )
    };
    let src = [
        HDR.to_string(),
        "stream { event.header := struct { u8 id; }; };\n".into(),
        ev("a", 0, ""),
        // A type of its own: u8 is 16 bits here.
        ev("b", 1, "typealias integer { size = 16; } := u8;"),
        ev("c", 2, ""),
        // A new global name: the same text still reads the same.
        "typealias integer { size = 32; } := u32;\n".into(),
        ev("d", 3, ""),
    ]
    .concat();
    let md = parse(&src);
    let sizes: Vec<(String, u32, u32)> = md.streams[0]
        .events
        .iter()
        .map(|e| {
            let Some(FieldClass::Struct(s)) = &e.payload else {
                panic!("payload of {} is {:?}", e.name, e.payload)
            };
            let elem = match member(s, &["y"]) {
                FieldClass::Sequence(q) => int_of(&q.element).size,
                other => panic!("y is {other:?}"),
            };
            (e.name.clone(), int_of(member(s, &["x"])).size, elem)
        })
        .collect();
    assert_eq!(
        sizes,
        [("a", 8, 8), ("b", 16, 16), ("c", 8, 8), ("d", 8, 8)].map(|(n, x, y)| (
            n.to_string(),
            x,
            y
        ))
    );
}
