//! Global definitions (`traces.def`): the records that give ids their meaning.

use std::collections::BTreeMap;
use std::path::Path;

use crate::Error;
use crate::buffer::{Cursor, Decoded};
use crate::chunks::Chunks;

const CLOCK_PROPERTIES: u8 = 5;
const STRING: u8 = 10;
const ATTRIBUTE: u8 = 11;
const LOCATION_GROUP: u8 = 13;
const LOCATION: u8 = 14;
const REGION: u8 = 15;
const GROUP: u8 = 18;
const COMM: u8 = 22;

/// The MPI paradigm's id (OTF2_PARADIGM_MPI).
pub const PARADIGM_MPI: u8 = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClockProperties {
    /// Ticks per second.
    pub resolution: u64,
    pub global_offset: u64,
    pub trace_length: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribute {
    pub name: u32,
    pub description: u32,
    /// OTF2_Type of its values.
    pub value_type: u8,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    pub name: u32,
    pub canonical_name: u32,
    pub description: u32,
    /// OTF2_RegionRole (e.g. 0x19 collective, 0x18 point-to-point).
    pub role: u8,
    pub paradigm: u8,
    pub source_file: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocationGroup {
    pub name: u32,
    /// OTF2_LocationGroupType (1: process).
    pub group_type: u8,
    pub system_tree_parent: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub id: u64,
    pub name: u32,
    /// OTF2_LocationType (1: CPU thread, 2: GPU, 3: metric).
    pub location_type: u8,
    pub events: u64,
    pub group: u32,
}

/// OTF2_GroupType.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupType {
    Unknown,
    Locations,
    Regions,
    Metric,
    /// Members are location ids: an MPI world's ranks, in rank order.
    CommLocations,
    /// Members are ranks of the paradigm's `CommLocations` group.
    CommGroup,
    CommSelf,
    Other(u8),
}

impl GroupType {
    fn from(b: u8) -> GroupType {
        match b {
            0 => GroupType::Unknown,
            1 => GroupType::Locations,
            2 => GroupType::Regions,
            3 => GroupType::Metric,
            4 => GroupType::CommLocations,
            5 => GroupType::CommGroup,
            6 => GroupType::CommSelf,
            b => GroupType::Other(b),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub name: u32,
    pub group_type: GroupType,
    pub paradigm: u8,
    pub members: Vec<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comm {
    pub name: u32,
    pub group: u32,
    /// The parent communicator, `u32::MAX` for none.
    pub parent: u32,
}

/// The global definitions an MPI replay needs, by id; other records are counted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Definitions {
    pub clock: ClockProperties,
    pub strings: BTreeMap<u32, String>,
    pub attributes: BTreeMap<u32, Attribute>,
    pub regions: BTreeMap<u32, Region>,
    pub location_groups: BTreeMap<u32, LocationGroup>,
    /// In the order of the file.
    pub locations: Vec<Location>,
    pub groups: BTreeMap<u32, Group>,
    pub comms: BTreeMap<u32, Comm>,
    /// Records read but not kept, by record type.
    pub skipped: BTreeMap<u8, u64>,
}

impl Definitions {
    /// A string by id ("" for an unknown id).
    pub fn string(&self, id: u32) -> &str {
        self.strings.get(&id).map_or("", String::as_str)
    }

    /// A region's name.
    pub fn region_name(&self, region: u32) -> &str {
        self.regions
            .get(&region)
            .map_or("", |r| self.string(r.name))
    }

    /// The location ids of a communicator's ranks, in rank order, or why they are unknown.
    pub fn comm_locations(&self, comm: u32) -> Result<Vec<u64>, String> {
        let c = self
            .comms
            .get(&comm)
            .ok_or_else(|| format!("communicator {comm} is not defined"))?;
        let g = self.groups.get(&c.group).ok_or_else(|| {
            format!(
                "communicator {comm} (`{}`) names group {}, which is not defined",
                self.string(c.name),
                c.group
            )
        })?;
        match g.group_type {
            GroupType::CommLocations => Ok(g.members.clone()),
            GroupType::CommSelf => Ok(Vec::new()),
            GroupType::CommGroup => {
                let world = self
                    .groups
                    .values()
                    .find(|w| w.group_type == GroupType::CommLocations && w.paradigm == g.paradigm)
                    .ok_or_else(|| {
                        format!("no COMM_LOCATIONS group for communicator {comm}'s paradigm")
                    })?;
                g.members
                    .iter()
                    .map(|&m| {
                        world.members.get(m as usize).copied().ok_or_else(|| {
                            format!(
                                "communicator {comm}: member {m} is not a rank of the world group"
                            )
                        })
                    })
                    .collect()
            }
            t => Err(format!(
                "communicator {comm} names group {} of type {t:?}, not a communicator group",
                c.group
            )),
        }
    }

    pub fn read(path: &Path, chunk_size: u64) -> Result<Definitions, Error> {
        let mut chunks = Chunks::open(path, None, chunk_size)?;
        let mut defs = Definitions::default();
        chunks.each_record("definition record", |t, c| defs.record(t, c))?;
        Ok(defs)
    }

    fn record(&mut self, t: u8, c: &mut Cursor) -> Decoded<()> {
        let end = c.record_end("the record length")?;
        match t {
            CLOCK_PROPERTIES => {
                self.clock = ClockProperties {
                    resolution: c.u64c("timer resolution")?,
                    global_offset: c.u64c("global offset")?,
                    trace_length: c.u64c("trace length")?,
                };
                if self.clock.resolution == 0 {
                    return Err(c.fault("the timer resolution is 0 ticks per second"));
                }
            }
            STRING => {
                let id = c.u32c("string id")?;
                let s = c.string("string")?;
                self.strings.insert(id, s);
            }
            ATTRIBUTE => {
                let id = c.u32c("attribute id")?;
                let name = c.u32c("attribute name")?;
                let value_type = c.u8("attribute type")?;
                let description = if c.pos() < end {
                    c.u32c("attribute description")?
                } else {
                    0
                };
                self.attributes.insert(
                    id,
                    Attribute {
                        name,
                        description,
                        value_type,
                    },
                );
            }
            LOCATION_GROUP => {
                let id = c.u32c("location group id")?;
                let g = LocationGroup {
                    name: c.u32c("name")?,
                    group_type: c.u8("type")?,
                    system_tree_parent: c.u32c("parent")?,
                };
                self.location_groups.insert(id, g);
            }
            LOCATION => {
                let l = Location {
                    id: c.u64c("location id")?,
                    name: c.u32c("name")?,
                    location_type: c.u8("type")?,
                    events: c.u64c("number of events")?,
                    group: c.u32c("location group")?,
                };
                self.locations.push(l);
            }
            REGION => {
                let id = c.u32c("region id")?;
                let name = c.u32c("name")?;
                let description = c.u32c("description")?;
                let _region_type = c.u8("region type")?;
                let source_file = c.u32c("source file")?;
                let _begin = c.u32c("begin line")?;
                let _end = c.u32c("end line")?;
                let (canonical_name, role, paradigm) = if c.pos() < end {
                    (c.u32c("canonical name")?, c.u8("role")?, c.u8("paradigm")?)
                } else {
                    (name, 0, 0)
                };
                self.regions.insert(
                    id,
                    Region {
                        name,
                        canonical_name,
                        description,
                        role,
                        paradigm,
                        source_file,
                    },
                );
            }
            GROUP => {
                let id = c.u32c("group id")?;
                let name = c.u32c("name")?;
                let pre12 = c.u8("type")?;
                let n = c.u32c("number of members")?;
                if n as usize > c.remaining() {
                    return Err(c.fault(format!("{n} members do not fit in the record")));
                }
                let members = (0..n)
                    .map(|_| c.u64c("member"))
                    .collect::<Decoded<Vec<u64>>>()?;
                let (group_type, paradigm) = if c.pos() < end {
                    (GroupType::from(c.u8("group type")?), c.u8("paradigm")?)
                } else {
                    // OTF2 1.1's types: 2 MPI group, 3 MPI comm-self, 4 MPI locations.
                    let t = match pre12 {
                        2 => GroupType::CommGroup,
                        3 => GroupType::CommSelf,
                        4 => GroupType::CommLocations,
                        1 => GroupType::Locations,
                        t => GroupType::Other(t),
                    };
                    (t, PARADIGM_MPI)
                };
                self.groups.insert(
                    id,
                    Group {
                        name,
                        group_type,
                        paradigm,
                        members,
                    },
                );
            }
            COMM => {
                let id = c.u32c("communicator id")?;
                let comm = Comm {
                    name: c.u32c("name")?,
                    group: c.u32c("group")?,
                    parent: c.u32c("parent")?,
                };
                self.comms.insert(id, comm);
            }
            t => *self.skipped.entry(t).or_default() += 1,
        }
        if c.pos() > end {
            return Err(c.fault("the fields run past the record's length"));
        }
        c.set_pos(end)
    }
}
