//! A location's events, read one chunk at a time.

use std::collections::BTreeMap;
use std::path::Path;

use crate::Error;
use crate::buffer::{Cursor, Decoded};
use crate::chunks::{self, Chunks};
use crate::local::{LocalDefs, MAP_ATTRIBUTE, MAP_COMM, MAP_REGION};

const TIMESTAMP: u8 = 5;
const ATTRIBUTE_LIST: u8 = 6;
const MEASUREMENT_ON_OFF: u8 = 11;
const ENTER: u8 = 12;
const LEAVE: u8 = 13;
const MPI_SEND: u8 = 14;
const MPI_ISEND: u8 = 15;
const MPI_ISEND_COMPLETE: u8 = 16;
const MPI_IRECV_REQUEST: u8 = 17;
const MPI_RECV: u8 = 18;
const MPI_IRECV: u8 = 19;
const MPI_REQUEST_TEST: u8 = 20;
const MPI_REQUEST_CANCELLED: u8 = 21;
const MPI_COLLECTIVE_BEGIN: u8 = 22;
const MPI_COLLECTIVE_END: u8 = 23;
/// Event types written without a record length: one compressed field, as OTF2 1.1 froze them.
const SINGLETONS: [u8; 10] = [12, 13, 16, 17, 20, 21, 24, 28, 29, 30];

/// OTF2_CollectiveOp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CollectiveOp {
    Barrier,
    Bcast,
    Gather,
    Gatherv,
    Scatter,
    Scatterv,
    Allgather,
    Allgatherv,
    Alltoall,
    Alltoallv,
    Alltoallw,
    Allreduce,
    Reduce,
    ReduceScatter,
    Scan,
    Exscan,
    ReduceScatterBlock,
    Other(u8),
}

/// OTF2's collective operations in the order of their codes (OTF2_CollectiveOp), with the
/// names otf2-print gives them: one table for decoding, encoding and naming.
const COLLECTIVE_OPS: [(CollectiveOp, &str); 17] = [
    (CollectiveOp::Barrier, "BARRIER"),
    (CollectiveOp::Bcast, "BCAST"),
    (CollectiveOp::Gather, "GATHER"),
    (CollectiveOp::Gatherv, "GATHERV"),
    (CollectiveOp::Scatter, "SCATTER"),
    (CollectiveOp::Scatterv, "SCATTERV"),
    (CollectiveOp::Allgather, "ALLGATHER"),
    (CollectiveOp::Allgatherv, "ALLGATHERV"),
    (CollectiveOp::Alltoall, "ALLTOALL"),
    (CollectiveOp::Alltoallv, "ALLTOALLV"),
    (CollectiveOp::Alltoallw, "ALLTOALLW"),
    (CollectiveOp::Allreduce, "ALLREDUCE"),
    (CollectiveOp::Reduce, "REDUCE"),
    (CollectiveOp::ReduceScatter, "REDUCE_SCATTER"),
    (CollectiveOp::Scan, "SCAN"),
    (CollectiveOp::Exscan, "EXSCAN"),
    (CollectiveOp::ReduceScatterBlock, "REDUCE_SCATTER_BLOCK"),
];

impl CollectiveOp {
    fn from(b: u8) -> CollectiveOp {
        COLLECTIVE_OPS
            .get(b as usize)
            .map_or(CollectiveOp::Other(b), |&(op, _)| op)
    }

    /// The operation's code in OTF2 records.
    pub fn code(self) -> u8 {
        match self {
            CollectiveOp::Other(b) => b,
            op => COLLECTIVE_OPS
                .iter()
                .position(|&(o, _)| o == op)
                .expect("every named operation is in the table") as u8,
        }
    }

    /// The name otf2-print gives it (BARRIER, ALLREDUCE, ...).
    pub fn name(&self) -> String {
        match self {
            CollectiveOp::Other(b) => format!("collective op {b}"),
            op => COLLECTIVE_OPS[op.code() as usize].1.to_string(),
        }
    }
}

/// The records an MPI replay needs; `Other` is any other record (skipped, counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    MeasurementOnOff {
        on: bool,
    },
    Enter {
        region: u32,
    },
    Leave {
        region: u32,
    },
    MpiSend {
        receiver: u32,
        comm: u32,
        tag: u32,
        length: u64,
    },
    MpiIsend {
        receiver: u32,
        comm: u32,
        tag: u32,
        length: u64,
        request: u64,
    },
    MpiIsendComplete {
        request: u64,
    },
    MpiIrecvRequest {
        request: u64,
    },
    MpiRecv {
        sender: u32,
        comm: u32,
        tag: u32,
        length: u64,
    },
    MpiIrecv {
        sender: u32,
        comm: u32,
        tag: u32,
        length: u64,
        request: u64,
    },
    MpiRequestTest {
        request: u64,
    },
    MpiRequestCancelled {
        request: u64,
    },
    MpiCollectiveBegin,
    MpiCollectiveEnd {
        op: CollectiveOp,
        comm: u32,
        /// The root's rank in the communicator; `u32::MAX` for none.
        root: u32,
        sent: u64,
        received: u64,
    },
    /// A record of another type (its OTF2 event type).
    Other(u8),
}

/// An attribute's value on an event.
#[derive(Debug, Clone, PartialEq)]
pub enum AttributeValue {
    Unsigned(u64),
    Signed(i64),
    Float(f64),
    /// A reference to a definition (a string, region, location ...) of OTF2_Type `kind`.
    Ref {
        kind: u8,
        id: u64,
    },
}

impl AttributeValue {
    /// The value as an integer, if it is one.
    pub fn as_i128(&self) -> Option<i128> {
        match *self {
            AttributeValue::Unsigned(v) => Some(v as i128),
            AttributeValue::Signed(v) => Some(v as i128),
            _ => None,
        }
    }
}

/// One event of a location, at a corrected timestamp (ticks).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub time: u64,
    pub kind: EventKind,
    /// Attributes attached to the event: (global attribute id, value).
    pub attributes: Vec<(u32, AttributeValue)>,
    /// The byte offset of the event's record in its file.
    pub offset: u64,
}

/// Streams a location's events.
pub struct EventReader {
    chunks: Chunks,
    local: LocalDefs,
    pos: usize,
    time: u64,
    interval: usize,
    done: bool,
    skipped: BTreeMap<u8, u64>,
    events: u64,
}

impl EventReader {
    pub(crate) fn open(
        path: &Path,
        location: u64,
        chunk_size: u64,
        local: LocalDefs,
    ) -> Result<EventReader, Error> {
        let mut chunks = Chunks::open(path, Some(location), chunk_size)?;
        let done = !chunks.next()?;
        if done {
            return Err(chunks.error(0, "the event file is empty"));
        }
        Ok(EventReader {
            chunks,
            local,
            pos: chunks::HEADER_LEN,
            time: 0,
            interval: 0,
            done,
            skipped: BTreeMap::new(),
            events: 0,
        })
    }

    /// Events skipped so far, by OTF2 event type.
    pub fn skipped(&self) -> &BTreeMap<u8, u64> {
        &self.skipped
    }

    /// Events read so far (skipped ones included).
    pub fn count(&self) -> u64 {
        self.events
    }

    /// The next event, or None after the last.
    pub fn next_event(&mut self) -> Result<Option<Event>, Error> {
        let mut attributes = Vec::new();
        loop {
            if self.done {
                return Ok(None);
            }
            let mut c = Cursor::at(&self.chunks.data, self.pos);
            let at = c.pos();
            let t = c.u8("a record type").map_err(|f| {
                self.chunks.error(
                    f.at,
                    "the chunk ends without an end-of-chunk or end-of-file record (truncated?)",
                )
            })?;
            match t {
                chunks::END_OF_CHUNK => {
                    if !self.chunks.next()? {
                        return Err(self.chunks.error(
                            0,
                            "the last chunk ends without an end-of-file record (truncated?)",
                        ));
                    }
                    self.pos = chunks::HEADER_LEN;
                    continue;
                }
                chunks::END_OF_FILE | chunks::END_OF_BUFFER => {
                    self.done = true;
                    return Ok(None);
                }
                TIMESTAMP => {
                    let raw = c
                        .u64_full("a timestamp")
                        .map_err(|f| self.chunks.error(f.at, f.what))?;
                    self.time = self.local.correct(&mut self.interval, raw);
                    self.pos = c.pos();
                }
                ATTRIBUTE_LIST => {
                    attributes.clear();
                    self.attribute_list(&mut c, &mut attributes).map_err(|f| {
                        self.chunks
                            .error(f.at, format!("attribute list: {}", f.what))
                    })?;
                    self.pos = c.pos();
                }
                _ => {
                    let kind = self.event(t, &mut c).map_err(|f| {
                        self.chunks
                            .error(f.at, format!("event type {t}: {}", f.what))
                    })?;
                    self.pos = c.pos();
                    self.events += 1;
                    if let EventKind::Other(t) = kind {
                        *self.skipped.entry(t).or_default() += 1;
                    }
                    return Ok(Some(Event {
                        time: self.time,
                        kind,
                        attributes,
                        offset: self.chunks.base + at as u64,
                    }));
                }
            }
        }
    }

    fn attribute_list(&self, c: &mut Cursor, out: &mut Vec<(u32, AttributeValue)>) -> Decoded<()> {
        let end = c.record_end("the record length")?;
        let n = c.u32c("number of attributes")?;
        for _ in 0..n {
            let id = self.local.map(MAP_ATTRIBUTE, c.u32c("attribute")? as u64) as u32;
            let kind = c.u8("attribute type")?;
            let value = match kind {
                1 | 5 => {
                    let b = c.u8("value")?;
                    if kind == 1 {
                        AttributeValue::Unsigned(b as u64)
                    } else {
                        AttributeValue::Signed(b as i8 as i64)
                    }
                }
                2 | 6 => {
                    let lo = c.u8("value")? as u16;
                    let v = lo | (c.u8("value")? as u16) << 8;
                    if kind == 2 {
                        AttributeValue::Unsigned(v as u64)
                    } else {
                        AttributeValue::Signed(v as i16 as i64)
                    }
                }
                3 => AttributeValue::Unsigned(c.u32c("value")? as u64),
                4 => AttributeValue::Unsigned(c.u64c("value")?),
                7 => AttributeValue::Signed(c.i32c("value")? as i64),
                8 => AttributeValue::Signed(c.i64c("value")?),
                9 => AttributeValue::Float(c.f32("value")? as f64),
                10 => AttributeValue::Float(c.f64("value")?),
                13 => AttributeValue::Ref {
                    kind,
                    id: c.u64c("value")?,
                },
                11..=30 => AttributeValue::Ref {
                    kind,
                    id: c.u32c("value")? as u64,
                },
                k => return Err(c.fault(format!("unknown attribute type {k}"))),
            };
            out.push((id, value));
        }
        if c.pos() > end {
            return Err(c.fault("the attributes run past the record's length"));
        }
        c.set_pos(end)
    }

    fn event(&self, t: u8, c: &mut Cursor) -> Decoded<EventKind> {
        if SINGLETONS.contains(&t) {
            return Ok(match t {
                ENTER => EventKind::Enter {
                    region: self.local.map(MAP_REGION, c.u32c("region")? as u64) as u32,
                },
                LEAVE => EventKind::Leave {
                    region: self.local.map(MAP_REGION, c.u32c("region")? as u64) as u32,
                },
                MPI_ISEND_COMPLETE => EventKind::MpiIsendComplete {
                    request: c.u64c("request")?,
                },
                MPI_IRECV_REQUEST => EventKind::MpiIrecvRequest {
                    request: c.u64c("request")?,
                },
                MPI_REQUEST_TEST => EventKind::MpiRequestTest {
                    request: c.u64c("request")?,
                },
                MPI_REQUEST_CANCELLED => EventKind::MpiRequestCancelled {
                    request: c.u64c("request")?,
                },
                t => {
                    c.u64c("field")?;
                    EventKind::Other(t)
                }
            });
        }
        let end = c.record_end("the record length")?;
        let comm = |c: &mut Cursor| -> Decoded<u32> {
            Ok(self.local.map(MAP_COMM, c.u32c("communicator")? as u64) as u32)
        };
        let kind = match t {
            MEASUREMENT_ON_OFF => EventKind::MeasurementOnOff {
                on: c.u8("measurement mode")? == 1,
            },
            MPI_SEND => EventKind::MpiSend {
                receiver: c.u32c("receiver")?,
                comm: comm(c)?,
                tag: c.u32c("tag")?,
                length: c.u64c("length")?,
            },
            MPI_ISEND => EventKind::MpiIsend {
                receiver: c.u32c("receiver")?,
                comm: comm(c)?,
                tag: c.u32c("tag")?,
                length: c.u64c("length")?,
                request: c.u64c("request")?,
            },
            MPI_RECV => EventKind::MpiRecv {
                sender: c.u32c("sender")?,
                comm: comm(c)?,
                tag: c.u32c("tag")?,
                length: c.u64c("length")?,
            },
            MPI_IRECV => EventKind::MpiIrecv {
                sender: c.u32c("sender")?,
                comm: comm(c)?,
                tag: c.u32c("tag")?,
                length: c.u64c("length")?,
                request: c.u64c("request")?,
            },
            MPI_COLLECTIVE_BEGIN => EventKind::MpiCollectiveBegin,
            MPI_COLLECTIVE_END => EventKind::MpiCollectiveEnd {
                op: CollectiveOp::from(c.u8("collective op")?),
                comm: comm(c)?,
                root: c.u32c("root")?,
                sent: c.u64c("bytes sent")?,
                received: c.u64c("bytes received")?,
            },
            t => EventKind::Other(t),
        };
        if c.pos() > end {
            return Err(c.fault("the fields run past the record's length"));
        }
        c.set_pos(end)?;
        Ok(kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collective_codes_round_trip_and_unknown_ones_stay_numbers() {
        for b in 0..=255u8 {
            assert_eq!(CollectiveOp::from(b).code(), b);
        }
        assert_eq!(CollectiveOp::from(11), CollectiveOp::Allreduce);
        assert_eq!(CollectiveOp::Allreduce.name(), "ALLREDUCE");
        assert_eq!(CollectiveOp::from(40).name(), "collective op 40");
    }
}
