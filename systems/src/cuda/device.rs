//! A GPU, its host thread and its streams as plain data ([`Gpus`]), and what the CUDA leaves
//! ask of the world ([`Effect`]), in the order they ask it.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use hetsim_engine::record::ResId;
use hetsim_schema::SimTime;
use hetsim_schema::cuda::{CudaOp, CudaSpec, Kernel, NcclCall};

use crate::nccl::CollectiveRecord;
use crate::platform::Endpoint;

/// Something a stream does, in order.
#[derive(Debug, Clone)]
pub enum Work {
    Kernel {
        name: Arc<str>,
        time: SimTime,
    },
    Copy {
        from: Endpoint,
        to: Endpoint,
        bytes: f64,
    },
    Record(u32),
    /// Waits until the event has completed `target` records.
    Wait {
        event: u32,
        target: u32,
    },
    /// The device's n-th NCCL call (n numbers the collective instance).
    Nccl(u32),
}

#[derive(Debug, Clone)]
pub struct Item {
    pub work: Work,
    /// When the host's enqueueing call has returned.
    pub ready_at: SimTime,
}

#[derive(Debug, Default)]
pub struct Stream {
    pub queue: VecDeque<Item>,
    pub started: bool,
    pub since: SimTime,
    pub row: Option<ResId>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostState {
    Ready,
    SyncStream(u32),
    SyncDevice,
    /// The stream holds [`MAX_PENDING`] items: the enqueueing call blocks until one ends.
    QueueFull(u32),
    Done,
}

/// Items a stream holds before a call that enqueues on it blocks the host: CUDA's launch
/// queue holds about a thousand pending launches (the figure usually measured; the driver
/// does not document it). Besides fidelity, it bounds what a long program keeps queued.
pub const MAX_PENDING: usize = 1024;

#[derive(Debug, Default, Clone, Copy)]
pub struct EventRt {
    pub enqueued: u32,
    pub completed: u32,
}

/// One GPU and its host thread.
#[derive(Debug)]
pub struct Device {
    pub gpu: Endpoint,
    pub name: String,
    pub host_at: SimTime,
    pub pc: usize,
    pub pass: u32,
    pub state: HostState,
    pub streams: Vec<Stream>,
    pub events: Vec<EventRt>,
    pub event_ids: BTreeMap<String, u32>,
    pub graphs: BTreeMap<String, Vec<CudaOp>>,
    /// Launches of the current `Launch` op still to make: the host makes one per step (a
    /// launch of a million replays is a counter, not a million queued items at once).
    pub launches_left: u32,
    pub nccl_calls: u32,
    pub copies_running: u32,
    pub copy_queue: VecDeque<u32>,
    pub totals: DeviceTotals,
}

/// What a GPU did over the run.
#[derive(Debug, Clone, Default)]
pub struct DeviceTotals {
    pub gpu: String,
    pub kernel_s: f64,
    pub copy_s: f64,
    pub nccl_s: f64,
    pub kernels: u64,
    pub copies: u64,
    /// Host times noted by `Mark`, in seconds, in program order.
    pub marks: Vec<(String, f64)>,
    pub end_s: f64,
}

/// A stream interval that ended: (row, state, label, start, end).
pub type Finished = (ResId, Arc<str>, Option<String>, SimTime, SimTime);

/// What the leaves ask of the world.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Device `dev`'s host thread goes on at `at`.
    HostWake { at: SimTime, dev: u32 },
    /// The head item of a stream is done at `at` (`done`), or its enqueueing call returns
    /// then (not `done`).
    StreamTimer {
        at: SimTime,
        dev: u32,
        stream: u32,
        done: bool,
    },
    /// The copy at the head of a stream starts: a flow from `from` to `to`.
    Copy {
        dev: u32,
        stream: u32,
        from: Endpoint,
        to: Endpoint,
        bytes: f64,
    },
    /// A device's stream reaches collective `k`: the device arrives there.
    Nccl { k: u32 },
}

/// Every GPU with its host thread and streams, the collectives they call, and the work
/// lists of a step.
#[derive(Debug, Default)]
pub struct Gpus {
    pub spec: Option<CudaSpec>,
    pub devs: Vec<Device>,
    /// The calls of each collective (the k-th NCCL call of every device).
    pub colls: Vec<Vec<NcclCall>>,
    pub done_colls: Vec<CollectiveRecord>,
    /// Work lists: devices whose host may go on, (device, stream) pairs that may advance.
    pub hosts: Vec<u32>,
    pub streams: Vec<(u32, u32)>,
    pub gpu_speed: f64,
    pub gpu_mem_bw: f64,
    /// Stream intervals that ended this step.
    pub finished: Vec<Finished>,
    pub fx: Vec<Effect>,
}

impl Gpus {
    pub fn spec(&self) -> &CudaSpec {
        self.spec.as_ref().expect("set up")
    }

    /// Hosts enqueue work and streams finishing wake hosts: go round until both are quiet.
    pub fn run_hosts_and_streams(&mut self, now: SimTime) {
        while !self.hosts.is_empty() || !self.streams.is_empty() {
            for d in std::mem::take(&mut self.hosts) {
                self.run_host(d, now);
            }
            let mut work = std::mem::take(&mut self.streams);
            work.sort_unstable();
            work.dedup();
            for (d, s) in work {
                self.advance_stream(d, s, now);
            }
        }
    }

    /// The copy at the head of `stream` of `dev` is over; a stream waiting for a copy engine
    /// may go.
    pub fn copy_done(&mut self, dev: u32, stream: u32, now: SimTime) {
        let d = &mut self.devs[dev as usize];
        d.copies_running -= 1;
        if let Some(s) = d.copy_queue.pop_front() {
            self.streams.push((dev, s));
        }
        self.finish_head(dev, stream, now);
        self.streams.push((dev, stream));
    }

    /// A timed item is over (`done`), or an item's enqueueing call has returned.
    pub fn timer(&mut self, dev: u32, stream: u32, done: bool, now: SimTime) {
        if done {
            self.finish_head(dev, stream, now);
        }
        self.streams.push((dev, stream));
    }

    /// Per-GPU totals.
    pub fn totals(&self) -> Vec<DeviceTotals> {
        self.devs.iter().map(|d| d.totals.clone()).collect()
    }

    /// Hosts and streams that have not finished (`arrived(k)`: devices at collective `k`).
    pub fn stuck(&self, arrived: impl Fn(u32) -> u32) -> Vec<String> {
        let mut out = Vec::new();
        for d in &self.devs {
            if d.state == HostState::Done {
                continue;
            }
            let heads: Vec<String> = d
                .streams
                .iter()
                .enumerate()
                .filter_map(|(i, s)| {
                    s.queue.front().map(|h| {
                        let what = match &h.work {
                            Work::Wait { event, target } => {
                                let name = d
                                    .event_ids
                                    .iter()
                                    .find(|(_, e)| **e == *event)
                                    .map_or("?", |(n, _)| n.as_str());
                                format!("waits for event `{name}` (record {target}, never reached)")
                            }
                            Work::Nccl(k) => format!(
                                "waits in NCCL call {k} for the other GPUs ({} of {} arrived)",
                                arrived(*k),
                                self.devs.len()
                            ),
                            other => format!("{other:?}"),
                        };
                        format!("stream {i} {what}")
                    })
                })
                .collect();
            out.push(format!(
                "{}: host at op {} ({:?}); {}",
                d.name,
                d.pc,
                d.state,
                if heads.is_empty() {
                    "streams empty".to_string()
                } else {
                    heads.join("; ")
                }
            ));
        }
        out
    }
}

pub fn event_id(dev: &mut Device, name: &str) -> u32 {
    if let Some(&e) = dev.event_ids.get(name) {
        return e;
    }
    let e = dev.events.len() as u32;
    dev.events.push(EventRt::default());
    dev.event_ids.insert(name.to_string(), e);
    e
}

pub fn secs(s: f64) -> SimTime {
    SimTime::from_secs_saturating(s)
}

/// A kernel's duration: its `time`, or its work against the GPU's peaks (flops over the
/// speed, bytes over the memory bandwidth, whichever takes longer: a roofline).
pub fn kernel_secs(k: &Kernel, speed: f64, mem_bw: f64) -> f64 {
    k.time.map(|t| t.0.as_secs_f64()).unwrap_or_else(|| {
        let f = k.flops.unwrap_or(0.0) / speed;
        let b = k.bytes.map_or(0.0, |b| b.0) / mem_bw;
        f.max(b)
    })
}

/// The stream a host call enqueues on (a graph launch: its launch stream), if it enqueues.
pub fn enqueues_on(op: &CudaOp) -> Option<u32> {
    match op {
        CudaOp::Kernel(k) => Some(k.stream),
        CudaOp::Copy(c) => Some(c.stream),
        CudaOp::Nccl(c) => Some(c.stream),
        CudaOp::Record { stream, .. }
        | CudaOp::Wait { stream, .. }
        | CudaOp::Group { stream, .. }
        | CudaOp::Launch { stream, .. } => Some(*stream),
        CudaOp::StreamSync(_)
        | CudaOp::DeviceSync
        | CudaOp::Host(_)
        | CudaOp::Mark(_)
        | CudaOp::Capture { .. } => None,
    }
}
