//! Recursive-descent TSDL parser. Type declarations are evaluated while
//! parsing (C-like type names decide how the following tokens parse), so
//! the parser keeps the lexical scopes of type names and the struct bodies
//! being declared; relative field paths are resolved right where they are
//! written. Top-level blocks are returned as attribute lists for
//! `resolve.rs`.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::rc::Rc;

use rustc_hash::FxHashMap as HashMap;

use super::lexer::{self, Kw, Tok, Token, TokenStream, P};
use super::types::*;
use super::MetadataError;
use crate::model::{
    ByteOrder, Encoding, EnumClass, EnumMapping, FloatClass, IntegerClass, StringClass,
};

/// A literal value on the right of `=`.
#[derive(Debug, Clone)]
pub(crate) enum Value<'a> {
    Int(i128),
    Str(Cow<'a, str>),
    /// An identifier, keyword or dotted path (`le`, `clock.monotonic.value`),
    /// its elements joined with dots.
    Path(Cow<'a, str>),
}

impl Value<'_> {
    pub(crate) fn describe(&self) -> String {
        match self {
            Value::Int(v) => format!("integer {v}"),
            Value::Str(s) => format!(
                "string \"{}\"",
                super::lexer::shorten(&s.escape_debug().to_string())
            ),
            Value::Path(p) => format!("'{}'", super::lexer::shorten(p)),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) enum AttrValue<'a> {
    Val(Value<'a>),
    Type(Ty),
}

#[derive(Debug, Clone)]
pub(crate) struct Attr<'a> {
    /// The attribute's (dotted) name.
    pub name: Cow<'a, str>,
    pub line: u32,
    pub col: u32,
    pub value: AttrValue<'a>,
    pub vline: u32,
    pub vcol: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockKind {
    Trace,
    Stream,
    Event,
    Env,
    Clock,
    Callsite,
}

impl BlockKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            BlockKind::Trace => "trace",
            BlockKind::Stream => "stream",
            BlockKind::Event => "event",
            BlockKind::Env => "env",
            BlockKind::Clock => "clock",
            BlockKind::Callsite => "callsite",
        }
    }
}

#[derive(Debug)]
pub(crate) struct Block<'a> {
    pub kind: BlockKind,
    pub line: u32,
    pub col: u32,
    pub attrs: Vec<Attr<'a>>,
}

#[derive(Default)]
struct TypeScope {
    aliases: HashMap<String, Ty>,
    structs: HashMap<String, Rc<StructTy>>,
    variants: HashMap<String, Rc<VariantTy>>,
    enums: HashMap<String, Rc<EnumClass>>,
}

impl TypeScope {
    fn is_empty(&self) -> bool {
        self.aliases.is_empty()
            && self.structs.is_empty()
            && self.variants.is_empty()
            && self.enums.is_empty()
    }
}

/// A struct or variant body being declared.
struct Frame {
    anchor: u32,
    is_variant: bool,
    members: Vec<(String, Ty)>,
}

/// The type specifiers of a declaration.
struct Specs<'a> {
    words: Vec<&'a str>,
    /// The last specifier, when it is a C type keyword (`int`, `long`...),
    /// and its position.
    last_kw: Option<(Kw, u32, u32)>,
    has_ident_word: bool,
    /// The first compound type (`integer {...}`, `struct ...`), and
    /// whether there are more (an error; kept out of a vector: nearly
    /// every field declaration has one).
    compound: Option<Ty>,
    more_compounds: bool,
    line: u32,
    col: u32,
}

impl Specs<'_> {
    fn add_compound(&mut self, t: Ty) {
        if self.compound.is_some() {
            self.more_compounds = true;
        } else {
            self.compound = Some(t);
        }
    }

    fn is_empty(&self) -> bool {
        self.words.is_empty() && self.compound.is_none()
    }
}

enum DimLen<'a> {
    Fixed(u64),
    Path(Cow<'a, str>),
}

struct Dim<'a> {
    len: DimLen<'a>,
    line: u32,
    col: u32,
}

struct Declarator<'a> {
    pointers: u32,
    name: Option<(&'a str, u32, u32)>,
    dims: Vec<Dim<'a>>,
}

pub(crate) struct Parser<'a> {
    pub(crate) toks: TokenStream<'a>,
    scopes: Vec<TypeScope>,
    frames: Vec<Frame>,
    next_anchor: u32,
    depth: u32,
    trace_bo: ByteOrder,
    pub(crate) blocks: Vec<Block<'a>>,
    /// `map = clock.NAME.value` attributes seen: name and position.
    pub(crate) clock_maps: Vec<(String, u32, u32)>,
    /// Relative paths not found where they are written (see
    /// [`RefKind::Deferred`]): id, position and first path element.
    pub(crate) deferred: std::cell::RefCell<Vec<(u32, u32, u32, String)>>,
    /// Enumeration values outside their container's range. CTF forbids
    /// them, but LTTng writes some (`"MINUS_ONE" = -1` in unsigned
    /// containers, ranges past 255 in 8-bit ones) and babeltrace2 reads
    /// those traces; `parse_metadata` excuses them for LTTng tracers only.
    pub(crate) out_of_range: Vec<MetadataError>,
    /// Integer types by the plain text of their attributes
    /// ([`TokenStream::plain_block`]).
    int_memo: HashMap<&'a str, IntegerClass>,
    /// Anonymous structures by the text of their body
    /// ([`TokenStream::brace_block`]), for [`Parser::struct_type`].
    struct_memo: HashMap<&'a str, Rc<StructTy>>,
}

type R<T> = Result<T, MetadataError>;

fn is_decl_end(t: &Tok) -> bool {
    matches!(
        t,
        Tok::Punct(P::Semi | P::Comma | P::LBracket | P::Colon | P::RParen | P::TypeAssign)
    )
}

impl<'a> Parser<'a> {
    /// A parser of `text`, whose `native` byte order is `trace_bo` (see
    /// [`trace_byte_order`]).
    pub(crate) fn new(text: &'a str, trace_bo: ByteOrder) -> Parser<'a> {
        Parser {
            toks: TokenStream::new(text),
            scopes: vec![TypeScope::default()],
            frames: Vec::new(),
            next_anchor: 0,
            depth: 0,
            trace_bo,
            blocks: Vec::new(),
            clock_maps: Vec::new(),
            deferred: Default::default(),
            out_of_range: Vec::new(),
            int_memo: HashMap::default(),
            struct_memo: HashMap::default(),
        }
    }

    // ---- token helpers -------------------------------------------------

    fn tok(&self) -> &Tok<'a> {
        &self.toks.cur().tok
    }

    pub(crate) fn here(&self) -> (u32, u32) {
        let t = self.toks.cur();
        (t.line, t.col)
    }

    fn bump(&mut self) {
        self.toks.bump();
    }

    fn err_at(&self, line: u32, col: u32, msg: impl Into<String>) -> MetadataError {
        MetadataError {
            line,
            column: col,
            message: msg.into(),
        }
    }

    fn err_here(&self, msg: impl Into<String>) -> MetadataError {
        let (l, c) = self.here();
        self.err_at(l, c, msg)
    }

    fn expected(&self, what: &str) -> MetadataError {
        self.err_here(format!("expected {what}, found {}", self.tok().describe()))
    }

    fn is_p(&self, p: P) -> bool {
        matches!(*self.tok(), Tok::Punct(q) if q == p)
    }

    fn eat_p(&mut self, p: P) -> bool {
        if self.is_p(p) {
            self.bump();
            true
        } else {
            false
        }
    }

    /// Eats `p`, or fails with "expected 'p' ctx" (`ctx` is only formatted
    /// on failure).
    fn expect_p(&mut self, p: P, ctx: impl std::fmt::Display) -> R<()> {
        if self.eat_p(p) {
            Ok(())
        } else {
            Err(self.expected(&format!("'{}' {ctx}", p.as_str())))
        }
    }

    fn enter(&mut self) -> R<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err_here(format!(
                "metadata nested too deeply (more than {MAX_DEPTH} levels)"
            )));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    fn check_depth(&self, depth: u32, line: u32, col: u32) -> R<()> {
        if depth > MAX_DEPTH {
            return Err(self.err_at(
                line,
                col,
                format!("type nested too deeply (more than {MAX_DEPTH} levels)"),
            ));
        }
        Ok(())
    }

    // ---- type name scopes ----------------------------------------------

    fn lookup_alias(&self, key: &str) -> Option<&Ty> {
        self.scopes.iter().rev().find_map(|s| s.aliases.get(key))
    }

    fn cur_scope(&mut self) -> &mut TypeScope {
        if self.scopes.is_empty() {
            self.scopes.push(TypeScope::default());
        }
        let n = self.scopes.len() - 1;
        &mut self.scopes[n]
    }

    fn add_alias(&mut self, key: String, ty: Ty, line: u32, col: u32) -> R<()> {
        if self.cur_scope().aliases.contains_key(&key) {
            return Err(self.err_at(line, col, format!("type '{key}' is already defined")));
        }
        self.cur_scope().aliases.insert(key, ty);
        // A new type name may change how a structure's text reads.
        self.struct_memo.clear();
        Ok(())
    }

    // ---- top level -------------------------------------------------------

    pub(crate) fn parse_file(&mut self) -> R<()> {
        loop {
            match *self.tok() {
                Tok::Eof => return Ok(()),
                Tok::Kw(
                    k @ (Kw::Trace | Kw::Stream | Kw::Event | Kw::Env | Kw::Clock | Kw::Callsite),
                ) => {
                    let kind = match k {
                        Kw::Trace => BlockKind::Trace,
                        Kw::Stream => BlockKind::Stream,
                        Kw::Event => BlockKind::Event,
                        Kw::Env => BlockKind::Env,
                        Kw::Clock => BlockKind::Clock,
                        _ => BlockKind::Callsite,
                    };
                    let (line, col) = self.here();
                    self.bump();
                    self.expect_p(P::LBrace, format_args!("after '{}'", kind.name()))?;
                    let attrs = self.block_body(kind.name())?;
                    self.expect_p(P::Semi, format_args!("after the '{}' block", kind.name()))?;
                    self.blocks.push(Block {
                        kind,
                        line,
                        col,
                        attrs,
                    });
                }
                Tok::Kw(Kw::Typedef) => {
                    self.typedef()?;
                    self.expect_p(P::Semi, "after typedef")?;
                }
                Tok::Kw(Kw::Typealias) => {
                    self.typealias()?;
                    self.expect_p(P::Semi, "after typealias")?;
                }
                _ => {
                    let specs = self.specifiers()?;
                    if specs.is_empty() {
                        return Err(self.expected("a declaration"));
                    }
                    self.expect_p(P::Semi, "after type declaration")?;
                }
            }
        }
    }

    /// Parses the body of a `trace`/`stream`/... block, up to and including
    /// its closing brace.
    fn block_body(&mut self, what: &str) -> R<Vec<Attr<'a>>> {
        self.enter()?;
        self.scopes.push(TypeScope::default());
        let mut attrs = Vec::new();
        loop {
            match self.tok() {
                Tok::Punct(P::RBrace) => {
                    self.bump();
                    break;
                }
                Tok::Eof => return Err(self.expected(&format!("'}}' closing the '{what}' block"))),
                Tok::Kw(Kw::Typedef) => {
                    self.typedef()?;
                    self.expect_p(P::Semi, "after typedef")?;
                }
                Tok::Kw(Kw::Typealias) => {
                    self.typealias()?;
                    self.expect_p(P::Semi, "after typealias")?;
                }
                Tok::Kw(Kw::Struct | Kw::Variant | Kw::Enum) => {
                    // A named type declaration.
                    self.specifiers()?;
                    self.expect_p(P::Semi, "after type declaration")?;
                }
                _ => {
                    let (line, col) = self.here();
                    let name = self.dotted_path()?.ok_or_else(|| {
                        self.expected(&format!("an attribute name in '{what}' block"))
                    })?;
                    let (vline, vcol);
                    let value = if self.eat_p(P::Eq) {
                        (vline, vcol) = self.here();
                        AttrValue::Val(self.value()?)
                    } else if self.eat_p(P::TypeAssign) {
                        (vline, vcol) = self.here();
                        let specs = self.specifiers()?;
                        if specs.is_empty() {
                            return Err(self.expected("a type after ':='"));
                        }
                        AttrValue::Type(self.specs_type(&specs, 0)?)
                    } else {
                        return Err(self.expected(&format!("'=' or ':=' after '{name}'")));
                    };
                    self.expect_p(P::Semi, format_args!("after '{name}' attribute"))?;
                    attrs.push(Attr {
                        name,
                        line,
                        col,
                        value,
                        vline,
                        vcol,
                    });
                }
            }
        }
        self.scopes.pop();
        self.leave();
        Ok(attrs)
    }

    /// The current token as a name (an identifier or a keyword).
    fn name_tok(&self) -> Option<&'a str> {
        match *self.tok() {
            Tok::Ident(s) => Some(s),
            Tok::Kw(k) => Some(k.as_str()),
            _ => None,
        }
    }

    /// `a.b.c` made of identifiers and keywords, joined with dots (borrowed
    /// when it is a single name); `None` if the current token cannot start
    /// one.
    fn dotted_path(&mut self) -> R<Option<Cow<'a, str>>> {
        let Some(first) = self.name_tok() else {
            return Ok(None);
        };
        self.bump();
        let mut out = Cow::Borrowed(first);
        while self.is_p(P::Dot) {
            self.bump();
            let Some(next) = self.name_tok() else {
                return Err(self.expected("a name after '.'"));
            };
            let joined = out.to_mut();
            joined.push('.');
            joined.push_str(next);
            self.bump();
        }
        Ok(Some(out))
    }

    /// A unary expression: an integer (optionally signed), a string or
    /// character literal, or a dotted name.
    fn value(&mut self) -> R<Value<'a>> {
        match self.tok().clone() {
            Tok::Int(v) => {
                self.bump();
                Ok(Value::Int(v as i128))
            }
            Tok::Punct(sign @ (P::Plus | P::Minus)) => {
                self.bump();
                match self.tok().clone() {
                    Tok::Int(v) => {
                        self.bump();
                        let v = v as i128;
                        Ok(Value::Int(if sign == P::Minus { -v } else { v }))
                    }
                    _ => Err(self.expected(&format!("an integer after '{}'", sign.as_str()))),
                }
            }
            Tok::Str(s) => {
                self.bump();
                Ok(Value::Str(s))
            }
            Tok::Punct(P::LParen) => {
                self.enter()?;
                self.bump();
                let v = self.value()?;
                self.expect_p(P::RParen, "closing the parenthesized expression")?;
                self.leave();
                Ok(v)
            }
            Tok::Ident(_) | Tok::Kw(_) => Ok(Value::Path(self.dotted_path()?.unwrap_or_default())),
            _ => Err(self.expected("a value")),
        }
    }

    // ---- declarations ----------------------------------------------------

    fn typedef(&mut self) -> R<()> {
        self.bump(); // typedef
        let specs = self.specifiers()?;
        if specs.is_empty() {
            return Err(self.expected("a type after 'typedef'"));
        }
        loop {
            if let (Some((k, l, c)), Tok::Punct(P::Semi | P::Comma)) = (specs.last_kw, self.tok()) {
                if specs.words.len() > 1 || specs.compound.is_some() {
                    return Err(self.err_at(
                        l,
                        c,
                        format!("keyword '{}' cannot be used as a type name", k.as_str()),
                    ));
                }
            }
            let d = self.declarator(true)?;
            let Some((name, line, col)) = d.name else {
                return Err(self.expected("a type name"));
            };
            let base = self.specs_type(&specs, d.pointers)?;
            let ty = self.apply_dims(base, &d.dims)?;
            self.add_alias(name.to_string(), ty, line, col)?;
            if !self.eat_p(P::Comma) {
                return Ok(());
            }
        }
    }

    fn typealias(&mut self) -> R<()> {
        self.bump(); // typealias
        let specs = self.specifiers()?;
        if specs.is_empty() {
            return Err(self.expected("a type after 'typealias'"));
        }
        let d = self.declarator(false)?;
        let base = self.specs_type(&specs, d.pointers)?;
        let ty = self.apply_dims(base, &d.dims)?;
        self.expect_p(P::TypeAssign, "in typealias")?;
        let (line, col) = self.here();
        let mut words = Vec::new();
        loop {
            match self.tok() {
                Tok::Ident(s) => words.push(*s),
                Tok::Kw(k) if k.is_basic_type() => words.push(k.as_str()),
                Tok::Kw(Kw::Const) => {}
                _ => break,
            }
            self.bump();
        }
        if words.is_empty() {
            return Err(self.expected("a type name after ':='"));
        }
        let mut key = words.join(" ");
        while self.eat_p(P::Star) {
            key.push_str(" *");
            while self.eat_p_kw(Kw::Const) {}
        }
        self.add_alias(key, ty, line, col)
    }

    fn eat_p_kw(&mut self, k: Kw) -> bool {
        if matches!(*self.tok(), Tok::Kw(q) if q == k) {
            self.bump();
            true
        } else {
            false
        }
    }

    /// Type specifiers: C-like type words (`unsigned int`, type names) and
    /// at most one compound type (`integer {...}`, `struct ...`, ...).
    fn specifiers(&mut self) -> R<Specs<'a>> {
        let (line, col) = self.here();
        let mut specs = Specs {
            words: Vec::new(),
            last_kw: None,
            has_ident_word: false,
            compound: None,
            more_compounds: false,
            line,
            col,
        };
        loop {
            match *self.tok() {
                Tok::Kw(Kw::Const) => self.bump(),
                Tok::Kw(k) if k.is_basic_type() => {
                    specs.words.push(k.as_str());
                    let (l, c) = self.here();
                    self.bump();
                    specs.last_kw = Some((k, l, c));
                    continue;
                }
                Tok::Kw(Kw::Integer) => {
                    let t = self.integer_type()?;
                    specs.add_compound(t);
                }
                Tok::Kw(Kw::FloatingPoint) => {
                    let t = self.float_type()?;
                    specs.add_compound(t);
                }
                Tok::Kw(Kw::String) => {
                    let t = self.string_type()?;
                    specs.add_compound(t);
                }
                Tok::Kw(Kw::Struct) => {
                    let t = self.struct_type()?;
                    specs.add_compound(t);
                }
                Tok::Kw(Kw::Variant) => {
                    let t = self.variant_type()?;
                    specs.add_compound(t);
                }
                Tok::Kw(Kw::Enum) => {
                    let t = self.enum_type()?;
                    specs.add_compound(t);
                }
                Tok::Ident(name) => {
                    let take = !specs.has_ident_word
                        && specs.compound.is_none()
                        && self.lookup_alias(name).is_some()
                        && (specs.words.is_empty() || !is_decl_end(self.toks.ahead()));
                    if !take {
                        break;
                    }
                    specs.words.push(name);
                    specs.has_ident_word = true;
                    self.bump();
                }
                _ => break,
            }
            specs.last_kw = None;
        }
        Ok(specs)
    }

    /// The type denoted by `specs` (with `pointers` stars from the
    /// declarator).
    fn specs_type(&self, specs: &Specs, pointers: u32) -> R<Ty> {
        if specs.more_compounds {
            return Err(self.err_at(specs.line, specs.col, "more than one type in declaration"));
        }
        if let Some(t) = &specs.compound {
            if !specs.words.is_empty() {
                return Err(self.err_at(
                    specs.line,
                    specs.col,
                    format!(
                        "unexpected '{}' with a compound type",
                        specs.words.join(" ")
                    ),
                ));
            }
            if pointers > 0 {
                return Err(self.err_at(specs.line, specs.col, "pointer to a compound type"));
            }
            return Ok(t.clone());
        }
        let key = match (&specs.words[..], pointers) {
            (&[word], 0) => Cow::Borrowed(word),
            _ => {
                let mut key = specs.words.join(" ");
                for _ in 0..pointers {
                    key.push_str(" *");
                }
                Cow::Owned(key)
            }
        };
        self.lookup_alias(&key).cloned().ok_or_else(|| {
            self.err_at(
                specs.line,
                specs.col,
                format!("type '{key}' is not defined"),
            )
        })
    }

    /// A declarator: `*`s, a name (required when `named`; forbidden
    /// otherwise) and array/sequence dimensions.
    fn declarator(&mut self, named: bool) -> R<Declarator<'a>> {
        let mut pointers = 0u32;
        while self.eat_p(P::Star) {
            pointers = pointers.saturating_add(1);
            while self.eat_p_kw(Kw::Const) {}
        }
        let mut name = None;
        if named {
            let (l, c) = self.here();
            match *self.tok() {
                Tok::Ident(s) => {
                    self.bump();
                    name = Some((s, l, c));
                }
                Tok::Kw(k) => {
                    return Err(
                        self.err_here(format!("keyword '{}' cannot be used as a name", k.as_str()))
                    )
                }
                Tok::Punct(P::LParen) => {
                    return Err(self.err_here("parenthesized declarators are not supported"))
                }
                _ => return Err(self.expected("a name")),
            }
        }
        let mut dims = Vec::new();
        while self.is_p(P::LBracket) {
            self.bump();
            let (line, col) = self.here();
            let len = match self.tok().clone() {
                Tok::Int(v) => {
                    self.bump();
                    DimLen::Fixed(v)
                }
                Tok::Punct(P::Plus) => {
                    self.bump();
                    match self.tok().clone() {
                        Tok::Int(v) => {
                            self.bump();
                            DimLen::Fixed(v)
                        }
                        _ => return Err(self.expected("an array length")),
                    }
                }
                Tok::Punct(P::Minus) => {
                    return Err(self.err_here("array length cannot be negative"));
                }
                Tok::Ident(_) | Tok::Kw(_) => DimLen::Path(self.dotted_path()?.unwrap_or_default()),
                Tok::Punct(P::RBracket) => return Err(self.err_here("missing array length")),
                _ => return Err(self.expected("an array length or a length field name")),
            };
            self.expect_p(P::RBracket, "after array length")?;
            dims.push(Dim { len, line, col });
        }
        Ok(Declarator {
            pointers,
            name,
            dims,
        })
    }

    /// Wraps `base` in arrays/sequences, the first dimension outermost
    /// (`t x[2][3]` is 2 arrays of 3 `t`).
    fn apply_dims(&self, base: Ty, dims: &[Dim]) -> R<Ty> {
        let mut ty = base;
        for d in dims.iter().rev() {
            let len = match &d.len {
                DimLen::Fixed(n) => ArrLen::Fixed(*n),
                DimLen::Path(p) => {
                    let (r, target) = self.make_ref(p, d.line, d.col)?;
                    if let Some(target) = target {
                        check_length_target(&target)
                            .map_err(|m| self.err_at(d.line, d.col, format!("'{p}': {m}")))?;
                    }
                    ArrLen::Seq(r)
                }
            };
            let depth = ty.depth() + 1;
            self.check_depth(depth, d.line, d.col)?;
            ty = Ty::Array(Rc::new(ArrTy {
                elem: ty,
                len,
                depth,
            }));
        }
        Ok(ty)
    }

    /// Builds a reference from a path. Relative paths are resolved now in
    /// the lexical scope; the target type is returned so that the caller can
    /// check it. Absolute paths are resolved when instantiated.
    fn make_ref(&self, path: &str, line: u32, col: u32) -> R<(PathRef, Option<Ty>)> {
        let text = path.to_string();
        let p: Vec<&str> = if path.is_empty() {
            Vec::new()
        } else {
            path.split('.').collect()
        };
        for (prefix, scope) in ABSOLUTE_PREFIXES {
            if p.len() >= prefix.len() && p.iter().zip(prefix.iter()).all(|(a, b)| a == b) {
                let names: Vec<String> = p[prefix.len()..].iter().map(|n| n.to_string()).collect();
                if names.is_empty() {
                    return Err(self.err_at(
                        line,
                        col,
                        format!("'{text}' names a scope, not a field"),
                    ));
                }
                if let Some(kw) = names.iter().find(|n| super::lexer::keyword(n).is_some()) {
                    return Err(self.err_at(line, col, format!("'{kw}' is not a field name")));
                }
                let r = PathRef {
                    kind: RefKind::Absolute {
                        scope: *scope,
                        names,
                    },
                    text,
                    line,
                    col,
                };
                return Ok((r, None));
            }
        }
        if let Some(kw) = p.iter().find(|n| super::lexer::keyword(n).is_some()) {
            return Err(self.err_at(
                line,
                col,
                format!("keyword '{kw}' cannot be used as a field name in '{text}'"),
            ));
        }
        let Some(first) = p.first() else {
            return Err(self.err_at(line, col, "empty field path"));
        };
        for frame in self.frames.iter().rev() {
            if frame.is_variant {
                continue;
            }
            let Some(i) = frame.members.iter().position(|(n, _)| n == *first) else {
                continue;
            };
            let mut path = vec![i as u32];
            let mut ty = &frame.members[i].1;
            for name in &p[1..] {
                let found = match ty {
                    Ty::Struct(s) => s
                        .members
                        .iter()
                        .position(|(n, _)| n == *name)
                        .map(|j| (j, &s.members[j].1)),
                    Ty::Variant(v) => v
                        .options
                        .iter()
                        .position(|(n, _)| n == *name)
                        .map(|j| (j, &v.options[j].1)),
                    Ty::Array(_) => {
                        return Err(self.err_at(
                            line,
                            col,
                            format!(
                                "'{text}': cannot refer to a field inside an array or sequence"
                            ),
                        ))
                    }
                    _ => None,
                };
                let Some((j, t)) = found else {
                    return Err(self.err_at(
                        line,
                        col,
                        format!("'{text}': no field '{name}' in {}", ty.kind_name()),
                    ));
                };
                path.push(j as u32);
                ty = t;
            }
            let r = PathRef {
                kind: RefKind::Lexical {
                    anchor: frame.anchor,
                    path,
                },
                text,
                line,
                col,
            };
            return Ok((r, Some(ty.clone())));
        }
        // Not in the lexical scope: look it up where the type is used.
        let mut deferred = self.deferred.borrow_mut();
        let id = deferred.len() as u32;
        deferred.push((id, line, col, first.to_string()));
        let r = PathRef {
            kind: RefKind::Deferred {
                id,
                names: p.iter().map(|n| n.to_string()).collect(),
            },
            text,
            line,
            col,
        };
        Ok((r, None))
    }

    // ---- compound types ----------------------------------------------------

    /// `{ name = value; ... }` attribute lists of integer/floating
    /// point/string types.
    fn type_attrs(&mut self, what: &str) -> R<Vec<Attr<'a>>> {
        self.expect_p(P::LBrace, format_args!("after '{what}'"))?;
        self.enter()?;
        let mut attrs = Vec::new();
        while !self.eat_p(P::RBrace) {
            let (line, col) = self.here();
            let name = self
                .dotted_path()?
                .ok_or_else(|| self.expected(&format!("an attribute name or '}}' in {what}")))?;
            self.expect_p(P::Eq, format_args!("after '{name}' in {what}"))?;
            let (vline, vcol) = self.here();
            let v = self.value()?;
            if !self.is_p(P::Semi) {
                return Err(self.expected(&format!("';' after {what} attribute")));
            }
            self.bump();
            if attrs.iter().any(|a: &Attr| a.name == name) {
                return Err(self.err_at(
                    line,
                    col,
                    format!("duplicate attribute '{name}' in {what}"),
                ));
            }
            attrs.push(Attr {
                name,
                line,
                col,
                value: AttrValue::Val(v),
                vline,
                vcol,
            });
        }
        self.leave();
        Ok(attrs)
    }

    fn byte_order_value(&self, a: &Attr, v: &Value) -> R<ByteOrder> {
        match v {
            Value::Path(p) if !p.contains('.') => match &**p {
                "be" | "network" => Ok(ByteOrder::Big),
                "le" => Ok(ByteOrder::Little),
                "native" => Ok(self.trace_bo),
                _ => Err(self.err_at(
                    a.vline,
                    a.vcol,
                    format!("invalid byte_order '{p}' (expected be, le, network or native)"),
                )),
            },
            _ => Err(self.err_at(
                a.vline,
                a.vcol,
                format!(
                    "invalid byte_order {} (expected be, le, network or native)",
                    v.describe()
                ),
            )),
        }
    }

    fn align_value(&self, a: &Attr, v: &Value) -> R<u32> {
        match v {
            Value::Int(n) if *n > 0 && (*n as u128).is_power_of_two() && *n <= u32::MAX as i128 => {
                Ok(*n as u32)
            }
            _ => Err(self.err_at(
                a.vline,
                a.vcol,
                format!(
                    "invalid alignment {} (expected a positive power of two)",
                    v.describe()
                ),
            )),
        }
    }

    fn integer_type(&mut self) -> R<Ty> {
        let (line, col) = self.here();
        // Metadata repeats a few integer types many times (an LTTng kernel
        // trace: 1,482 of 22 kinds, 60 % of its text): the same plain text
        // between the braces is the same type, parsed once.
        // (a text in the memo was plain when it was added)
        if let Some((text, start)) = self.toks.block_text().filter(|_| self.depth < MAX_DEPTH) {
            if let Some(int) = self.int_memo.get(text) {
                let int = int.clone();
                self.toks.skip_plain_block(start, text.len());
                return Ok(Ty::Int(int));
            }
        }
        let plain = self.toks.plain_block().filter(|_| self.depth < MAX_DEPTH);
        self.bump(); // integer
        let attrs = self.type_attrs("integer")?;
        let int = self.integer_from_attrs(&attrs, line, col)?;
        // A clock mapping is recorded where it is written: not memoized.
        if let (Some((text, _)), None) = (plain, &int.mapped_clock) {
            self.int_memo.insert(text, int.clone());
        }
        Ok(Ty::Int(int))
    }

    fn integer_from_attrs(&mut self, attrs: &[Attr], line: u32, col: u32) -> R<IntegerClass> {
        let mut size = None;
        let mut align = None;
        let mut signed = false;
        let mut byte_order = self.trace_bo;
        let mut base = 10;
        let mut encoding = Encoding::None;
        let mut mapped_clock = None;
        if !attrs.iter().any(|a| a.name == "size") {
            return Err(self.err_at(line, col, "integer type has no 'size' attribute"));
        }
        for a in attrs {
            let AttrValue::Val(v) = &a.value else {
                continue;
            };
            let bad = |what: &str| {
                self.err_at(
                    a.vline,
                    a.vcol,
                    format!(
                        "invalid integer {} {} (expected {what})",
                        a.name,
                        v.describe()
                    ),
                )
            };
            match &*a.name {
                "size" => match v {
                    Value::Int(n) if *n > 0 && *n <= u32::MAX as i128 => size = Some(*n as u32),
                    _ => return Err(bad("a positive number of bits")),
                },
                "align" => align = Some(self.align_value(a, v)?),
                "signed" => {
                    signed = match v {
                        Value::Int(0) => false,
                        Value::Int(1) => true,
                        Value::Path(p) if !p.contains('.') => match &**p {
                            "true" | "TRUE" => true,
                            "false" | "FALSE" => false,
                            _ => return Err(bad("true or false")),
                        },
                        _ => return Err(bad("true or false")),
                    }
                }
                "byte_order" => byte_order = self.byte_order_value(a, v)?,
                "base" => {
                    base = match v {
                        Value::Int(n @ (2 | 8 | 10 | 16)) => *n as u32,
                        Value::Path(p) if !p.contains('.') => match &**p {
                            "decimal" | "dec" | "d" | "i" | "u" => 10,
                            "hexadecimal" | "hex" | "x" | "X" | "p" => 16,
                            "octal" | "oct" | "o" => 8,
                            "binary" | "b" => 2,
                            _ => return Err(bad("2, 8, 10, 16, decimal, hex, octal or binary")),
                        },
                        _ => return Err(bad("2, 8, 10, 16, decimal, hex, octal or binary")),
                    }
                }
                "encoding" => encoding = self.encoding_value(a, v)?,
                "map" => match v {
                    Value::Path(p) => {
                        let name = p
                            .strip_prefix("clock.")
                            .and_then(|r| r.strip_suffix(".value"))
                            .filter(|name| !name.contains('.'));
                        let Some(name) = name else {
                            return Err(bad("clock.NAME.value"));
                        };
                        mapped_clock = Some(name.to_string());
                        self.clock_maps.push((name.to_string(), a.vline, a.vcol));
                    }
                    _ => return Err(bad("clock.NAME.value")),
                },
                _ => {} // unknown attributes are ignored
            }
        }
        let Some(size) = size else {
            return Err(self.err_at(line, col, "integer type has no 'size' attribute"));
        };
        let align = align.unwrap_or(if size.is_multiple_of(8) { 8 } else { 1 });
        Ok(IntegerClass {
            size,
            align,
            signed,
            byte_order,
            base,
            encoding,
            mapped_clock,
            roles: Default::default(),
        })
    }

    fn encoding_value(&self, a: &Attr, v: &Value) -> R<Encoding> {
        if let Value::Path(p) = v {
            for (name, e) in [
                ("none", Encoding::None),
                ("utf8", Encoding::Utf8),
                ("ascii", Encoding::Ascii),
            ] {
                if p.eq_ignore_ascii_case(name) {
                    return Ok(e);
                }
            }
        }
        Err(self.err_at(
            a.vline,
            a.vcol,
            format!(
                "invalid encoding {} (expected none, UTF8 or ASCII)",
                v.describe()
            ),
        ))
    }

    fn float_type(&mut self) -> R<Ty> {
        let (line, col) = self.here();
        self.bump(); // floating_point
        let attrs = self.type_attrs("floating_point")?;
        let mut exp = None;
        let mut mant = None;
        let mut align = None;
        let mut byte_order = self.trace_bo;
        for a in &attrs {
            let AttrValue::Val(v) = &a.value else {
                continue;
            };
            match &*a.name {
                "exp_dig" | "mant_dig" => {
                    let n = match v {
                        Value::Int(n) if *n > 0 && *n <= u32::MAX as i128 => *n as u32,
                        _ => {
                            return Err(self.err_at(
                                a.vline,
                                a.vcol,
                                format!(
                                    "invalid {} {} (expected a positive integer)",
                                    a.name,
                                    v.describe()
                                ),
                            ))
                        }
                    };
                    if a.name == "exp_dig" {
                        exp = Some(n)
                    } else {
                        mant = Some(n)
                    }
                }
                "align" => align = Some(self.align_value(a, v)?),
                "byte_order" => byte_order = self.byte_order_value(a, v)?,
                _ => {}
            }
        }
        let (Some(exp_dig), Some(mant_dig)) = (exp, mant) else {
            return Err(self.err_at(
                line,
                col,
                "floating point type needs 'exp_dig' and 'mant_dig' attributes",
            ));
        };
        if !matches!((exp_dig, mant_dig), (8, 24) | (11, 53)) {
            return Err(self.err_at(
                line,
                col,
                format!(
                    "unsupported floating point type (exp_dig = {exp_dig}, mant_dig = {mant_dig}): only 32-bit (8, 24) and 64-bit (11, 53) are supported"
                ),
            ));
        }
        let size = exp_dig + mant_dig;
        Ok(Ty::Float(FloatClass {
            exp_dig,
            mant_dig,
            align: align.unwrap_or(if size.is_multiple_of(8) { 8 } else { 1 }),
            byte_order,
        }))
    }

    fn string_type(&mut self) -> R<Ty> {
        self.bump(); // string
        let mut encoding = Encoding::Utf8;
        if self.is_p(P::LBrace) {
            let attrs = self.type_attrs("string")?;
            for a in &attrs {
                if let (AttrValue::Val(v), "encoding") = (&a.value, &*a.name) {
                    encoding = self.encoding_value(a, v)?;
                }
            }
        }
        Ok(Ty::Str(StringClass { encoding }))
    }

    fn opt_name(&mut self) -> Option<(&'a str, u32, u32)> {
        let (l, c) = self.here();
        if let Tok::Ident(s) = *self.tok() {
            self.bump();
            Some((s, l, c))
        } else {
            None
        }
    }

    fn new_anchor(&mut self) -> u32 {
        self.next_anchor = self.next_anchor.wrapping_add(1);
        self.next_anchor
    }

    /// Parses `{ members }` of a struct or variant; returns the members.
    fn body(&mut self, is_variant: bool, anchor: u32) -> R<Vec<(String, Ty)>> {
        self.expect_p(P::LBrace, "")?;
        self.enter()?;
        self.scopes.push(TypeScope::default());
        self.frames.push(Frame {
            anchor,
            is_variant,
            members: Vec::new(),
        });
        let what = if is_variant { "variant" } else { "structure" };
        loop {
            match self.tok() {
                Tok::Punct(P::RBrace) => {
                    self.bump();
                    break;
                }
                Tok::Eof => return Err(self.expected(&format!("'}}' closing the {what}"))),
                Tok::Kw(Kw::Typedef) => {
                    self.typedef()?;
                    self.expect_p(P::Semi, "after typedef")?;
                }
                Tok::Kw(Kw::Typealias) => {
                    self.typealias()?;
                    self.expect_p(P::Semi, "after typealias")?;
                }
                _ => {
                    let specs = self.specifiers()?;
                    if specs.is_empty() {
                        let msg = match self.tok() {
                            Tok::Ident(s) => format!("type '{s}' is not defined"),
                            _ => format!(
                                "expected a field declaration or '}}' in {what}, found {}",
                                self.tok().describe()
                            ),
                        };
                        return Err(self.err_here(msg));
                    }
                    loop {
                        let d = self.declarator(true)?;
                        if self.is_p(P::Colon) {
                            return Err(self.err_here("bit-fields are not supported"));
                        }
                        let Some((name, line, col)) = d.name else {
                            return Err(self.expected("a field name"));
                        };
                        let base = self.specs_type(&specs, d.pointers)?;
                        let ty = self.apply_dims(base, &d.dims)?;
                        let Some(frame) = self.frames.last_mut() else {
                            return Err(MetadataError {
                                line,
                                column: col,
                                message: "internal error: no structure being declared".into(),
                            });
                        };
                        if frame.members.iter().any(|(n, _)| *n == name) {
                            let kind = if is_variant { "option" } else { "field" };
                            return Err(MetadataError {
                                line,
                                column: col,
                                message: format!("duplicate {kind} name '{name}' in {what}"),
                            });
                        }
                        frame.members.push((name.to_string(), ty));
                        if !self.eat_p(P::Comma) {
                            break;
                        }
                    }
                    self.expect_p(P::Semi, format_args!("after {what} field declaration"))?;
                }
            }
        }
        let frame = self.frames.pop();
        self.scopes.pop();
        self.leave();
        Ok(frame.map(|f| f.members).unwrap_or_default())
    }

    fn members_depth(&self, members: &[(String, Ty)], line: u32, col: u32) -> R<u32> {
        let d = members.iter().map(|(_, t)| t.depth()).max().unwrap_or(0) + 1;
        self.check_depth(d, line, col)?;
        Ok(d)
    }

    fn struct_type(&mut self) -> R<Ty> {
        let (line, col) = self.here();
        // An LTTng kernel trace declares the same fields for many event
        // classes (1,400 field structures of 511 kinds, half the text):
        // the same text of an anonymous structure's body, where it cannot
        // mean another thing (no enclosing structure, no type declared in
        // the blocks around it, no `align` after it), is the same
        // structure, parsed once.
        let memo = (self.frames.is_empty() && self.scopes.iter().skip(1).all(TypeScope::is_empty))
            .then(|| self.toks.brace_block())
            .flatten()
            .filter(|&(text, start)| !self.toks.word_after(start + text.len() + 1, "align"));
        if let Some((text, start)) = memo {
            if let Some(st) = self.struct_memo.get(text) {
                let st = st.clone();
                self.toks.skip_plain_block(start, text.len());
                return Ok(Ty::Struct(st));
            }
        }
        // What parsing the structure may record besides it: not memoized.
        let records = (
            self.clock_maps.len(),
            self.deferred.borrow().len(),
            self.out_of_range.len(),
        );
        self.bump(); // struct
        let name = self.opt_name();
        if !self.is_p(P::LBrace) {
            let Some((name, l, c)) = name else {
                return Err(self.expected("a structure name or '{' after 'struct'"));
            };
            let found = self.scopes.iter().rev().find_map(|s| s.structs.get(name));
            return match found {
                Some(s) => Ok(Ty::Struct(s.clone())),
                None => Err(self.err_at(l, c, format!("structure '{name}' is not defined"))),
            };
        }
        let anchor = self.new_anchor();
        let members = self.body(false, anchor)?;
        let mut min_align = 1;
        if self.eat_p_kw(Kw::Align) {
            self.expect_p(P::LParen, "after 'align'")?;
            let (vline, vcol) = self.here();
            let v = self.value()?;
            let a = Attr {
                name: "align".into(),
                line: vline,
                col: vcol,
                value: AttrValue::Val(v.clone()),
                vline,
                vcol,
            };
            min_align = self.align_value(&a, &v)?;
            self.expect_p(P::RParen, "after structure alignment")?;
        }
        let depth = self.members_depth(&members, line, col)?;
        let st = Rc::new(StructTy {
            anchor,
            min_align,
            members,
            depth,
        });
        let recorded = (
            self.clock_maps.len(),
            self.deferred.borrow().len(),
            self.out_of_range.len(),
        ) != records;
        if let (Some((text, _)), None, false) = (memo, name, recorded) {
            self.struct_memo.insert(text, st.clone());
        }
        if let Some((name, l, c)) = name {
            if self.cur_scope().structs.contains_key(name) {
                return Err(self.err_at(l, c, format!("structure '{name}' is already defined")));
            }
            self.cur_scope()
                .structs
                .insert(name.to_string(), st.clone());
            self.struct_memo.clear();
        }
        Ok(Ty::Struct(st))
    }

    fn variant_type(&mut self) -> R<Ty> {
        let (line, col) = self.here();
        self.bump(); // variant
        let name = self.opt_name();
        let mut tag = None;
        if self.eat_p(P::Lt) {
            let (tl, tc) = self.here();
            let path = match self.tok() {
                Tok::Ident(_) | Tok::Kw(Kw::Trace | Kw::Stream | Kw::Event) => {
                    self.dotted_path()?.unwrap_or_default()
                }
                _ => return Err(self.expected("a variant tag field name")),
            };
            self.expect_p(P::Gt, "after variant tag")?;
            tag = Some((path, tl, tc));
        }
        let resolve_tag = |p: &Parser,
                           tag: &Option<(Cow<'a, str>, u32, u32)>,
                           options: &[(String, Ty)]|
         -> R<Option<PathRef>> {
            let Some((path, tl, tc)) = tag else {
                return Ok(None);
            };
            let (r, target) = p.make_ref(path, *tl, *tc)?;
            if let Some(t) = target {
                check_tag_target(&t, options)
                    .map_err(|m| p.err_at(*tl, *tc, format!("'{path}': {m}")))?;
            }
            Ok(Some(r))
        };
        if !self.is_p(P::LBrace) {
            let Some((name, l, c)) = name else {
                return Err(self.expected("a variant name or '{' after 'variant'"));
            };
            let Some(v) = self
                .scopes
                .iter()
                .rev()
                .find_map(|s| s.variants.get(name))
                .cloned()
            else {
                return Err(self.err_at(l, c, format!("variant '{name}' is not defined")));
            };
            if tag.is_none() {
                return Ok(Ty::Variant(v));
            }
            if v.tag.is_some() {
                return Err(self.err_at(l, c, format!("variant '{name}' already has a tag")));
            }
            let r = resolve_tag(self, &tag, &v.options)?;
            return Ok(Ty::Variant(Rc::new(VariantTy {
                tag: r,
                options: v.options.clone(),
                depth: v.depth,
            })));
        }
        // The tag is looked up where it is written, before the body.
        let early = match &tag {
            Some((path, tl, tc)) => Some(self.make_ref(path, *tl, *tc)?),
            None => None,
        };
        let anchor = self.new_anchor();
        let options = self.body(true, anchor)?;
        let r = match (early, &tag) {
            (Some((r, target)), Some((path, tl, tc))) => {
                if let Some(t) = target {
                    check_tag_target(&t, &options)
                        .map_err(|m| self.err_at(*tl, *tc, format!("'{path}': {m}")))?;
                }
                Some(r)
            }
            _ => None,
        };
        let depth = self.members_depth(&options, line, col)?;
        let vt = Rc::new(VariantTy {
            tag: r,
            options,
            depth,
        });
        if let Some((name, l, c)) = name {
            if self.cur_scope().variants.contains_key(name) {
                return Err(self.err_at(l, c, format!("variant '{name}' is already defined")));
            }
            self.cur_scope()
                .variants
                .insert(name.to_string(), vt.clone());
            self.struct_memo.clear();
        }
        Ok(Ty::Variant(vt))
    }

    fn enum_type(&mut self) -> R<Ty> {
        let (line, col) = self.here();
        self.bump(); // enum
        let name = self.opt_name();
        let mut container = None;
        if self.eat_p(P::Colon) {
            let specs = self.specifiers()?;
            if specs.is_empty() {
                return Err(self.expected("an integer type after ':'"));
            }
            let t = self.specs_type(&specs, 0)?;
            match t {
                Ty::Int(i) => container = Some(i),
                other => {
                    return Err(self.err_at(
                        specs.line,
                        specs.col,
                        format!(
                            "enumeration container must be an integer, found {}",
                            other.kind_name()
                        ),
                    ))
                }
            }
        }
        if !self.is_p(P::LBrace) {
            let Some((name, l, c)) = name else {
                return Err(self.expected("an enumeration name or '{' after 'enum'"));
            };
            if container.is_some() {
                return Err(self.expected("'{' after enumeration container type"));
            }
            let found = self.scopes.iter().rev().find_map(|s| s.enums.get(name));
            return match found {
                Some(e) => Ok(Ty::Enum(e.clone())),
                None => Err(self.err_at(l, c, format!("enumeration '{name}' is not defined"))),
            };
        }
        let container = match container {
            Some(c) => c,
            None => match self.lookup_alias("int") {
                Some(Ty::Int(i)) => i.clone(),
                Some(other) => {
                    return Err(self.err_at(
                        line,
                        col,
                        format!(
                            "enumeration without container type uses 'int', which is {}, not an integer",
                            other.kind_name()
                        ),
                    ))
                }
                None => {
                    return Err(self.err_at(
                        line,
                        col,
                        "enumeration without container type needs type 'int', which is not defined",
                    ))
                }
            },
        };
        let (min, max) = int_range(&container);
        self.bump(); // {
        self.enter()?;
        let mut mappings: Vec<EnumMapping> = Vec::new();
        let mut next: i128 = 0;
        loop {
            let (ll, lc) = self.here();
            let label = match self.tok() {
                Tok::Ident(s) => s.to_string(),
                Tok::Str(s) => s.to_string(),
                Tok::Kw(k) => k.as_str().to_string(),
                Tok::Punct(P::RBrace) if !mappings.is_empty() => {
                    self.bump();
                    break;
                }
                _ => return Err(self.expected("an enumeration label")),
            };
            self.bump();
            let (lo, hi) = if self.eat_p(P::Eq) {
                let (vl, vc) = self.here();
                let lo = match self.value()? {
                    Value::Int(v) => v,
                    v => {
                        return Err(self.err_at(
                            vl,
                            vc,
                            format!(
                                "enumeration value must be an integer, found {}",
                                v.describe()
                            ),
                        ))
                    }
                };
                let hi = if self.eat_p(P::Ellipsis) {
                    let (vl2, vc2) = self.here();
                    match self.value()? {
                        Value::Int(v) => v,
                        v => {
                            return Err(self.err_at(
                                vl2,
                                vc2,
                                format!(
                                    "enumeration value must be an integer, found {}",
                                    v.describe()
                                ),
                            ))
                        }
                    }
                } else {
                    lo
                };
                if lo > hi {
                    return Err(self.err_at(
                        vl,
                        vc,
                        format!("enumeration range {lo} ... {hi} has its lower bound above its upper bound"),
                    ));
                }
                for v in [lo, hi] {
                    if v < min || v > max {
                        // Deferred: LTTng writes such values (see
                        // `Parser::out_of_range`).
                        self.out_of_range.push(self.err_at(
                            vl,
                            vc,
                            format!(
                                "enumeration value {v} is out of the range of its {}-bit {} container [{min}, {max}]",
                                container.size,
                                if container.signed { "signed" } else { "unsigned" }
                            ),
                        ));
                        break;
                    }
                }
                (lo, hi)
            } else {
                if next > max || next < min {
                    return Err(self.err_at(
                        ll,
                        lc,
                        format!(
                            "implicit value {next} of enumeration label '{label}' is out of the range of its container [{min}, {max}]"
                        ),
                    ));
                }
                (next, next)
            };
            next = hi + 1;
            match mappings.iter_mut().find(|m| m.label == label) {
                Some(m) => m.ranges.push((lo, hi)),
                None => mappings.push(EnumMapping {
                    label,
                    ranges: vec![(lo, hi)],
                }),
            }
            if self.eat_p(P::Comma) {
                continue;
            }
            self.expect_p(P::RBrace, "or ',' after enumeration label")?;
            break;
        }
        self.leave();
        let ec = Rc::new(EnumClass {
            container,
            mappings,
        });
        if let Some((name, l, c)) = name {
            if self.cur_scope().enums.contains_key(name) {
                return Err(self.err_at(l, c, format!("enumeration '{name}' is already defined")));
            }
            self.cur_scope().enums.insert(name.to_string(), ec.clone());
            self.struct_memo.clear();
        }
        Ok(Ty::Enum(ec))
    }
}

/// The range of values of an integer type, clamped to what literals can
/// express.
pub(crate) fn int_range(i: &IntegerClass) -> (i128, i128) {
    let bits = i.size.min(100);
    if i.signed {
        let half = 1i128 << (bits - 1);
        (-half, half - 1)
    } else {
        (0, ((1i128 << bits) - 1).min(u64::MAX as i128))
    }
}

/// The `byte_order` (`be`, `le` or `network`) given directly in the
/// `trace` block of `text`, and the position of its value, found before
/// parsing so that `native` byte orders can be resolved before the trace
/// block is parsed. Tokens after a lexical error are not looked at.
pub(crate) fn trace_byte_order(text: &str) -> Option<(ByteOrder, u32, u32)> {
    let mut toks = lexer::tokens(text);
    // The token being looked at, then the next ones.
    let mut w: VecDeque<Token> = toks.by_ref().take(3).collect();
    // The brace depth inside a `trace` block; `None` outside.
    let mut depth: Option<usize> = None;
    while let Some(t) = w.pop_front() {
        w.extend(toks.next());
        match (depth, &t.tok) {
            (None, Tok::Kw(Kw::Trace))
                if w.front().is_some_and(|n| n.tok == Tok::Punct(P::LBrace)) =>
            {
                depth = Some(0);
            }
            (None, _) => {}
            (Some(d), Tok::Punct(P::LBrace)) => depth = Some(d + 1),
            (Some(d), Tok::Punct(P::RBrace)) => {
                depth = Some(d.saturating_sub(1)).filter(|&d| d != 0);
            }
            (Some(1), Tok::Ident("byte_order")) => {
                if let (Some(Tok::Punct(P::Eq)), Some(v)) = (w.front().map(|t| &t.tok), w.get(1)) {
                    match v.tok {
                        Tok::Ident("be" | "network") => {
                            return Some((ByteOrder::Big, v.line, v.col))
                        }
                        Tok::Ident("le") => return Some((ByteOrder::Little, v.line, v.col)),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    None
}
