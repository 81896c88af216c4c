//! A device's host thread: runs its program, paying a launch overhead per call that enqueues
//! work; synchronisations block it until the streams empty; graphs replay captured work.

use hetsim_schema::SimTime;
use hetsim_schema::cuda::{CopyKind, CudaOp, NcclCall};

use super::device::{
    Effect, Gpus, HostState, Item, MAX_PENDING, Work, enqueues_on, event_id, kernel_secs, secs,
};
use crate::platform::Endpoint;

impl Gpus {
    /// Runs device `d`'s host thread until it blocks, waits out its own time, or ends.
    pub fn run_host(&mut self, d: u32, now: SimTime) {
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
                HostState::QueueFull(s) if dev.streams[s as usize].queue.len() >= MAX_PENDING => {
                    return;
                }
                _ => dev.state = HostState::Ready,
            }
            if dev.host_at > now {
                self.fx.push(Effect::HostWake {
                    at: dev.host_at,
                    dev: d,
                });
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
            if let Some(s) = enqueues_on(&op)
                && dev.streams[s as usize].queue.len() >= MAX_PENDING
            {
                dev.state = HostState::QueueFull(s);
                return;
            }
            dev.pc += 1;
            self.call(d, op, now, overhead);
        }
    }

    /// Device `d`'s host thread makes call `op` now: a synchronisation blocks it, host work
    /// takes its time, a graph is captured or launched, anything else goes on a stream after
    /// the launch overhead (events are recorded and waited on for free).
    fn call(&mut self, d: u32, op: CudaOp, now: SimTime, overhead: SimTime) {
        let dev = &mut self.devs[d as usize];
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
                // The loader checked that the graph is captured before its launch.
                let ops = dev.graphs[&graph].clone();
                // One launch now; the op runs again until its `times` are made.
                dev.launches_left = match dev.launches_left {
                    0 => times - 1,
                    left => left - 1,
                };
                if dev.launches_left > 0 {
                    dev.pc -= 1;
                }
                let at = dev.host_at.saturating_add(overhead);
                dev.host_at = at;
                for op in &ops {
                    self.enqueue(d, op, Some(stream), at);
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

    /// Puts the work of one call on a stream (`on`: the graph launch's stream).
    fn enqueue(&mut self, d: u32, op: &CudaOp, on: Option<u32>, at: SimTime) {
        let n = self.devs.len() as u32;
        let (speed, mem_bw) = (self.gpu_speed, self.gpu_mem_bw);
        let dev = &mut self.devs[d as usize];
        let (stream, work) = match op {
            CudaOp::Kernel(k) => {
                let t = kernel_secs(k, speed, mem_bw);
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
}
