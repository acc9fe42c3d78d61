//! Reading one data stream: packets one after the other, events within them.
//!
//! A [`StreamCursor`] yields [`Item`]s: events, and the discarded-events /
//! discarded-packets notices that packet contexts imply. Its buffers are
//! reused from event to event.

use std::sync::Arc;

use crate::decode::{decode_scope, Cursor, State, Value};
use crate::plan::Meaning;
use crate::trace::{stream_of_packet, StreamFile, Trace};
use crate::Error;

/// CTF packet magic number.
pub const CTF_MAGIC: u64 = 0xC1FC_1FC1;

/// The current packet's properties, from its header and context.
#[derive(Debug, Clone, Default)]
pub struct PacketInfo {
    /// Byte offset of the packet in its file.
    pub offset: u64,
    pub packet_bits: u64,
    pub content_bits: u64,
    pub ts_begin: Option<u64>,
    pub ts_end: Option<u64>,
    pub events_discarded: Option<u64>,
    pub seq_num: Option<u64>,
    pub stream_instance_id: Option<u64>,
}

/// What the cursor currently points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    /// An event: see [`StreamCursor::event`].
    Event,
    /// The tracer discarded `count` events between `begin` and `end` (clock
    /// cycles of the stream's clock, when known).
    DiscardedEvents {
        count: u64,
        begin: Option<u64>,
        end: Option<u64>,
    },
    /// `count` packets are missing (packet sequence number gap).
    DiscardedPackets {
        count: u64,
        begin: Option<u64>,
        end: Option<u64>,
    },
}

/// The current event's decoded fields.
#[derive(Debug, Default)]
pub struct EventData {
    /// Index into the stream plans' `events`.
    pub event: usize,
    /// Clock value (cycles) when the event was recorded, if the stream has a clock.
    pub ts: Option<u64>,
    /// Values of the event header, common context, specific context and
    /// payload, one after the other; `bounds` splits them.
    pub values: Vec<Value>,
    pub bounds: [usize; 4],
    /// Byte offset of the event in its file.
    pub offset: u64,
}

impl EventData {
    pub fn header(&self) -> &[Value] {
        &self.values[..self.bounds[0]]
    }
    pub fn common_context(&self) -> &[Value] {
        &self.values[self.bounds[0]..self.bounds[1]]
    }
    pub fn specific_context(&self) -> &[Value] {
        &self.values[self.bounds[1]..self.bounds[2]]
    }
    pub fn payload(&self) -> &[Value] {
        &self.values[self.bounds[2]..self.bounds[3]]
    }
}

/// Reads the packets and events of one [`crate::trace::StreamSource`].
pub struct StreamCursor {
    pub trace: Arc<Trace>,
    /// Index into `trace.sources`.
    pub source: usize,
    /// Index into `trace.class.streams`.
    pub stream: usize,
    file_idx: usize,
    file: Option<Arc<StreamFile>>,
    st: State,
    ph_state: State,
    /// Bit position of the next event (or the packet end) in the file.
    pos: u64,
    /// Offset of the next packet to read, in bytes, once this one is done.
    next_packet: u64,
    in_packet: bool,
    pub packet: PacketInfo,
    prev_packet: Option<PacketInfo>,
    pub packet_context: Vec<Value>,
    scratch: Vec<Value>,
    pub event: EventData,
    /// Notices waiting to be returned before the next packet's events.
    pending: Vec<Item>,
    done: bool,
    /// Number of packets read so far.
    pub packets_read: u64,
}

impl StreamCursor {
    pub fn new(trace: Arc<Trace>, source: usize) -> StreamCursor {
        let stream = trace.sources[source].stream;
        let slots = trace.class.streams[stream].refs.len();
        let ph_slots = trace.class.packet_header_slots;
        StreamCursor {
            trace,
            source,
            stream,
            file_idx: 0,
            file: None,
            st: State::new(slots),
            ph_state: State::new(ph_slots),
            pos: 0,
            next_packet: 0,
            in_packet: false,
            packet: PacketInfo::default(),
            prev_packet: None,
            packet_context: Vec::new(),
            scratch: Vec::new(),
            event: EventData::default(),
            pending: Vec::new(),
            done: false,
            packets_read: 0,
        }
    }

    /// The bytes of the file the current event lies in (for [`Value::Bytes`]).
    pub fn data(&self) -> &[u8] {
        self.file.as_deref().map_or(&[], |f| f.data())
    }

    pub fn file_path(&self) -> Option<&std::path::Path> {
        self.file.as_deref().map(|f| f.path.as_path())
    }

    /// Advances to the next item; `Ok(None)` at the end of the stream.
    pub fn next(&mut self) -> Result<Option<Item>, Error> {
        loop {
            if let Some(it) = self.pending.pop() {
                return Ok(Some(it));
            }
            if self.done {
                return Ok(None);
            }
            if self.in_packet {
                if self.pos < self.packet.offset * 8 + self.packet.content_bits {
                    self.read_event()?;
                    return Ok(Some(Item::Event));
                }
                self.in_packet = false;
                self.prev_packet = Some(self.packet.clone());
                continue;
            }
            if !self.open_next_packet()? {
                self.done = true;
            }
        }
    }

    fn err_at(&self, offset: u64, msg: String) -> Error {
        Error::Stream {
            path: self
                .file_path()
                .map(|p| p.to_path_buf())
                .unwrap_or_default(),
            offset,
            msg,
        }
    }

    /// Reads the next packet's header and context. Returns false at the end
    /// of the stream.
    fn open_next_packet(&mut self) -> Result<bool, Error> {
        let sources = &self.trace.sources[self.source];
        loop {
            if self.file.is_none() {
                match sources.files.get(self.file_idx) {
                    Some(f) => {
                        self.file = Some(f.clone());
                        self.next_packet = 0;
                    }
                    None => return Ok(false),
                }
            }
            let len = self.data().len() as u64;
            if self.next_packet >= len {
                self.file = None;
                self.file_idx += 1;
                continue;
            }
            break;
        }
        let file = self.file.clone().unwrap_or_else(|| unreachable!());
        let data = file.data();
        let off = self.next_packet;
        let file_bits = data.len() as u64 * 8;
        let trace = self.trace.clone();
        let class = &trace.class;
        let decode_err = |e| Error::Decode {
            path: file.path.clone(),
            packet_offset: off,
            err: e,
        };

        // The trace-level header first, to learn the stream class.
        let mut cur = Cursor {
            data,
            base: off * 8,
            pos: off * 8,
            end: file_bits,
        };
        self.scratch.clear();
        self.ph_state.meanings = Default::default();
        decode_scope(
            &class.packet_header,
            &mut cur,
            &mut self.ph_state,
            &mut self.scratch,
        )
        .map_err(decode_err)?;
        if let Some(m) = self.ph_state.meaning(Meaning::Magic) {
            if m != CTF_MAGIC {
                return Err(self.err_at(
                    off,
                    format!("bad packet magic number {m:#x}, expected {CTF_MAGIC:#x}"),
                ));
            }
        }
        if let (Some(u), Some(want)) = (self.ph_state.uuid, class.meta.uuid) {
            if u != want {
                return Err(self.err_at(
                    off,
                    "packet header's trace UUID differs from the metadata's".into(),
                ));
            }
        }
        let stream = stream_of_packet(class, &self.ph_state).map_err(|m| self.err_at(off, m))?;
        if stream != self.stream {
            return Err(self.err_at(
                off,
                "packet belongs to another stream class than the stream's first packet".into(),
            ));
        }
        let sp = &class.streams[stream];

        // The stream-level header + context, with this stream's slots.
        let clock_before = self.st.clock;
        self.st.meanings = Default::default();
        let mut cur = Cursor {
            data,
            base: off * 8,
            pos: off * 8,
            end: file_bits,
        };
        self.scratch.clear();
        decode_scope(&sp.packet_header, &mut cur, &mut self.st, &mut self.scratch)
            .map_err(decode_err)?;
        self.packet_context.clear();
        decode_scope(
            &sp.packet_context,
            &mut cur,
            &mut self.st,
            &mut self.packet_context,
        )
        .map_err(decode_err)?;

        let remaining = file_bits - off * 8;
        let packet_bits = match self.st.meaning(Meaning::PacketSize) {
            Some(p) => p,
            None => remaining,
        };
        let content_bits = self.st.meaning(Meaning::ContentSize).unwrap_or(packet_bits);
        if packet_bits == 0 || packet_bits % 8 != 0 {
            return Err(self.err_at(
                off,
                format!("packet size {packet_bits} bits is not a positive multiple of 8"),
            ));
        }
        if packet_bits > remaining {
            return Err(self.err_at(
                off,
                format!(
                    "packet size {packet_bits} bits exceeds the {remaining} bits left in the file"
                ),
            ));
        }
        if content_bits > packet_bits {
            return Err(self.err_at(
                off,
                format!("content size {content_bits} bits exceeds packet size {packet_bits} bits"),
            ));
        }
        if cur.pos - off * 8 > content_bits {
            return Err(self.err_at(
                off,
                format!(
                    "packet header and context take {} bits, more than the content size {content_bits}",
                    cur.pos - off * 8
                ),
            ));
        }
        let info = PacketInfo {
            offset: off,
            packet_bits,
            content_bits,
            ts_begin: self.st.meaning(Meaning::TimestampBegin),
            ts_end: self.st.meaning(Meaning::TimestampEnd),
            events_discarded: self.st.meaning(Meaning::EventsDiscarded),
            seq_num: self.st.meaning(Meaning::PacketSeqNum),
            stream_instance_id: self.st.meaning(Meaning::StreamInstanceId),
        };
        self.st.clock = info.ts_begin.unwrap_or(clock_before);
        self.queue_notices(&info);
        self.packet = info;
        self.pos = cur.pos;
        self.next_packet = off + packet_bits / 8;
        self.in_packet = true;
        self.packets_read += 1;
        Ok(true)
    }

    /// Discarded events / packets implied by the step from the previous
    /// packet to `cur` (returned before `cur`'s events).
    fn queue_notices(&mut self, cur: &PacketInfo) {
        let prev = self.prev_packet.as_ref();
        let mut notices = Vec::new();
        if let (Some(p), Some(c)) = (prev.and_then(|p| p.seq_num), cur.seq_num) {
            if c > p.wrapping_add(1) {
                notices.push(Item::DiscardedPackets {
                    count: c - p - 1,
                    begin: prev.and_then(|p| p.ts_end),
                    end: cur.ts_begin,
                });
            }
        }
        if let Some(c) = cur.events_discarded {
            let p = prev.and_then(|p| p.events_discarded).unwrap_or(0);
            if c > p {
                notices.push(Item::DiscardedEvents {
                    count: c - p,
                    begin: prev.and_then(|p| p.ts_end),
                    end: cur.ts_end,
                });
            }
        }
        // `pending` is popped from the back.
        notices.reverse();
        self.pending.extend(notices);
    }

    fn read_event(&mut self) -> Result<(), Error> {
        let file = self.file.clone().unwrap_or_else(|| unreachable!());
        let data = file.data();
        let trace = self.trace.clone();
        let sp = &trace.class.streams[self.stream];
        let mut cur = Cursor {
            data,
            base: self.packet.offset * 8,
            pos: self.pos,
            end: self.packet.offset * 8 + self.packet.content_bits,
        };
        let start = self.pos;
        let decode_err = |e| Error::Decode {
            path: file.path.clone(),
            packet_offset: self.packet.offset,
            err: e,
        };
        let ev = &mut self.event;
        ev.values.clear();
        ev.offset = start / 8;
        self.st.meanings[Meaning::EventId as usize] = None;
        decode_scope(&sp.event_header, &mut cur, &mut self.st, &mut ev.values)
            .map_err(decode_err)?;
        ev.bounds[0] = ev.values.len();
        decode_scope(
            &sp.event_common_context,
            &mut cur,
            &mut self.st,
            &mut ev.values,
        )
        .map_err(decode_err)?;
        ev.bounds[1] = ev.values.len();
        let idx = match self.st.meaning(Meaning::EventId) {
            Some(id) => *sp.event_index.get(&id).ok_or_else(|| Error::Stream {
                path: file.path.clone(),
                offset: start / 8,
                msg: format!(
                    "event id {id} is not declared in stream class {}",
                    trace.class.meta.streams[sp.class].id
                ),
            })?,
            None if sp.events.len() == 1 => 0,
            None => {
                return Err(Error::Stream {
                    path: file.path.clone(),
                    offset: start / 8,
                    msg: if sp.events.is_empty() {
                        "event found in a stream class that declares no event".into()
                    } else {
                        "event header has no id but the stream class declares several events".into()
                    },
                })
            }
        };
        let ep = &sp.events[idx];
        decode_scope(&ep.context, &mut cur, &mut self.st, &mut ev.values).map_err(decode_err)?;
        ev.bounds[2] = ev.values.len();
        decode_scope(&ep.payload, &mut cur, &mut self.st, &mut ev.values).map_err(decode_err)?;
        ev.bounds[3] = ev.values.len();
        if cur.pos == start {
            return Err(Error::Stream {
                path: file.path.clone(),
                offset: start / 8,
                msg: "event occupies no bits: the packet would never end".into(),
            });
        }
        ev.event = idx;
        ev.ts = sp.clock.map(|_| self.st.clock);
        self.pos = cur.pos;
        Ok(())
    }
}
