//! A device's streams: each runs its items in order (kernels for their time, copies as flows
//! limited by copy engines, event records and waits, NCCL calls that wait for every member).

use std::sync::Arc;

use hetsim_schema::SimTime;

use super::device::{Effect, Gpus, HostState, Item, MAX_PENDING, Work};
use crate::nccl::{CollectiveRecord, group_name};

impl Gpus {
    /// Starts what can start at the head of stream `s` of device `d`, and goes on past items
    /// that finish at once.
    pub fn advance_stream(&mut self, d: u32, s: u32, now: SimTime) {
        loop {
            let dev = &mut self.devs[d as usize];
            if dev.state == HostState::QueueFull(s)
                && dev.streams[s as usize].queue.len() < MAX_PENDING
            {
                dev.state = HostState::Ready;
                self.hosts.push(d);
            }
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
                self.fx.push(Effect::StreamTimer {
                    at: head.ready_at,
                    dev: d,
                    stream: s,
                    done: false,
                });
                return;
            }
            let work = head.work.clone();
            if !self.begin(d, s, work, now) {
                return;
            }
        }
    }

    /// The head of stream `s` of device `d`, `work`, begins now. True if it is over at once
    /// (an event recorded, or waited for and complete), so the next item may begin.
    fn begin(&mut self, d: u32, s: u32, work: Work, now: SimTime) -> bool {
        let engines = self.spec().copy_engines;
        let dev = &mut self.devs[d as usize];
        let st = &mut dev.streams[s as usize];
        match work {
            Work::Kernel { time, .. } => {
                st.started = true;
                st.since = now;
                self.fx.push(Effect::StreamTimer {
                    at: now.saturating_add(time),
                    dev: d,
                    stream: s,
                    done: true,
                });
                return false;
            }
            Work::Copy { from, to, bytes } => {
                if dev.copies_running >= engines {
                    if !dev.copy_queue.contains(&s) {
                        dev.copy_queue.push_back(s);
                    }
                    return false;
                }
                dev.copies_running += 1;
                st.started = true;
                st.since = now;
                self.fx.push(Effect::Copy {
                    dev: d,
                    stream: s,
                    from,
                    to,
                    bytes,
                });
                return false;
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
                    return false;
                }
                st.queue.pop_front();
            }
            Work::Nccl(k) => {
                st.started = true;
                st.since = now;
                self.fx.push(Effect::Nccl { k });
                return false;
            }
        }
        true
    }

    /// Collective `k` is over (`record` says how it ran): every member's stream goes on.
    pub fn end_collective(&mut self, k: u32, now: SimTime, record: CollectiveRecord) {
        self.done_colls.push(record);
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
    pub fn finish_head(&mut self, d: u32, s: u32, now: SimTime) {
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
                ("nccl".into(), Some(group_name(&self.colls[*k as usize])))
            }
            _ => return,
        };
        if let Some(row) = st.row {
            self.finished.push((row, state, label, st.since, now));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::setup;
    use hetsim_schema::cuda::CudaSpec;
    use hetsim_schema::load::from_ron;
    use hetsim_schema::scenario::Cluster;

    const US: u128 = 1_000_000_000; // femtoseconds per microsecond

    fn gpus(program: &str, copy_engines: u32, overhead: &str) -> Gpus {
        let cluster: Cluster = from_ron(
            r#"(nodes: 1, node: (cpu_cores: 2, gpus: 1, gpu: (name: "G", memory: "16GiB", speed: "10TFlop/s")), network: None)"#,
            "test",
            "",
        )
        .unwrap();
        let text = format!(
            r#"(gpus: 1, launch_overhead: "{overhead}", copy_engines: {copy_engines}, program: {program})"#
        );
        let spec: CudaSpec = from_ron(&text, "test", "").unwrap();
        let mut g = setup::build(spec, &cluster, None, "").unwrap();
        g.hosts.push(0);
        g
    }

    /// Delivers the devices' timers in time order (a calendar of its own) until none is
    /// left; returns the times at which stream items ended, in microseconds.
    fn drive(g: &mut Gpus) -> Vec<u128> {
        let mut now = SimTime::ZERO;
        let mut pending: Vec<(SimTime, Effect)> = Vec::new();
        let mut ends = Vec::new();
        loop {
            g.run_hosts_and_streams(now);
            for fx in g.fx.drain(..) {
                match fx {
                    Effect::HostWake { at, .. } | Effect::StreamTimer { at, .. } => {
                        pending.push((at, fx))
                    }
                    other => panic!("unexpected {other:?}"),
                }
            }
            let Some(next) = pending.iter().map(|p| p.0).min() else {
                return ends;
            };
            now = next;
            for (_, fx) in pending.extract_if(.., |p| p.0 == now) {
                match fx {
                    Effect::HostWake { dev, .. } => g.hosts.push(dev),
                    Effect::StreamTimer {
                        dev, stream, done, ..
                    } => {
                        if done {
                            ends.push(now.0 / US);
                        }
                        g.timer(dev, stream, done, now);
                    }
                    _ => unreachable!(),
                }
            }
        }
    }

    #[test]
    fn a_kernel_starts_when_its_launch_returns_and_the_next_waits_for_it() {
        // Two launches at 5 us each: k1 is visible at 5 us and runs 100 us; k2 (visible at
        // 10 us) starts when k1 ends, at 105 us, and ends at 305 us; the host, synchronising
        // from 10 us, ends then.
        let mut g = gpus(
            r#"[Kernel(name: "k1", time: "100us"), Kernel(name: "k2", time: "200us"), DeviceSync]"#,
            2,
            "5us",
        );
        assert_eq!(drive(&mut g), [105, 305]);
        assert_eq!(g.devs[0].state, HostState::Done);
        assert_eq!(g.devs[0].totals.kernels, 2);
        assert!((g.devs[0].totals.kernel_s - 300e-6).abs() < 1e-15);
        assert_eq!(g.devs[0].totals.end_s, 305e-6);
    }

    #[test]
    fn a_full_launch_queue_blocks_the_host_until_an_item_ends() {
        // 1,030 launches of a 1 ms kernel, 1 us each. Kernel k runs from (k-1) ms + 1 us to
        // k ms + 1 us and leaves the queue then. Launch 1,025 (at 1,025 us) makes 1,024
        // pending (kernel 1 left at 1,001 us): launch 1,026 finds the queue full and blocks
        // until kernel 2 ends at 2,001 us, returns at 2,002 us and fills it again, and so
        // on (1,027 at 3,002 us, 1,028 at 4,002 us, 1,029 at 5,002 us): launch 1,030
        // returns at 6,002 us, when the host notes `launched` (a mark
        // enqueues nothing and does not block). Without the limit it would be 1,030 us.
        let mut g = gpus(
            r#"[Capture(graph: "g", ops: [Kernel(time: "1ms")]), Launch(stream: 0, graph: "g", times: 1030), Mark("launched")]"#,
            2,
            "1us",
        );
        let ends = drive(&mut g);
        assert_eq!(ends.len(), 1030);
        assert_eq!(*ends.last().unwrap(), 1_030_001);
        assert_eq!(g.devs[0].totals.marks, [("launched".to_string(), 6002e-6)]);
    }

    #[test]
    fn copies_beyond_the_copy_engines_wait_in_order() {
        // Three copies on three streams, launched at no cost, one copy engine: one flow at
        // a time, in launch order.
        let mut g = gpus(
            r#"[Copy(stream: 0, kind: HostToDevice, bytes: "1MB"), Copy(stream: 1, kind: HostToDevice, bytes: "1MB"), Copy(stream: 2, kind: DeviceToHost, bytes: "1MB")]"#,
            1,
            "0us",
        );
        let copies = |g: &mut Gpus| -> Vec<u32> {
            g.fx.drain(..)
                .filter_map(|fx| match fx {
                    Effect::Copy { stream, .. } => Some(stream),
                    _ => None,
                })
                .collect()
        };
        let at = SimTime::ZERO;
        g.run_hosts_and_streams(at);
        assert_eq!(copies(&mut g), [0]);
        g.copy_done(0, 0, at);
        g.run_hosts_and_streams(at);
        assert_eq!(copies(&mut g), [1]);
        g.copy_done(0, 1, at);
        g.run_hosts_and_streams(at);
        assert_eq!(copies(&mut g), [2]);
    }
}
