//! A location's local definitions (`traces/N.def`): mapping tables from the ids its events
//! use to global ids, and clock offsets, turned into OTF2's piecewise-linear correction.

use std::collections::HashMap;
use std::path::Path;

use crate::Error;
use crate::buffer::{Cursor, Decoded};
use crate::chunks::Chunks;

const MAPPING_TABLE: u8 = 5;
const CLOCK_OFFSET: u8 = 6;

/// OTF2_MappingType values the MPI records use.
pub const MAP_ATTRIBUTE: u8 = 1;
pub const MAP_REGION: u8 = 3;
pub const MAP_COMM: u8 = 6;
const MAPPING_TYPES: usize = 15;

/// One stretch of the clock correction: from `begin`, `offset` plus `slope` per tick.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Interval {
    begin: u64,
    end: u64,
    offset: i64,
    slope: f64,
}

#[derive(Debug, Clone, Default)]
pub struct LocalDefs {
    maps: Vec<Option<HashMap<u64, u64>>>,
    intervals: Vec<Interval>,
}

impl LocalDefs {
    /// Reads a location's local definitions; a missing file means none (OTF2 allows it).
    pub fn read(path: &Path, location: u64, chunk_size: u64) -> Result<LocalDefs, Error> {
        let mut local = LocalDefs {
            maps: vec![None; MAPPING_TYPES],
            intervals: Vec::new(),
        };
        if !path.exists() {
            return Ok(local);
        }
        let mut chunks = Chunks::open(path, Some(location), chunk_size)?;
        let mut offsets: Vec<(u64, i64)> = Vec::new();
        chunks.each_record("local definition record", |t, c| {
            local.record(t, c, &mut offsets)
        })?;
        local.intervals = intervals(&offsets);
        Ok(local)
    }

    fn record(&mut self, t: u8, c: &mut Cursor, offsets: &mut Vec<(u64, i64)>) -> Decoded<()> {
        let end = c.record_end("the record length")?;
        match t {
            MAPPING_TABLE => {
                let kind = c.u8("mapping type")?;
                let n = c.u64c("mapping size")?;
                let mode = c.u8("mapping mode")?;
                if n as usize > c.remaining() {
                    return Err(c.fault(format!("a mapping of {n} ids does not fit its record")));
                }
                let mut map = HashMap::with_capacity(n as usize);
                for i in 0..n {
                    let local = if mode == 0 { i } else { c.u64c("local id")? };
                    map.insert(local, c.u64c("global id")?);
                }
                if let Some(slot) = self.maps.get_mut(kind as usize) {
                    *slot = Some(map);
                }
            }
            CLOCK_OFFSET => {
                let time = c.u64_full("clock offset time")?;
                let offset = c.i64c("clock offset")?;
                let _stddev = c.f64("clock offset deviation")?;
                offsets.push((time, offset));
            }
            _ => {}
        }
        if c.pos() > end {
            return Err(c.fault("the fields run past the record's length"));
        }
        c.set_pos(end)
    }

    /// The global id of a local id (itself when the location has no table for the kind).
    pub fn map(&self, kind: u8, id: u64) -> u64 {
        match self.maps.get(kind as usize) {
            Some(Some(m)) => m.get(&id).copied().unwrap_or(id),
            _ => id,
        }
    }

    /// A corrected timestamp, as OTF2's reader corrects it: the offset of the interval the
    /// time falls in (the first before it, the last after it), interpolated linearly and
    /// rounded to the nearest tick (halves to even).
    pub fn correct(&self, cursor: &mut usize, time: u64) -> u64 {
        if self.intervals.is_empty() {
            return time;
        }
        while *cursor + 1 < self.intervals.len() && time > self.intervals[*cursor].end {
            *cursor += 1;
        }
        let iv = self.intervals[*cursor];
        let diff = if time >= iv.begin {
            (time - iv.begin) as f64
        } else {
            -((iv.begin - time) as f64)
        };
        let offset = iv
            .offset
            .wrapping_add((iv.slope * diff).round_ties_even() as i64);
        time.wrapping_add(offset as u64)
    }
}

fn intervals(offsets: &[(u64, i64)]) -> Vec<Interval> {
    match offsets {
        [] => Vec::new(),
        [(t, o)] => vec![Interval {
            begin: *t,
            end: u64::MAX,
            offset: *o,
            slope: 0.0,
        }],
        _ => offsets
            .windows(2)
            .map(|w| {
                let ((t0, o0), (t1, o1)) = (w[0], w[1]);
                let span = t1.saturating_sub(t0);
                Interval {
                    begin: t0,
                    end: t1,
                    offset: o0,
                    slope: if span == 0 {
                        0.0
                    } else {
                        (o1 - o0) as f64 / span as f64
                    },
                }
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_offsets_interpolate_and_extrapolate_as_otf2_does() {
        // Rank 1 of TraceR's stencil4d-32 (otf2-print's timestamps).
        let local = LocalDefs {
            maps: vec![None; MAPPING_TYPES],
            intervals: intervals(&[
                (2196256752770076, 12768798256),
                (2196256761629337, 12768798258),
            ]),
        };
        let mut cur = 0;
        assert_eq!(local.correct(&mut cur, 2196255005997279), 2196267774795141);
        assert_eq!(local.correct(&mut cur, 2196256752801957), 2196269521600213);
    }

    #[test]
    fn ids_without_a_table_map_to_themselves() {
        let mut maps = vec![None; MAPPING_TYPES];
        maps[MAP_REGION as usize] = Some(HashMap::from([(4, 99)]));
        let local = LocalDefs {
            maps,
            intervals: Vec::new(),
        };
        assert_eq!(local.map(MAP_REGION, 4), 99);
        assert_eq!(local.map(MAP_REGION, 5), 5);
        assert_eq!(local.map(MAP_COMM, 4), 4);
    }
}
