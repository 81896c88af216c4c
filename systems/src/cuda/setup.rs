//! Building the devices of a CUDA workload, and the checks the schema cannot make (kernels
//! with a duration model, graph contents, forced NCCL algorithms).

use std::collections::{BTreeMap, VecDeque};

use hetsim_schema::SimTime;
use hetsim_schema::cuda::{Coll, CudaOp, CudaSpec, NcclCall};
use hetsim_schema::scenario::Cluster;

use super::device::{Device, DeviceTotals, Gpus, HostState, Stream};
use crate::nccl;
use crate::platform::Endpoint;

/// The devices of `spec` on `cluster` (the first `gpus` GPUs in node order), checked.
pub fn build(spec: CudaSpec, cluster: &Cluster) -> Result<Gpus, String> {
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
    let streams = max_stream(&spec.program) + 1;
    let devs = (0..n)
        .map(|i| {
            let gpu = Endpoint::Gpu {
                node: i / per,
                gpu: i % per,
            };
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
                nccl_calls: 0,
                copies_running: 0,
                copy_queue: VecDeque::new(),
                totals: DeviceTotals {
                    gpu: name,
                    ..Default::default()
                },
            }
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

/// Checks what the schema cannot: kernels with a duration model, graph contents.
pub fn check_program(ops: &[CudaOp], path: &str, in_graph: bool) -> Result<(), String> {
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
pub fn check_forced_algo(spec: &CudaSpec) -> Result<(), String> {
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

pub fn uses_nccl(ops: &[CudaOp]) -> bool {
    let mut calls = Vec::new();
    nccl_calls(ops, &mut calls);
    !calls.is_empty()
}

pub fn max_stream(ops: &[CudaOp]) -> u32 {
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
