//! Counters (`reef convert --counter [NAME=]EVENT:FIELD`): a numeric field
//! of an event class followed over time, one track per process (the
//! event's row's process: a thread's, or the trace's CPUs or streams), as
//! Perfetto counter tracks and Chrome `C` events.

use reef_ctf::access::Field;
use reef_ctf::StreamCursor;

/// One `--counter` definition.
pub struct Counter {
    /// The track's name (`NAME`, default `FIELD`).
    pub name: String,
    pub event: String,
    field: Field,
}

/// A counter's value: integers stay integers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    Int(i64),
    Float(f64),
}

impl Counter {
    /// `[NAME=]EVENT:FIELD`: the event name may hold colons (LTTng-UST's
    /// `provider:event`); the field follows the last one. The field is
    /// looked up as `--filter` does (payload, then the contexts).
    pub fn parse(s: &str) -> Result<Counter, String> {
        let (name, rest) = match s.split_once('=') {
            Some((n, r)) if !n.trim().is_empty() => (Some(n.trim()), r),
            _ => (None, s),
        };
        let Some((event, field)) = rest.rsplit_once(':') else {
            return Err(format!("`{s}`: expected [NAME=]EVENT:FIELD"));
        };
        let (event, field) = (event.trim(), field.trim());
        if event.is_empty() || field.is_empty() {
            return Err(format!("`{s}`: expected [NAME=]EVENT:FIELD"));
        }
        Ok(Counter {
            name: name.unwrap_or(field).to_string(),
            event: event.to_string(),
            field: Field::new(field),
        })
    }

    /// The value of this counter in the current event, when the event is
    /// the counter's and its field a number.
    pub fn value(&mut self, c: &StreamCursor) -> Option<Num> {
        if c.event_name() != self.event {
            return None;
        }
        let v = self.field.get(c)?;
        if let Some(i) = v.as_i64() {
            return Some(Num::Int(i));
        }
        if let Some(u) = v.as_u64() {
            return Some(Num::Float(u as f64));
        }
        v.as_f64().map(Num::Float)
    }
}

/// Every counter's value in the current event, with its index.
pub fn values(counters: &mut [Counter], c: &StreamCursor) -> Vec<(usize, Num)> {
    counters
        .iter_mut()
        .enumerate()
        .filter_map(|(i, k)| k.value(c).map(|v| (i, v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_parse() {
        let c = Counter::parse("my_app:queue:depth").unwrap();
        assert_eq!(
            (c.name.as_str(), c.event.as_str()),
            ("depth", "my_app:queue")
        );
        assert_eq!(c.field.name(), "depth");
        let c = Counter::parse("backlog = my_app:queue:depth").unwrap();
        assert_eq!(
            (c.name.as_str(), c.event.as_str()),
            ("backlog", "my_app:queue")
        );
        for bad in ["depth", "ev:", ":f", "x=ev"] {
            assert!(Counter::parse(bad).is_err(), "{bad}");
        }
    }
}
