//! Building the devices of a CUDA workload, and the checks the schema cannot make (kernels
//! with a duration model, graph contents, forced NCCL algorithms).

use std::collections::{BTreeMap, VecDeque};

use hetsim_schema::SimTime;
use hetsim_schema::cuda::{Coll, CopyKind, CudaOp, CudaSpec, NcclCall};
use hetsim_schema::scenario::Cluster;

use super::device::{Device, DeviceTotals, Gpus, HostState, Stream, enqueues_on, kernel_secs};
use crate::nccl;
use crate::platform::Endpoint;

/// The devices of `spec` on `cluster` (the first `gpus` GPUs in node order), checked: on the
/// platform nodes `nodes` (a job's node `i` is `nodes[i]`; `None`: the whole machine), device
/// names beginning with `prefix` (`train/` for a job `train`).
pub fn build(
    spec: CudaSpec,
    cluster: &Cluster,
    nodes: Option<&[u32]>,
    prefix: &str,
) -> Result<Gpus, String> {
    let total = nodes.map_or(cluster.nodes, |n| n.len() as u32) * cluster.node.gpus;
    let n = spec.gpus.unwrap_or(total);
    if n == 0 || n > total {
        return Err(format!(
            "workload.Cuda.gpus: expected 1 to {total} (the platform's GPUs), got {n}"
        ));
    }
    if spec.repeat == 0 {
        return Err("workload.Cuda.repeat: expected at least 1".into());
    }
    if spec.copy_engines == 0 {
        return Err("workload.Cuda.copy_engines: expected at least 1".into());
    }
    check_program(&spec.program, "workload.Cuda.program", false, n)?;
    check_graphs(&spec.program, "workload.Cuda.program")?;
    check_kernel_times(
        &spec.program,
        "workload.Cuda.program",
        (
            cluster.node.gpu.speed.0,
            cluster.node.gpu.memory_bandwidth.0,
        ),
    )?;
    check_nccl_spec(&spec.nccl)?;
    check_forced_algo(&spec)?;
    let per = cluster.node.gpus;
    let streams = max_stream(&spec.program) + 1;
    let devs = (0..n)
        .map(|i| {
            let local = i / per;
            let gpu = Endpoint::Gpu {
                node: nodes.map_or(local, |n| n[local as usize]),
                gpu: i % per,
            };
            let mut dev = Device::idle(gpu, streams);
            if !prefix.is_empty() {
                dev.name = format!("{prefix}{}", dev.name);
            }
            dev
        })
        .collect();
    Ok(Gpus {
        gpu_speed: cluster.node.gpu.speed.0,
        gpu_mem_bw: cluster.node.gpu.memory_bandwidth.0,
        devs,
        spec: Some(spec),
        ..Default::default()
    })
}

/// A device's name and timeline rows' prefix: `node[N].gpu[G]`.
pub fn device_name(gpu: &Endpoint) -> String {
    match *gpu {
        Endpoint::Gpu { node, gpu } => format!("node[{node}].gpu[{gpu}]"),
        _ => unreachable!("devices are GPUs"),
    }
}

/// Streams a GPU may use: enough for any real program, few enough that a typo in a stream
/// number does not allocate billions of queues.
pub const MAX_STREAMS: u32 = 1024;

/// Each kernel's duration from its work (flops over the GPU's speed, bytes over its memory
/// bandwidth) is within simulated time: `flops: 1e40` is an input error, not the end of time.
fn check_kernel_times(
    ops: &[CudaOp],
    path: &str,
    (speed, mem_bw): (f64, f64),
) -> Result<(), String> {
    let max = SimTime::MAX.as_secs_f64();
    for (i, op) in ops.iter().enumerate() {
        match op {
            CudaOp::Kernel(k) if k.time.is_none() => {
                let t = kernel_secs(k, speed, mem_bw);
                if t.is_nan() || t >= max {
                    return Err(format!(
                        "{path}[{i}].Kernel: its work takes {t:e} s on this GPU, beyond the {max:.3e} s hetsim simulates"
                    ));
                }
            }
            CudaOp::Capture { ops, .. } => {
                check_kernel_times(ops, &format!("{path}[{i}].Capture.ops"), (speed, mem_bw))?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Every launched graph was captured before its first launch, in program order.
fn check_graphs(ops: &[CudaOp], path: &str) -> Result<(), String> {
    let mut captured = std::collections::BTreeSet::new();
    for (i, op) in ops.iter().enumerate() {
        match op {
            CudaOp::Capture { graph, .. } => {
                captured.insert(graph.as_str());
            }
            CudaOp::Launch { graph, .. } if !captured.contains(graph.as_str()) => {
                return Err(format!(
                    "{path}[{i}].Launch.graph: `{graph}` is not captured before it is launched (captured so far: {captured:?})"
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// NCCL's tunables: efficiencies are shares of a line rate, the buffer holds something.
fn check_nccl_spec(nccl: &hetsim_schema::cuda::NcclSpec) -> Result<(), String> {
    for (name, v) in [
        ("nvlink_efficiency", nccl.nvlink_efficiency),
        ("net_efficiency", nccl.net_efficiency),
    ] {
        if !(v > 0.0 && v <= 1.0) {
            return Err(format!(
                "workload.Cuda.nccl.{name}: expected a share of the line rate in (0, 1], got {v}"
            ));
        }
    }
    if nccl.buffsize.0.is_nan() || nccl.buffsize.0 < 1.0 {
        return Err(format!(
            "workload.Cuda.nccl.buffsize: expected at least 1 byte, got {}",
            nccl.buffsize.0
        ));
    }
    if let Some(c) = nccl.channels
        && !(1..=64).contains(&c)
    {
        return Err(format!(
            "workload.Cuda.nccl.channels: expected 1 to 64 (NCCL's MAXCHANNELS), got {c}"
        ));
    }
    Ok(())
}

/// An offset to another GPU of `n`: it must name another one, without wrapping around.
fn check_offset(offset: i32, n: u32, at: &str) -> Result<(), String> {
    if offset == 0 || offset.unsigned_abs() >= n {
        return Err(format!(
            "{at}: expected an offset to another of the {n} GPUs (1 to {m} or -{m} to -1), got {offset}",
            m = n.saturating_sub(1)
        ));
    }
    Ok(())
}

/// An NCCL call's root and peer against the `n` GPUs of the communicator.
fn check_call(c: &NcclCall, n: u32, at: &str) -> Result<(), String> {
    if c.root >= n {
        return Err(format!(
            "{at}.root: expected a rank of the {n} GPUs (0 to {}), got {}",
            n - 1,
            c.root
        ));
    }
    if c.op == Coll::SendRecv {
        check_offset(c.peer, n, &format!("{at}.peer"))?;
    }
    Ok(())
}

impl Device {
    /// The device of `gpu` with `streams` empty streams, its host thread ready at time 0.
    fn idle(gpu: Endpoint, streams: u32) -> Device {
        let name = device_name(&gpu);
        Device {
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
            launches_left: 0,
            nccl_calls: 0,
            copies_running: 0,
            copy_queue: VecDeque::new(),
            totals: DeviceTotals {
                gpu: name,
                ..Default::default()
            },
        }
    }
}

/// The peers and NCCL calls op `at` names exist among `n` GPUs.
fn check_refs(op: &CudaOp, n: u32, at: &str) -> Result<(), String> {
    match op {
        CudaOp::Copy(c) => {
            if let CopyKind::Peer(offset) = c.kind {
                check_offset(offset, n, &format!("{at}.Copy.kind.Peer"))?;
            }
        }
        CudaOp::Nccl(c) => check_call(c, n, &format!("{at}.Nccl"))?,
        CudaOp::Group { calls, .. } => {
            for (k, c) in calls.iter().enumerate() {
                check_call(c, n, &format!("{at}.Group.calls[{k}]"))?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Checks what the schema cannot: kernels with a duration model, graph contents, streams,
/// and peers, roots and offsets against the `n` GPUs that take part.
pub fn check_program(ops: &[CudaOp], path: &str, in_graph: bool, n: u32) -> Result<(), String> {
    for (i, op) in ops.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let stream = max_stream(std::slice::from_ref(op));
        if stream >= MAX_STREAMS {
            return Err(format!(
                "{at}: stream {stream}: expected a stream number below {MAX_STREAMS}"
            ));
        }
        check_refs(op, n, &at)?;
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
                check_program(ops, &format!("{at}.Capture.ops"), true, n)?;
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
            CudaOp::Launch { times: 0, .. } => {
                return Err(format!("{at}.Launch.times: expected at least 1"));
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
pub fn check_forced_algo(spec: &CudaSpec) -> Result<(), String> {
    let Some(algo) = spec.nccl.algo else {
        return Ok(());
    };
    let mut all = Vec::new();
    nccl_calls(&spec.program, &mut all);
    for c in all {
        let p2p = matches!(c.op, Coll::AllToAll | Coll::SendRecv);
        let has = nccl::tuning::algorithms(c.op);
        if !p2p && !has.contains(&algo) {
            let names: Vec<&str> = has.iter().map(|a| a.name()).collect();
            let only = match names.as_slice() {
                [one] => format!("the {one} only"),
                many => format!("{} only", many.join(", ")),
            };
            return Err(format!(
                "workload.Cuda.nccl.algo: NCCL runs {} with {only}, not {}",
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

pub fn uses_nccl(ops: &[CudaOp]) -> bool {
    let mut calls = Vec::new();
    nccl_calls(ops, &mut calls);
    !calls.is_empty()
}

pub fn max_stream(ops: &[CudaOp]) -> u32 {
    ops.iter()
        .map(|op| match op {
            CudaOp::StreamSync(stream) => *stream,
            CudaOp::Capture { ops, .. } => max_stream(ops),
            op => enqueues_on(op).unwrap_or(0),
        })
        .max()
        .unwrap_or(0)
}
