//! libreef writes the metadata of a program without a schema from its own
//! copy of the generator's prelude (`tracer/src/builtin_tsdl.c`): it must
//! stay the generator's text, line for line.

/// The C string literals of `builtin_tsdl.c`, unescaped, one per line.
fn c_lines(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in src.lines() {
        let t = line.trim();
        let Some(body) = t.strip_prefix('"').and_then(|t| t.strip_suffix("\",")) else {
            continue;
        };
        let mut s = String::new();
        let mut it = body.chars();
        while let Some(c) = it.next() {
            if c == '\\' {
                match it.next() {
                    Some('t') => s.push('\t'),
                    Some('n') => s.push('\n'),
                    Some(o) => s.push(o),
                    None => {}
                }
            } else {
                s.push(c);
            }
        }
        out.push(s);
    }
    out
}

#[test]
fn builtin_prelude_is_the_generators() {
    let c = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tracer/src/builtin_tsdl.c"
    ))
    .unwrap();
    let lines = c_lines(&c);
    let schema = reef_gen::parse_schema("x.reef", "subsystem s { event E \"\"; };").unwrap();
    let template: String = reef_gen::metadata_template(&schema)
        .lines()
        .map(|l| {
            if l.starts_with("\tschema = ") {
                "\tschema = \"\";\n".to_string()
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    // From the first type alias to the stream declaration's end (the
    // first event's comment).
    let start = template.find("typealias integer").unwrap();
    let end = template[start..]
        .find("\n/*")
        .map_or(template.len(), |i| i + start);
    let want: Vec<&str> = template[start..end].trim_end().lines().collect();
    let got_start = lines
        .iter()
        .position(|l| l.starts_with("typealias integer"))
        .unwrap();
    let got: Vec<&str> = lines[got_start..].iter().map(|s| s.as_str()).collect();
    let got_trimmed: Vec<&str> = {
        let mut g = got.clone();
        while g.last() == Some(&"") {
            g.pop();
        }
        g
    };
    assert_eq!(got_trimmed, want);
}
