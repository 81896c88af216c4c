//! The MPI world of an archive: its locations in rank order, and each communicator's ranks as
//! world ranks, with its own tag space.

use std::collections::HashMap;

use otf2::Definitions;

/// The MPI world: its locations in rank order, and communicators as world ranks.
pub(super) struct World {
    pub(super) locations: Vec<u64>,
    pub(super) world_comm: Option<u32>,
    /// Communicator id -> its ranks as world ranks (None: not an MPI communicator).
    comms: HashMap<u32, Result<Vec<u32>, String>>,
}

impl World {
    pub(super) fn of(defs: &Definitions) -> Result<World, String> {
        let world_group = defs
            .groups
            .values()
            .find(|g| g.group_type == otf2::GroupType::CommLocations)
            .ok_or(
                "the archive defines no MPI world (no COMM_LOCATIONS group): not an MPI trace",
            )?;
        let locations = world_group.members.clone();
        if locations.is_empty() {
            return Err("the MPI world has no ranks".into());
        }
        let rank_of: HashMap<u64, u32> = locations
            .iter()
            .enumerate()
            .map(|(r, &l)| (l, r as u32))
            .collect();
        let mut comms = HashMap::new();
        let mut world_comm = None;
        for &id in defs.comms.keys() {
            let ranks = defs.comm_locations(id).and_then(|locs| {
                locs.iter()
                    .map(|l| {
                        rank_of.get(l).copied().ok_or_else(|| {
                            format!("communicator {id} has location {l}, which is not an MPI rank")
                        })
                    })
                    .collect::<Result<Vec<u32>, String>>()
            });
            if let Ok(r) = &ranks
                && r.len() == locations.len()
                && r.iter().enumerate().all(|(i, &x)| i as u32 == x)
                && world_comm.is_none()
            {
                world_comm = Some(id);
            }
            comms.insert(id, ranks);
        }
        Ok(World {
            locations,
            world_comm,
            comms,
        })
    }

    pub(super) fn ranks(&self, comm: u32) -> Result<&Vec<u32>, String> {
        match self.comms.get(&comm) {
            Some(Ok(r)) => Ok(r),
            Some(Err(e)) => Err(e.clone()),
            None => Err(format!("communicator {comm} is not defined")),
        }
    }

    /// The world rank of rank `r` of communicator `comm`.
    pub(super) fn world_rank(&self, comm: u32, r: u32) -> Result<u32, String> {
        let ranks = self.ranks(comm)?;
        ranks.get(r as usize).copied().ok_or_else(|| {
            format!(
                "rank {r} is not in communicator {comm} ({} ranks)",
                ranks.len()
            )
        })
    }

    /// A tag in the communicator's own tag space.
    pub(super) fn tag(&self, comm: u32, tag: u32) -> i64 {
        if Some(comm) == self.world_comm {
            tag as i64
        } else {
            ((comm as i64 + 1) << 32) | tag as i64
        }
    }
}
