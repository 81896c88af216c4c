//! The compute plugin: CUDA-like streams per GPU, driven by one host thread per GPU, with NCCL
//! collectives as kernels on the streams.
//!
//! Each host thread runs its program: every call that enqueues work costs `launch_overhead` of
//! host time, after which the work is visible to the GPU; synchronisations block the host
//! until the stream (or every stream) is empty. A stream runs its items one after another:
//! kernels take their modelled time; copies are flows on the platform's PCIe or NVLink links,
//! at most `copy_engines` at once per GPU; `Record` completes an event, `Wait` holds the
//! stream until the event's last record enqueued before it has completed; an NCCL call waits
//! at the head of each member's stream until every member has reached it (NCCL kernels spin
//! on their peers), then runs as planned by [`crate::nccl`] and releases all streams at once.
//! A CUDA graph is a captured list of items; a launch costs one overhead and runs them in order
//! on the launching stream.
//! Simplified: kernels on different streams overlap without slowing each other (no SM
//! sharing), captured graphs run on one stream, launches are not limited by queue depth.

use bevy_app::{App, Plugin};
use bevy_ecs::prelude::*;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use hetsim_components::SimTime;
use hetsim_components::cuda::{Coll, CopyKind, CudaOp, CudaSpec, NcclCall};
use hetsim_components::scenario::PlatformSpec;
use hetsim_engine::record::{Interval, Recorder, ResId, ResourceKind};
use hetsim_engine::{
    Calendar, Clock, Inbox, SimAppExt, SimErrors, SimEvent, SimSet, SimStartup, SimStep, StartupSet,
};

use crate::nccl::{self, Collectives, Reach};
use crate::network::{FlowRequest, Launch, Start};
use crate::platform::{Endpoint, PlatformConfig, Topology};

/// The CUDA workload to run (inserted by whoever assembles the app).
#[derive(Resource, Debug, Clone)]
pub struct CudaConfig(pub CudaSpec);

/// Something a stream does, in order.
#[derive(Debug, Clone)]
enum Work {
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
struct Item {
    work: Work,
    /// When the host's enqueueing call has returned.
    ready_at: SimTime,
}

#[derive(Debug, Default)]
struct Stream {
    queue: VecDeque<Item>,
    started: bool,
    since: SimTime,
    row: Option<ResId>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HostState {
    Ready,
    SyncStream(u32),
    SyncDevice,
    Done,
}

#[derive(Debug, Default, Clone, Copy)]
struct EventRt {
    enqueued: u32,
    completed: u32,
}

/// One GPU and its host thread.
#[derive(Debug)]
struct Device {
    gpu: Endpoint,
    name: String,
    host_at: SimTime,
    pc: usize,
    pass: u32,
    state: HostState,
    streams: Vec<Stream>,
    events: Vec<EventRt>,
    event_ids: BTreeMap<String, u32>,
    graphs: BTreeMap<String, Vec<CudaOp>>,
    nccl_calls: u32,
    copies_running: u32,
    copy_queue: VecDeque<u32>,
    totals: DeviceTotals,
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

/// One NCCL call across the communicator.
#[derive(Debug, Clone)]
pub struct CollectiveRecord {
    pub op: String,
    pub bytes: f64,
    pub algo: String,
    pub proto: String,
    pub channels: u32,
    pub start_s: f64,
    pub end_s: f64,
    /// NCCL's own cost-model prediction, for comparison with the simulated time.
    pub predicted_us: f64,
}

/// A stream interval that ended: (row, state, label, start, end).
type Finished = (ResId, Arc<str>, Option<String>, SimTime, SimTime);

/// Totals published at the end of a run (the output crate reads this).
#[derive(Resource, Debug, Clone, Default)]
pub struct CudaReport {
    pub devices: Vec<DeviceTotals>,
    pub collectives: Vec<CollectiveRecord>,
}

/// The state of every GPU, host thread and collective.
#[derive(Resource, Default)]
pub struct Cuda {
    spec: Option<CudaSpec>,
    devs: Vec<Device>,
    /// The devices' communicator in the NCCL plugin, if the program calls NCCL.
    comm: Option<u32>,
    /// The calls of each collective (the k-th NCCL call of every device).
    colls: Vec<Vec<NcclCall>>,
    done_colls: Vec<CollectiveRecord>,
    /// Work lists: devices whose host may go on, (device, stream) pairs that may advance.
    hosts: Vec<u32>,
    streams: Vec<(u32, u32)>,
    gpu_speed: f64,
    gpu_mem_bw: f64,
    /// Stream intervals that ended this step.
    finished: Vec<Finished>,
}

/// A stream item's time is up (`done`) or its enqueueing call has returned (not `done`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct StreamTimer {
    dev: u32,
    stream: u32,
    done: bool,
}

impl SimEvent for StreamTimer {
    const NAME: &'static str = "cuda.stream_timer";
    fn pack(&self) -> (Entity, u64) {
        let arg = ((self.dev as u64) << 32) | ((self.stream as u64) << 1) | self.done as u64;
        (Entity::PLACEHOLDER, arg)
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        StreamTimer {
            dev: (arg >> 32) as u32,
            stream: ((arg & 0xffff_ffff) >> 1) as u32,
            done: arg & 1 == 1,
        }
    }
}

/// A host thread's busy time is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct HostWake(u32);

impl SimEvent for HostWake {
    const NAME: &'static str = "cuda.host_wake";
    fn pack(&self) -> (Entity, u64) {
        (Entity::PLACEHOLDER, self.0 as u64)
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        HostWake(arg as u32)
    }
}

/// A collective's transfers and fill are over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct CollDone(u32);

impl SimEvent for CollDone {
    const NAME: &'static str = "cuda.collective_done";
    fn pack(&self) -> (Entity, u64) {
        (Entity::PLACEHOLDER, self.0 as u64)
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        CollDone(arg as u32)
    }
}

/// The flow of the copy at the head of a stream has delivered its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct CopyEnd {
    dev: u32,
    stream: u32,
}

impl SimEvent for CopyEnd {
    const NAME: &'static str = "cuda.copy_end";
    fn pack(&self) -> (Entity, u64) {
        (
            Entity::PLACEHOLDER,
            ((self.dev as u64) << 32) | self.stream as u64,
        )
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        CopyEnd {
            dev: (arg >> 32) as u32,
            stream: arg as u32,
        }
    }
}

pub struct CudaPlugin;

impl Plugin for CudaPlugin {
    fn build(&self, app: &mut App) {
        app.add_sim_event::<StreamTimer>()
            .add_sim_event::<HostWake>()
            .add_sim_event::<CollDone>()
            .add_sim_event::<CopyEnd>()
            .describe_model(
                "cuda",
                "one host thread per GPU enqueues kernels (a duration, or flops and bytes against the GPU's peaks), copies (flows on PCIe/NVLink, limited by copy engines), events and NCCL calls on in-order streams, with a launch overhead per call; synchronisations block the host; CUDA graphs replay captured work for one launch overhead. Simplified: concurrent kernels do not share SMs, graphs run on one stream",
            )
            .init_resource::<Cuda>()
            .add_systems(SimStartup, setup_devices.in_set(StartupSet::Workload))
            .add_systems(
                SimStep,
                (
                    finish_timed_items,
                    finish_flows,
                    finish_collectives,
                    wake_hosts,
                    run_hosts_and_streams,
                )
                    .chain()
                    .in_set(SimSet::Compute)
                    .run_if(resource_exists::<CudaConfig>),
            )
            .add_systems(
                SimStep,
                record_stream_intervals
                    .in_set(SimSet::Record)
                    .run_if(resource_exists::<CudaConfig>),
            )
            .add_systems(hetsim_engine::SimFinish, publish_report)
            .add_stall_check(stuck_devices);
    }
}

fn setup_devices(world: &mut World) {
    let Some(spec) = world.get_resource::<CudaConfig>().map(|c| c.0.clone()) else {
        return;
    };
    if let Err(e) = setup(world, spec) {
        world.resource_mut::<SimErrors>().0.push(e);
    }
}

fn setup(world: &mut World, spec: CudaSpec) -> Result<(), String> {
    let PlatformSpec::Cluster(cluster) = world.resource::<PlatformConfig>().0.clone() else {
        return Err("workload.Cuda: needs a Cluster platform (nodes of GPUs)".into());
    };
    let total = cluster.nodes * cluster.node.gpus;
    let n = spec.gpus.unwrap_or(total);
    if n == 0 || n > total {
        return Err(format!(
            "workload.Cuda.gpus: expected 1 to {total} (the platform's GPUs), got {n}"
        ));
    }
    if spec.copy_engines == 0 {
        return Err("workload.Cuda.copy_engines: expected at least 1".into());
    }
    check_program(&spec.program, "workload.Cuda.program", false)?;
    check_forced_algo(&spec)?;
    let per = cluster.node.gpus;
    let members: Vec<Endpoint> = (0..n)
        .map(|i| Endpoint::Gpu {
            node: i / per,
            gpu: i % per,
        })
        .collect();
    let uses_nccl = uses_nccl(&spec.program);
    let comm = if uses_nccl {
        let mut topo = world.resource_mut::<Topology>();
        let comm = nccl::Comm::new(
            members.clone(),
            &spec.nccl,
            &mut topo,
            &cluster.node.gpu.name,
        )
        .map_err(|e| format!("workload.Cuda.nccl: {e}"))?;
        let rows = members.iter().map(device_name).collect();
        Some(
            world
                .resource_mut::<Collectives>()
                .register(comm, rows, CollDone),
        )
    } else {
        None
    };
    let streams = max_stream(&spec.program) + 1;
    let recording = world.resource::<Recorder>().is_on();
    let mut devs = Vec::with_capacity(n as usize);
    for &gpu in &members {
        let name = device_name(&gpu);
        let mut dev = Device {
            gpu,
            name: name.clone(),
            host_at: SimTime::ZERO,
            pc: 0,
            pass: 0,
            state: HostState::Ready,
            streams: (0..streams).map(|_| Stream::default()).collect(),
            events: Vec::new(),
            event_ids: BTreeMap::new(),
            graphs: BTreeMap::new(),
            nccl_calls: 0,
            copies_running: 0,
            copy_queue: VecDeque::new(),
            totals: DeviceTotals {
                gpu: name.clone(),
                ..Default::default()
            },
        };
        if recording {
            let mut rec = world.resource_mut::<Recorder>();
            for (s, st) in dev.streams.iter_mut().enumerate() {
                st.row = Some(rec.resource(ResourceKind::Stream, &format!("{name}.stream[{s}]")));
            }
        }
        devs.push(dev);
    }
    let mut cal = world.resource_mut::<Calendar>();
    for d in 0..n {
        cal.schedule(SimTime::ZERO, HostWake(d));
    }
    let mut cuda = world.resource_mut::<Cuda>();
    cuda.gpu_speed = cluster.node.gpu.speed.0;
    cuda.gpu_mem_bw = cluster.node.gpu.memory_bandwidth.0;
    cuda.devs = devs;
    cuda.comm = comm;
    cuda.spec = Some(spec);
    Ok(())
}

/// A device's name and timeline rows' prefix: `node[N].gpu[G]`.
fn device_name(gpu: &Endpoint) -> String {
    match *gpu {
        Endpoint::Gpu { node, gpu } => format!("node[{node}].gpu[{gpu}]"),
        _ => unreachable!("devices are GPUs"),
    }
}

/// Checks what the schema cannot: kernels with a duration model, graph contents.
fn check_program(ops: &[CudaOp], path: &str, in_graph: bool) -> Result<(), String> {
    for (i, op) in ops.iter().enumerate() {
        let at = format!("{path}[{i}]");
        match op {
            CudaOp::Kernel(k) => {
                if k.time.is_none() && k.flops.is_none() && k.bytes.is_none() {
                    return Err(format!(
                        "{at}.Kernel: expected `time`, or `flops` and/or `bytes`, to give its duration"
                    ));
                }
                if k.flops.is_some_and(|f| !(f >= 0.0 && f.is_finite())) {
                    return Err(format!("{at}.Kernel.flops: expected a non-negative number"));
                }
            }
            CudaOp::Capture { ops, .. } => {
                if in_graph {
                    return Err(format!("{at}.Capture: captures do not nest"));
                }
                check_program(ops, &format!("{at}.Capture.ops"), true)?;
            }
            CudaOp::StreamSync(_)
            | CudaOp::DeviceSync
            | CudaOp::Host(_)
            | CudaOp::Mark(_)
            | CudaOp::Launch { .. }
                if in_graph =>
            {
                return Err(format!(
                    "{at}: a graph captures stream work only (Kernel, Copy, Record, Wait, Nccl, Group)"
                ));
            }
            CudaOp::Group { calls, .. } if calls.is_empty() => {
                return Err(format!("{at}.Group.calls: expected at least one call"));
            }
            _ => {}
        }
    }
    Ok(())
}

/// A forced algorithm must run every collective the program calls (NCCL_ALGO=Tree has no
/// Broadcast, for instance).
fn check_forced_algo(spec: &CudaSpec) -> Result<(), String> {
    let Some(algo) = spec.nccl.algo else {
        return Ok(());
    };
    let mut all = Vec::new();
    nccl_calls(&spec.program, &mut all);
    for c in all {
        let p2p = matches!(c.op, Coll::AllToAll | Coll::SendRecv);
        if !p2p && !nccl::tuning::supported(c.op, algo) {
            return Err(format!(
                "workload.Cuda.nccl.algo: NCCL runs {} with the ring only, not {}",
                c.op.name(),
                algo.name()
            ));
        }
    }
    Ok(())
}

fn nccl_calls(ops: &[CudaOp], out: &mut Vec<NcclCall>) {
    for op in ops {
        match op {
            CudaOp::Nccl(c) => out.push(c.clone()),
            CudaOp::Group { calls, .. } => out.extend(calls.iter().cloned()),
            CudaOp::Capture { ops, .. } => nccl_calls(ops, out),
            _ => {}
        }
    }
}

fn uses_nccl(ops: &[CudaOp]) -> bool {
    let mut calls = Vec::new();
    nccl_calls(ops, &mut calls);
    !calls.is_empty()
}

fn max_stream(ops: &[CudaOp]) -> u32 {
    ops.iter()
        .map(|op| match op {
            CudaOp::Kernel(k) => k.stream,
            CudaOp::Copy(c) => c.stream,
            CudaOp::Record { stream, .. }
            | CudaOp::Wait { stream, .. }
            | CudaOp::StreamSync(stream)
            | CudaOp::Group { stream, .. }
            | CudaOp::Launch { stream, .. } => *stream,
            CudaOp::Nccl(c) => c.stream,
            CudaOp::Capture { ops, .. } => max_stream(ops),
            _ => 0,
        })
        .max()
        .unwrap_or(0)
}

/// Everything the systems need to start work.
#[derive(bevy_ecs::system::SystemParam)]
struct Ctx<'w, 's> {
    cal: ResMut<'w, Calendar>,
    clock: Res<'w, Clock>,
    topo: ResMut<'w, Topology>,
    errors: ResMut<'w, SimErrors>,
    colls: ResMut<'w, Collectives>,
    launch: Launch<'w, 's>,
}

fn finish_timed_items(mut inbox: ResMut<Inbox<StreamTimer>>, mut cuda: ResMut<Cuda>, cx: Ctx) {
    for t in inbox.drain() {
        if t.done {
            cuda.finish_head(t.dev, t.stream, cx.clock.now);
        }
        cuda.streams.push((t.dev, t.stream));
    }
}

fn finish_flows(mut inbox: ResMut<Inbox<CopyEnd>>, mut cuda: ResMut<Cuda>, clock: Res<Clock>) {
    for CopyEnd { dev, stream } in inbox.drain() {
        let d = &mut cuda.devs[dev as usize];
        d.copies_running -= 1;
        if let Some(s) = d.copy_queue.pop_front() {
            cuda.streams.push((dev, s));
        }
        cuda.finish_head(dev, stream, clock.now);
        cuda.streams.push((dev, stream));
    }
}

fn finish_collectives(mut inbox: ResMut<Inbox<CollDone>>, mut cuda: ResMut<Cuda>, cx: Ctx) {
    for CollDone(k) in inbox.drain() {
        cuda.end_collective(k, cx.clock.now, &cx.colls);
    }
}

fn wake_hosts(mut inbox: ResMut<Inbox<HostWake>>, mut cuda: ResMut<Cuda>) {
    for HostWake(d) in inbox.drain() {
        cuda.hosts.push(d);
    }
}

fn run_hosts_and_streams(mut cuda: ResMut<Cuda>, mut cx: Ctx) {
    // Hosts enqueue work and streams finishing wake hosts, so go round until both are quiet.
    while !cuda.hosts.is_empty() || !cuda.streams.is_empty() {
        for d in std::mem::take(&mut cuda.hosts) {
            cuda.run_host(d, &mut cx);
        }
        let mut work = std::mem::take(&mut cuda.streams);
        work.sort_unstable();
        work.dedup();
        for (d, s) in work {
            cuda.advance_stream(d, s, &mut cx);
        }
    }
}

fn secs(s: f64) -> SimTime {
    SimTime::from_secs_saturating(s)
}

impl Cuda {
    fn spec(&self) -> &CudaSpec {
        self.spec.as_ref().expect("set up")
    }

    /// Runs device `d`'s host thread until it blocks, waits out its own time, or ends.
    fn run_host(&mut self, d: u32, cx: &mut Ctx) {
        let now = cx.clock.now;
        let overhead = self.spec().launch_overhead.0;
        let repeat = self.spec().repeat;
        loop {
            let dev = &mut self.devs[d as usize];
            match dev.state {
                HostState::Done => return,
                HostState::SyncStream(s) if !dev.streams[s as usize].queue.is_empty() => return,
                HostState::SyncDevice if dev.streams.iter().any(|s| !s.queue.is_empty()) => {
                    return;
                }
                _ => dev.state = HostState::Ready,
            }
            if dev.host_at > now {
                cx.cal.schedule(dev.host_at, HostWake(d));
                return;
            }
            dev.host_at = now;
            if dev.pc >= self.spec.as_ref().unwrap().program.len() {
                dev.pass += 1;
                dev.pc = 0;
                if dev.pass >= repeat {
                    dev.state = HostState::Done;
                    dev.totals.end_s = now.as_secs_f64();
                    return;
                }
                continue;
            }
            let op = self.spec.as_ref().unwrap().program[dev.pc].clone();
            dev.pc += 1;
            match op {
                CudaOp::StreamSync(s) => dev.state = HostState::SyncStream(s),
                CudaOp::DeviceSync => dev.state = HostState::SyncDevice,
                CudaOp::Host(t) => dev.host_at = now.saturating_add(t.0),
                CudaOp::Mark(name) => dev.totals.marks.push((name, now.as_secs_f64())),
                CudaOp::Capture { graph, ops } => {
                    dev.graphs.insert(graph, ops);
                }
                CudaOp::Launch {
                    stream,
                    graph,
                    times,
                } => {
                    let Some(ops) = dev.graphs.get(&graph).cloned() else {
                        cx.errors.0.push(format!(
                            "{}: launch of graph `{graph}` that was never captured",
                            dev.name
                        ));
                        dev.state = HostState::Done;
                        return;
                    };
                    for _ in 0..times {
                        let at = self.devs[d as usize].host_at.saturating_add(overhead);
                        self.devs[d as usize].host_at = at;
                        for op in &ops {
                            self.enqueue(d, op, Some(stream), at);
                        }
                    }
                }
                op => {
                    let at = dev.host_at.saturating_add(match op {
                        CudaOp::Record { .. } | CudaOp::Wait { .. } => SimTime::ZERO,
                        _ => overhead,
                    });
                    self.devs[d as usize].host_at = at;
                    self.enqueue(d, &op, None, at);
                }
            }
        }
    }

    /// Puts the work of one call on a stream (`on`: the graph launch's stream).
    fn enqueue(&mut self, d: u32, op: &CudaOp, on: Option<u32>, at: SimTime) {
        let n = self.devs.len() as u32;
        let (speed, mem_bw) = (self.gpu_speed, self.gpu_mem_bw);
        let dev = &mut self.devs[d as usize];
        let (stream, work) = match op {
            CudaOp::Kernel(k) => {
                let t = k.time.map(|t| t.0.as_secs_f64()).unwrap_or_else(|| {
                    let f = k.flops.unwrap_or(0.0) / speed;
                    let b = k.bytes.map_or(0.0, |b| b.0) / mem_bw;
                    f.max(b)
                });
                (
                    k.stream,
                    Work::Kernel {
                        name: k.name.as_str().into(),
                        time: secs(t),
                    },
                )
            }
            CudaOp::Copy(c) => {
                let Endpoint::Gpu { node, .. } = dev.gpu else {
                    unreachable!()
                };
                let host = Endpoint::Host { node };
                let (from, to) = match c.kind {
                    CopyKind::HostToDevice => (host, dev.gpu),
                    CopyKind::DeviceToHost => (dev.gpu, host),
                    CopyKind::Peer(off) => {
                        let j = (d as i64 + off as i64).rem_euclid(n as i64) as u32;
                        (dev.gpu, self.devs[j as usize].gpu)
                    }
                };
                (
                    c.stream,
                    Work::Copy {
                        from,
                        to,
                        bytes: c.bytes.0,
                    },
                )
            }
            CudaOp::Record { stream, event } => {
                let e = event_id(dev, event);
                dev.events[e as usize].enqueued += 1;
                (*stream, Work::Record(e))
            }
            CudaOp::Wait { stream, event } => {
                let e = event_id(dev, event);
                let target = dev.events[e as usize].enqueued;
                (*stream, Work::Wait { event: e, target })
            }
            CudaOp::Nccl(call) => (call.stream, self.nccl(d, vec![call.clone()])),
            CudaOp::Group { stream, calls } => (*stream, self.nccl(d, calls.clone())),
            _ => unreachable!("host-only ops are handled by the host"),
        };
        let stream = on.unwrap_or(stream);
        let q = &mut self.devs[d as usize].streams[stream as usize].queue;
        q.push_back(Item { work, ready_at: at });
        if q.len() == 1 {
            self.streams.push((d, stream));
        }
    }

    /// Registers device `d`'s next NCCL call: the k-th call of every device is one collective.
    fn nccl(&mut self, d: u32, calls: Vec<NcclCall>) -> Work {
        let dev = &mut self.devs[d as usize];
        let k = dev.nccl_calls;
        dev.nccl_calls += 1;
        if self.colls.len() <= k as usize {
            self.colls.push(calls);
        }
        Work::Nccl(k)
    }

    /// Starts what can start at the head of stream `s` of device `d`, and goes on past items
    /// that finish at once.
    fn advance_stream(&mut self, d: u32, s: u32, cx: &mut Ctx) {
        let now = cx.clock.now;
        loop {
            let engines = self.spec().copy_engines;
            let dev = &mut self.devs[d as usize];
            let st = &mut dev.streams[s as usize];
            let Some(head) = st.queue.front() else {
                if matches!(dev.state, HostState::SyncStream(x) if x == s)
                    || dev.state == HostState::SyncDevice
                {
                    self.hosts.push(d);
                }
                return;
            };
            if st.started {
                return;
            }
            if head.ready_at > now {
                cx.cal.schedule(
                    head.ready_at,
                    StreamTimer {
                        dev: d,
                        stream: s,
                        done: false,
                    },
                );
                return;
            }
            match head.work.clone() {
                Work::Kernel { time, .. } => {
                    st.started = true;
                    st.since = now;
                    cx.cal.schedule(
                        now.saturating_add(time),
                        StreamTimer {
                            dev: d,
                            stream: s,
                            done: true,
                        },
                    );
                    return;
                }
                Work::Copy { from, to, bytes } => {
                    if dev.copies_running >= engines {
                        if !dev.copy_queue.contains(&s) {
                            dev.copy_queue.push_back(s);
                        }
                        return;
                    }
                    dev.copies_running += 1;
                    st.started = true;
                    st.since = now;
                    let name = dev.name.clone();
                    match cx.topo.route(from, to) {
                        Ok(route) => {
                            let req = FlowRequest {
                                id: format!("{name}.copy"),
                                src: name.clone(),
                                dst: name,
                                route,
                                bytes,
                                start: Start::At(now),
                                cap: None,
                            };
                            cx.launch
                                .start_for(&mut cx.cal, req, CopyEnd { dev: d, stream: s });
                        }
                        Err(e) => cx.errors.0.push(format!("{name}: copy: {e}")),
                    }
                    return;
                }
                Work::Record(e) => {
                    dev.events[e as usize].completed += 1;
                    st.queue.pop_front();
                    // Streams of this device waiting on the event may go on.
                    for other in 0..dev.streams.len() as u32 {
                        if other != s {
                            self.streams.push((d, other));
                        }
                    }
                }
                Work::Wait { event, target } => {
                    if dev.events[event as usize].completed < target {
                        return;
                    }
                    st.queue.pop_front();
                }
                Work::Nccl(k) => {
                    st.started = true;
                    st.since = now;
                    let c = self.comm.expect("a communicator for NCCL calls");
                    let mut reach = Reach {
                        now,
                        cal: &mut cx.cal,
                        topo: &mut cx.topo,
                        launch: &mut cx.launch,
                    };
                    if let Err(e) = cx.colls.arrive(c, k, &self.colls[k as usize], &mut reach) {
                        cx.errors.0.push(format!("workload.Cuda: {e}"));
                    }
                    return;
                }
            }
        }
    }

    /// Collective `k` is over: every member's stream goes on.
    fn end_collective(&mut self, k: u32, now: SimTime, colls: &Collectives) {
        let comm = self.comm.expect("a communicator");
        let c = colls.collective(comm, k).expect("arrived");
        let plan = c.plan.as_ref().expect("planned");
        self.done_colls.push(CollectiveRecord {
            op: c.name(),
            bytes: c.calls.iter().map(|c| c.bytes.0).sum(),
            algo: plan.algo.name().into(),
            proto: plan.proto.name().into(),
            channels: colls.comm(comm).tune.channels,
            start_s: c.start.as_secs_f64(),
            end_s: now.as_secs_f64(),
            predicted_us: plan.predicted_us,
        });
        for d in 0..self.devs.len() as u32 {
            let s = self.devs[d as usize]
                .streams
                .iter()
                .position(|st| {
                    st.started && matches!(st.queue.front(), Some(Item { work: Work::Nccl(x), .. }) if *x == k)
                })
                .expect("every member waits at the collective") as u32;
            self.finish_head(d, s, now);
            self.streams.push((d, s));
        }
    }

    /// The head item of a stream is done: account for it and pop it.
    fn finish_head(&mut self, d: u32, s: u32, now: SimTime) {
        let dev = &mut self.devs[d as usize];
        let st = &mut dev.streams[s as usize];
        let Some(item) = st.queue.pop_front() else {
            return;
        };
        st.started = false;
        let busy = now.saturating_sub(st.since).as_secs_f64();
        // Kernels are coloured by name, so that a timeline shows what ran.
        let (state, label): (Arc<str>, Option<String>) = match &item.work {
            Work::Kernel { name, .. } => {
                dev.totals.kernel_s += busy;
                dev.totals.kernels += 1;
                (name.clone(), None)
            }
            Work::Copy { .. } => {
                dev.totals.copy_s += busy;
                dev.totals.copies += 1;
                ("copy".into(), None)
            }
            Work::Nccl(k) => {
                dev.totals.nccl_s += busy;
                let calls = &self.colls[*k as usize];
                let name = calls.iter().map(|c| c.op.name()).collect::<Vec<_>>();
                ("nccl".into(), Some(name.join("+")))
            }
            _ => return,
        };
        if let Some(row) = st.row {
            self.finished.push((row, state, label, st.since, now));
        }
    }
}

/// Hands the stream intervals that ended this step to the recorder.
fn record_stream_intervals(mut cuda: ResMut<Cuda>, mut rec: ResMut<Recorder>) {
    for (row, state, label, start, end) in cuda.finished.drain(..) {
        let state = rec.name_id(&state);
        let label = label.map(|l| rec.name_id(&l));
        rec.interval(Interval {
            resource: row,
            state,
            label,
            start,
            end,
        });
    }
}

fn event_id(dev: &mut Device, name: &str) -> u32 {
    if let Some(&e) = dev.event_ids.get(name) {
        return e;
    }
    let e = dev.events.len() as u32;
    dev.events.push(EventRt::default());
    dev.event_ids.insert(name.to_string(), e);
    e
}

/// Publishes the totals once the run is over.
pub fn publish_report(world: &mut World) {
    if world.get_resource::<CudaConfig>().is_none() {
        return;
    }
    let cuda = world.resource::<Cuda>();
    let report = CudaReport {
        devices: cuda.devs.iter().map(|d| d.totals.clone()).collect(),
        collectives: cuda.done_colls.clone(),
    };
    world.insert_resource(report);
}

/// Hosts and streams that have not finished when no event is left.
fn stuck_devices(world: &mut World) -> Vec<String> {
    let Some(cuda) = world.get_resource::<Cuda>() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for d in &cuda.devs {
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
                            cuda.comm
                                .and_then(|c| world
                                    .get_resource::<Collectives>()?
                                    .collective(c, *k))
                                .map_or(0, |coll| coll.arrived),
                            cuda.devs.len()
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
