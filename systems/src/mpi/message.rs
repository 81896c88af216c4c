//! The vocabulary of a message: how its data travel ([`Path`]), which of its steps a flow or
//! timer carries ([`Stage`]), and where a rank's buffers live ([`RankEnds`]).

use crate::platform::Endpoint;

/// How a message's data travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    Nvlink,
    GpuDirect,
    HostCopy,
    Host,
}

impl Path {
    pub const ALL: [Path; 4] = [Path::Nvlink, Path::GpuDirect, Path::HostCopy, Path::Host];
    pub fn name(self) -> &'static str {
        match self {
            Path::Nvlink => "nvlink",
            Path::GpuDirect => "gpudirect",
            Path::HostCopy => "hostcopy",
            Path::Host => "host",
        }
    }
}

/// Which step of a message a flow or timer carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Stage {
    Rts = 0,
    Cts = 1,
    Data = 2,
    /// Device-to-host copy at the sender (timer or flow).
    CopyOut = 3,
    /// Host-to-device copy at the receiver.
    CopyIn = 4,
    /// GPUDirect pinning done.
    Pinned = 5,
    /// The copy's fixed delay is paid; its flow starts (switch `pcie_copy_contention`).
    CopyOutFlow = 6,
    CopyInFlow = 7,
}

impl Stage {
    pub fn from_u8(v: u8) -> Stage {
        [
            Stage::Rts,
            Stage::Cts,
            Stage::Data,
            Stage::CopyOut,
            Stage::CopyIn,
            Stage::Pinned,
            Stage::CopyOutFlow,
            Stage::CopyInFlow,
        ][v as usize]
    }

    /// The suffix of the stage's flow ids (`m12.data`).
    pub fn name(self) -> &'static str {
        match self {
            Stage::Rts => "rts",
            Stage::Cts => "cts",
            Stage::Data => "data",
            Stage::CopyOut | Stage::CopyOutFlow => "d2h",
            Stage::CopyIn | Stage::CopyInFlow => "h2d",
            Stage::Pinned => "pin",
        }
    }
}

/// Where a rank's buffers live.
#[derive(Debug, Clone, Copy)]
pub struct RankEnds {
    pub node: u32,
    pub gpu: Endpoint,
    pub host: Endpoint,
}

/// Rank `r`'s name: its timeline row, its entity's name, and the row its flows link.
pub fn rank_row(node: u32, r: usize) -> String {
    format!("node[{node}].rank[{r}]")
}
