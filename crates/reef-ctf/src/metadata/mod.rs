//! TSDL (CTF 1.8 metadata) lexing, parsing and resolution into [`crate::model`].
//!
//! - `packetized`: unpacking of packetized metadata;
//! - `lexer`: tokens, lexed as the parser reads them (no token list: a
//!   kernel trace's metadata is 100 000 tokens);
//! - `parser`: declarations, type names and lexical scopes, evaluated while
//!   parsing into declared types (`types`);
//! - `resolve`: trace/stream/event/clock/env blocks and the instantiation
//!   of declared types in their dynamic scopes.
//!
//! Relative field paths (sequence lengths, variant tags) are resolved in
//! the lexical scope where they are written, as CTF 1.8 specifies: the
//! innermost enclosing structure that declares the first path element
//! *before* the referring field wins (so a `typedef` inside a structure
//! keeps referring to the field visible where it was written). A relative
//! path not found there is looked up where the type is used, walking the
//! enclosing structures outwards as babeltrace2 does; one that is never
//! resolved (even in an unused type) is an error. Absolute paths
//! (`trace.packet.header.x`, `stream.packet.context.x`,
//! `stream.event.header.x`, `stream.event.context.x`, `event.context.x`,
//! `event.fields.x`) are resolved when the type is used in a scope, and must
//! point at a field decoded before the referring one. A length must be an
//! unsigned integer (or an enumeration with an unsigned container), a tag an
//! enumeration of which at least one label names an option. In a
//! [`FieldRef`] path, array and sequence elements are not steps: a reference
//! from inside an array element designates a field of the element being
//! decoded.
//!
//! Limits: nesting (of the text and of types) is capped at 100 levels and
//! the whole model at a few million field classes, so that no input can
//! overflow the stack or expand exponentially through type aliases.
//!
//! [`FieldRef`]: crate::model::FieldRef

pub mod json;
mod lexer;
mod packetized;
mod parser;
mod resolve;
mod types;
pub mod write;

use std::borrow::Cow;

use crate::model::{ByteOrder, Metadata};

/// A metadata error: where (1-based line and column in the TSDL text; 0:0
/// when it concerns the packetized container) and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{column}: {message}")]
pub struct MetadataError {
    pub line: u32,
    pub column: u32,
    pub message: String,
}

/// Returns the TSDL text of a metadata file, unpacking packetized metadata
/// (magic 0x75D11D57, either byte order) when needed; CTF 2 metadata (a
/// JSON text sequence, see [`json`]) is returned as it is.
pub fn metadata_text(bytes: &[u8]) -> Result<String, MetadataError> {
    if json::is_ctf2(bytes) {
        return Ok(String::from_utf8_lossy(bytes).into_owned());
    }
    let (text, packet_le) = unpack_text(bytes)?;
    if let Some(le) = packet_le {
        check_packet_byte_order(&text, parser::trace_byte_order(&text), le)?;
    }
    Ok(text)
}

/// Reads the metadata file `bytes`: `parse_metadata(&metadata_text(bytes)?)`
/// (same result, same errors), the trace block's byte order being looked
/// for once and the text lexed once (as the parser reads it).
pub fn read_metadata(bytes: &[u8]) -> Result<Metadata, MetadataError> {
    if json::is_ctf2(bytes) {
        return json::read(bytes);
    }
    let (text, packet_le) = unpack_text(bytes)?;
    let bo = parser::trace_byte_order(&text);
    if let Some(le) = packet_le {
        check_packet_byte_order(&text, bo, le)?;
    }
    parse(&text, bo)
}

/// Where a metadata file is cut, as [`read_metadata_cut`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataCut {
    /// Byte offset in the file of the declaration the cut falls in (of
    /// the cut packet, for packetized metadata whose text before the cut
    /// ends on a whole declaration).
    pub offset: u64,
    /// What is missing and what was read.
    pub msg: String,
}

/// [`read_metadata`] for a metadata file that may be cut (a trace copied
/// while being recorded, a full disk, a crash): when its text ends inside
/// a declaration and the error is that end (the parser or the lexer ran
/// out of text), the declarations before it are read instead, if they
/// make a valid trace class on their own; packetized metadata may end
/// inside a packet. Any other error is [`read_metadata`]'s.
pub fn read_metadata_cut(bytes: &[u8]) -> Result<(Metadata, Option<MetadataCut>), MetadataError> {
    if json::is_ctf2(bytes) {
        // CTF 2 metadata (JSON fragments): read whole or not at all.
        return Ok((json::read(bytes)?, None));
    }
    let packet_le = packetized::detect(bytes);
    let (raw, starts, pcut) = match packet_le {
        Some(le) => {
            let u = packetized::unpack_cut(bytes, le, true)?;
            (Cow::Owned(u.text), u.starts, u.cut)
        }
        None => (Cow::Borrowed(bytes), vec![(0, 0)], None),
    };
    let text = text_of(raw)?;
    let bo = parser::trace_byte_order(&text);
    if let Some(le) = packet_le {
        check_packet_byte_order(&text, bo, le)?;
    }
    let packet_msg = pcut.map(|c| {
        let size = c.size.map_or(String::new(), |n| format!(" of its {n}"));
        (
            c.offset as u64,
            format!(
                "the file ends inside metadata packet {} ({} bytes{size} present)",
                c.index, c.present
            ),
        )
    });
    let e = match parse(&text, bo) {
        Ok(meta) => {
            let cut = packet_msg.map(|(offset, m)| MetadataCut {
                offset,
                msg: format!(
                    "{m}; the text before the cut ends on a whole declaration and was read"
                ),
            });
            return Ok((meta, cut));
        }
        Err(e) => e,
    };
    // The error as it is, naming the packet the file ends inside.
    let fail = |mut e: MetadataError| {
        if let Some((_, m)) = &packet_msg {
            e.message = format!("{} ({m})", e.message);
        }
        e
    };
    let Some(tail) = cut_tail(&text, &e) else {
        return Err(fail(e));
    };
    let prefix = &text[..tail];
    let Ok(meta) = parse(prefix, parser::trace_byte_order(prefix)) else {
        return Err(fail(e));
    };
    // The declaration's offset in the file.
    let first = tail + (text.len() - tail - text[tail..].trim_start().len());
    let offset = starts
        .iter()
        .rev()
        .find(|&&(t, _)| t <= first)
        .map_or(first, |&(t, f)| f + (first - t)) as u64;
    let lines = prefix.lines().count();
    let mut msg = format!(
        "the metadata ends inside a declaration ({} at line {}, column {}): read with the declarations before it (lines 1 to {lines})",
        e.message, e.line, e.column
    );
    if let Some((_, m)) = packet_msg {
        msg = format!("{m}; {msg}");
    }
    Ok((meta, Some(MetadataCut { offset, msg })))
}

/// When `e`, the error parsing `text`, comes from `text` ending inside a
/// top-level declaration: the byte offset where that declaration starts
/// (after the `;` of the last whole one). The parser or the lexer must
/// have failed on the text's end: at or after its last token, or on an
/// unterminated literal or comment, or on its last line.
fn cut_tail(text: &str, e: &MetadataError) -> Option<usize> {
    use lexer::{Tok, P};
    let mut depth = 0i64;
    let mut last_semi: Option<(u32, u32)> = None;
    let mut last: Option<(u32, u32)> = None;
    // Tokens after the last top-level ';'.
    let mut tail = false;
    for t in lexer::tokens(text) {
        let at = (t.line, t.col);
        last = Some(at);
        match t.tok {
            Tok::Punct(P::LBrace | P::LParen | P::LBracket) => depth += 1,
            Tok::Punct(P::RBrace | P::RParen | P::RBracket) => depth -= 1,
            Tok::Punct(P::Semi) if depth == 0 => {
                last_semi = Some(at);
                tail = false;
                continue;
            }
            _ => {}
        }
        tail = true;
    }
    let lexes = lexer::lexes(text);
    if !tail && lexes {
        // The text ends after a whole declaration: no sign of a cut.
        return None;
    }
    let byte_of = |(line, col): (u32, u32)| -> usize {
        let start = match line {
            0 | 1 => 0,
            l => text
                .match_indices('\n')
                .nth(l as usize - 2)
                .map_or(text.len(), |(i, _)| i + 1),
        };
        text[start..]
            .char_indices()
            .nth(col.saturating_sub(1) as usize)
            .map_or(text.len(), |(i, _)| start + i)
    };
    let at_end = if lexes {
        last.is_some_and(|l| (e.line, e.column) >= l)
    } else {
        // The lexical error (it wins over any parse error).
        e.message.starts_with("unterminated")
            || !text[byte_of((e.line, e.column))..]
                .trim_end()
                .contains('\n')
    };
    if !at_end {
        return None;
    }
    Some(last_semi.map_or(0, |at| byte_of(at) + 1))
}

/// The TSDL text of a metadata file and, for packetized metadata, whether
/// its packets are little-endian.
fn unpack_text(bytes: &[u8]) -> Result<(String, Option<bool>), MetadataError> {
    let packet_le = packetized::detect(bytes);
    let raw = match packet_le {
        Some(le) => Cow::Owned(packetized::unpack(bytes, le)?),
        None => Cow::Borrowed(bytes),
    };
    Ok((text_of(raw)?.into_owned(), packet_le))
}

/// Metadata bytes as text: no NUL allowed, invalid UTF-8 replaced.
fn text_of(raw: Cow<'_, [u8]>) -> Result<Cow<'_, str>, MetadataError> {
    if let Some(p) = memchr::memchr(0, &raw) {
        let before = &raw[..p];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let column = String::from_utf8_lossy(&before[line_start..])
            .chars()
            .count()
            + 1;
        return Err(MetadataError {
            line: u32::try_from(line).unwrap_or(u32::MAX),
            column: u32::try_from(column).unwrap_or(u32::MAX),
            message: "metadata contains a NUL character".into(),
        });
    }
    Ok(match raw {
        Cow::Borrowed(b) => String::from_utf8_lossy(b),
        Cow::Owned(v) => Cow::Owned(match String::from_utf8(v) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        }),
    })
}

/// Packetized metadata is written in the trace's byte order: checks that
/// the byte order of the trace block of `text`, `bo` (see
/// [`parser::trace_byte_order`]), is the packets' one. A text that does not
/// tokenize is not checked here (its parse fails).
fn check_packet_byte_order(
    text: &str,
    bo: Option<(ByteOrder, u32, u32)>,
    le: bool,
) -> Result<(), MetadataError> {
    if let Some((bo, line, column)) = bo {
        if (bo == ByteOrder::Little) != le && lexer::lexes(text) {
            let (t, p) = if le {
                ("big", "little")
            } else {
                ("little", "big")
            };
            return Err(MetadataError {
                line,
                column,
                message: format!(
                    "trace byte order is {t}-endian but the metadata packets are {p}-endian"
                ),
            });
        }
    }
    Ok(())
}

/// Checks the version in a `/* CTF x.y` header comment, when present.
fn check_header_version(text: &str) -> Result<(), MetadataError> {
    let Some(rest) = text.strip_prefix("/* CTF ") else {
        return Ok(());
    };
    let digits = |s: &str| -> usize { s.bytes().take_while(u8::is_ascii_digit).count() };
    let nmaj = digits(rest);
    if nmaj == 0 || rest.as_bytes().get(nmaj) != Some(&b'.') {
        return Ok(());
    }
    let after = &rest[nmaj + 1..];
    let nmin = digits(after);
    if nmin == 0 {
        return Ok(());
    }
    let major = rest[..nmaj].parse::<u64>().ok();
    let minor = after[..nmin].parse::<u64>().ok();
    if major != Some(1) || minor != Some(8) {
        return Err(MetadataError {
            line: 1,
            column: 8,
            message: format!(
                "unsupported CTF version {}.{} in metadata header (expected 1.8)",
                &rest[..nmaj],
                &after[..nmin]
            ),
        });
    }
    Ok(())
}

/// Parses TSDL text into a resolved, validated [`Metadata`].
pub fn parse_metadata(text: &str) -> Result<Metadata, MetadataError> {
    parse(text, parser::trace_byte_order(text))
}

/// [`parse_metadata`], `bo` being the trace block's byte order
/// ([`parser::trace_byte_order`]).
fn parse(text: &str, bo: Option<(ByteOrder, u32, u32)>) -> Result<Metadata, MetadataError> {
    check_header_version(text)?;
    let mut p = parser::Parser::new(text, bo.map_or(ByteOrder::Little, |b| b.0));
    let parsed = p.parse_file();
    p.toks.finish(parsed)?;
    let eof = p.here();
    let meta = resolve::build(&p.blocks, &p.clock_maps, &p.deferred.borrow(), eof)?;
    if let Some(e) = p.out_of_range.into_iter().next() {
        let lttng = matches!(
            meta.env_get("tracer_name"),
            Some(crate::model::EnvValue::Str(t)) if t.starts_with("lttng")
        );
        if !lttng {
            return Err(e);
        }
    }
    Ok(meta)
}

#[cfg(test)]
mod tests;
