//! The functions a source plugin delivers its events with
//! (`include/reef_plugin.h`, `reef_source_*`): each checks its handle and
//! arguments, feeds [`reef_ctf::source::Builder`] and returns a status;
//! a misuse is `REEF_ERR_ARG` with its message, and the first one also
//! ends the conversion (the events before it are kept). They live here,
//! not in reef-capi, so that `libreef_reader` does not have them; the
//! `reef` binary exports them (reef-cli's build.rs).

use std::ffi::c_char;

use reef_ctf::source::{Builder, FieldType, Value};

use reef_capi::{
    c_text as text, fail_with as fail, guarded as guard, reef_status, REEF_ERR_ARG,
    REEF_ERR_HANDLE, REEF_ERR_NULL, REEF_OK,
};

const MAGIC: u64 = 0x7265_6566_5f73_7263; // "reef_src"

/// `reef_source`: the handle a source plugin's `read` is given.
#[repr(C)]
pub struct reef_source {
    magic: u64,
    pub builder: Builder,
}

impl reef_source {
    pub fn new(builder: Builder) -> reef_source {
        reef_source {
            magic: MAGIC,
            builder,
        }
    }
}

/// `reef_source_type`'s values.
const TYPES: [FieldType; 11] = [
    FieldType::Uint(8),
    FieldType::Uint(16),
    FieldType::Uint(32),
    FieldType::Uint(64),
    FieldType::Int(8),
    FieldType::Int(16),
    FieldType::Int(32),
    FieldType::Int(64),
    FieldType::F32,
    FieldType::F64,
    FieldType::Str,
];

/// `reef_source_field`.
#[repr(C)]
pub struct reef_source_field {
    pub name: *const c_char,
    pub r#type: u32,
}

/// Runs `f` on the source `s` after checking it.
fn with(s: *mut reef_source, f: impl FnOnce(&mut Builder) -> Result<(), String>) -> reef_status {
    guard(|| {
        if s.is_null() {
            return fail(REEF_ERR_NULL, "the source (reef_source *) is NULL");
        }
        // SAFETY: the plugin's promise: the handle its `read` was given.
        // The magic catches most other pointers.
        let src = unsafe { &mut *s };
        if src.magic != MAGIC {
            return fail(REEF_ERR_HANDLE, "not the reef_source given to read()");
        }
        match f(&mut src.builder) {
            Ok(()) => REEF_OK,
            Err(m) => fail(REEF_ERR_ARG, m),
        }
    })
}

/// # Safety
/// `s` is the handle `read` was given.
#[no_mangle]
pub unsafe extern "C" fn reef_source_clock(
    s: *mut reef_source,
    frequency: u64,
    offset_ns: i64,
) -> reef_status {
    with(s, |b| b.clock(frequency, offset_ns))
}

/// # Safety
/// `s` is the handle `read` was given; `name` a C string; `fields` holds
/// `count` fields (NULL when 0); `id` is writable.
#[no_mangle]
pub unsafe extern "C" fn reef_source_class(
    s: *mut reef_source,
    name: *const c_char,
    fields: *const reef_source_field,
    count: usize,
    id: *mut u32,
) -> reef_status {
    if id.is_null() {
        return fail(REEF_ERR_NULL, "the class id's place (id) is NULL");
    }
    if count > 0 && fields.is_null() {
        return fail(REEF_ERR_NULL, "fields is NULL");
    }
    // SAFETY: the caller's promise.
    let name = match unsafe { text(name, "the class name") } {
        Ok(n) => n,
        Err(st) => return st,
    };
    let mut list: Vec<(&str, FieldType)> = Vec::with_capacity(count);
    for i in 0..count {
        // SAFETY: `fields` holds `count` fields.
        let f = unsafe { &*fields.add(i) };
        // SAFETY: the caller's promise.
        let n = match unsafe { text(f.name, "a field name") } {
            Ok(n) => n,
            Err(st) => return st,
        };
        let Some(t) = (f.r#type as usize)
            .checked_sub(1)
            .and_then(|k| TYPES.get(k))
        else {
            return fail(
                REEF_ERR_ARG,
                format!(
                    "class '{name}', field '{n}': type {} is not a reef_source_type",
                    f.r#type
                ),
            );
        };
        list.push((n, *t));
    }
    with(s, |b| {
        let k = b.class(name, &list)?;
        // SAFETY: checked not NULL; the caller's promise.
        unsafe { *id = k };
        Ok(())
    })
}

/// # Safety
/// `s` is the handle `read` was given; `name` a C string; `id` writable.
#[no_mangle]
pub unsafe extern "C" fn reef_source_stream(
    s: *mut reef_source,
    name: *const c_char,
    id: *mut u32,
) -> reef_status {
    if id.is_null() {
        return fail(REEF_ERR_NULL, "the stream id's place (id) is NULL");
    }
    // SAFETY: the caller's promise.
    let name = match unsafe { text(name, "the stream name") } {
        Ok(n) => n,
        Err(st) => return st,
    };
    with(s, |b| {
        let k = b.stream(name)?;
        // SAFETY: checked not NULL; the caller's promise.
        unsafe { *id = k };
        Ok(())
    })
}

/// # Safety
/// `s` is the handle `read` was given.
#[no_mangle]
pub unsafe extern "C" fn reef_source_begin(
    s: *mut reef_source,
    stream: u32,
    class_id: u32,
    timestamp: u64,
) -> reef_status {
    with(s, |b| b.begin(stream, class_id, timestamp))
}

/// # Safety
/// `s` is the handle `read` was given.
#[no_mangle]
pub unsafe extern "C" fn reef_source_uint(s: *mut reef_source, value: u64) -> reef_status {
    with(s, |b| b.value(Value::Uint(value)))
}

/// # Safety
/// `s` is the handle `read` was given.
#[no_mangle]
pub unsafe extern "C" fn reef_source_int(s: *mut reef_source, value: i64) -> reef_status {
    with(s, |b| b.value(Value::Int(value)))
}

/// # Safety
/// `s` is the handle `read` was given.
#[no_mangle]
pub unsafe extern "C" fn reef_source_float(s: *mut reef_source, value: f64) -> reef_status {
    with(s, |b| b.value(Value::Float(value)))
}

/// # Safety
/// `s` is the handle `read` was given; `value` holds `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn reef_source_string(
    s: *mut reef_source,
    value: *const c_char,
    len: usize,
) -> reef_status {
    if value.is_null() && len > 0 {
        return fail(REEF_ERR_NULL, "the string is NULL");
    }
    let bytes: &[u8] = if len == 0 {
        &[]
    } else {
        // SAFETY: the caller's promise: `len` readable bytes.
        unsafe { std::slice::from_raw_parts(value.cast::<u8>(), len) }
    };
    with(s, |b| b.value(Value::Str(bytes)))
}

/// # Safety
/// `s` is the handle `read` was given.
#[no_mangle]
pub unsafe extern "C" fn reef_source_end(s: *mut reef_source) -> reef_status {
    with(s, |b| b.end())
}

/// # Safety
/// `s` is the handle `read` was given.
#[no_mangle]
pub unsafe extern "C" fn reef_source_offset(s: *mut reef_source, offset: u64) -> reef_status {
    with(s, |b| {
        b.set_offset(offset);
        Ok(())
    })
}
