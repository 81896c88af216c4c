//! One rank running its trace, as ASTRA-sim's workload layer runs it: a node issues once its
//! dependencies are done, in node-id order among the ready ones, when its resource is free.
//!
//! Resources (the choice, and why): one host thread runs CPU operators one at a time and one
//! GPU compute stream runs kernels one at a time (ASTRA-sim's hardware resource: at most one
//! CPU op and one GPU kernel in flight); the collectives of one process group run one at a
//! time, in issue order, as PyTorch's NCCL process group runs them on its own stream (and as
//! NCCL needs: the k-th call of every member is one collective); sends, receives and memory
//! copies issue as soon as they are ready, alongside everything else. So communication
//! overlaps compute, and collectives of different groups overlap each other.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use hetsim_schema::SimTime;

use super::busy::{Busy, Change};
use super::graph::{Graph, Work};

/// What a rank asks the coordinator to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// `node` (a kernel or CPU operator) ends at `at`.
    Timer { at: SimTime, node: u32 },
    /// `node` is this rank's `k`-th collective of graph group `group`.
    Coll { node: u32, group: u32, k: u32 },
    Send {
        node: u32,
        peer: u32,
        bytes: f64,
        tag: i64,
    },
    Recv {
        node: u32,
        peer: u32,
        bytes: f64,
        tag: i64,
    },
    Copy {
        node: u32,
        to_device: bool,
        bytes: f64,
    },
}

/// A timeline row of a rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Row {
    Cpu,
    Gpu,
    Comm,
}

/// Something that ran, for the timeline: (row, node (None: a period of communication),
/// start, end).
pub type Ran = (Row, Option<u32>, SimTime, SimTime);

type Ready = BinaryHeap<Reverse<u32>>;

/// The compute units of a rank: its host thread and its GPU's compute stream.
const CPU: usize = 0;
const GPU: usize = 1;

#[derive(Debug)]
pub struct Rank {
    pub graph: Arc<Graph>,
    scale: f64,
    left: Vec<u32>,
    /// Per compute unit ([`CPU`], [`GPU`]): its ready nodes and what runs (node, start).
    ready: [Ready; 2],
    running: [Option<(u32, SimTime)>; 2],
    ready_coll: Vec<Ready>,
    coll_busy: Vec<bool>,
    calls: Vec<u32>,
    pub done: u32,
    pub end: SimTime,
    pub busy: Busy,
    /// What ran, when the run records.
    pub ran: Option<Vec<Ran>>,
    pub fx: Vec<Effect>,
}

impl Rank {
    /// A rank at time zero: its dependency-free nodes released (not yet issued).
    pub fn new(graph: Arc<Graph>, scale: f64, record: bool) -> Rank {
        let groups = graph.groups.len();
        let mut r = Rank {
            left: graph.deps.clone(),
            graph,
            scale,
            ready: [Ready::new(), Ready::new()],
            running: [None, None],
            ready_coll: vec![Ready::new(); groups],
            coll_busy: vec![false; groups],
            calls: vec![0; groups],
            done: 0,
            end: SimTime::ZERO,
            busy: Busy::default(),
            ran: record.then(Vec::new),
            fx: Vec::new(),
        };
        let roots: Vec<u32> = (0..r.left.len() as u32)
            .filter(|&i| r.left[i as usize] == 0)
            .collect();
        for node in roots {
            r.release(node, SimTime::ZERO);
        }
        r
    }

    pub fn finished(&self) -> bool {
        self.done as usize == self.graph.len()
    }

    /// A node whose dependencies are done: queued for its resource, or issued at once.
    fn release(&mut self, first: u32, now: SimTime) {
        let mut stack = vec![first];
        while let Some(node) = stack.pop() {
            match self.graph.work[node as usize] {
                Work::Kernel(_) => self.ready[GPU].push(Reverse(node)),
                Work::Host(_) => self.ready[CPU].push(Reverse(node)),
                Work::Coll { group, .. } => self.ready_coll[group as usize].push(Reverse(node)),
                Work::Send { peer, bytes, tag } => self.start_comm(
                    now,
                    Effect::Send {
                        node,
                        peer,
                        bytes,
                        tag,
                    },
                ),
                Work::Recv { peer, bytes, tag } => self.start_comm(
                    now,
                    Effect::Recv {
                        node,
                        peer,
                        bytes,
                        tag,
                    },
                ),
                Work::Copy { to_device, bytes } => self.start_comm(
                    now,
                    Effect::Copy {
                        node,
                        to_device,
                        bytes,
                    },
                ),
                Work::Nothing => self.complete(node, now, &mut stack),
            }
        }
    }

    fn start_comm(&mut self, now: SimTime, fx: Effect) {
        self.busy.change(now, Change::Comm(true));
        self.fx.push(fx);
    }

    /// `node` is done at `now`: the children whose last dependency it was go on `freed`.
    fn complete(&mut self, node: u32, now: SimTime, freed: &mut Vec<u32>) {
        self.done += 1;
        self.end = self.end.max(now);
        for &c in self.graph.children(node) {
            self.left[c as usize] -= 1;
            if self.left[c as usize] == 0 {
                freed.push(c);
            }
        }
    }

    /// Starts what the free resources can run: the lowest ready id on each.
    pub fn issue(&mut self, now: SimTime) {
        for unit in [CPU, GPU] {
            if self.running[unit].is_none()
                && let Some(Reverse(node)) = self.ready[unit].pop()
            {
                let secs = match self.graph.work[node as usize] {
                    Work::Host(secs) => secs,
                    Work::Kernel(secs) => secs / self.scale,
                    _ => unreachable!("compute queues hold kernels and host operators"),
                };
                self.running[unit] = Some((node, now));
                self.busy.change(now, compute_change(unit, true));
                let at = now.saturating_add(SimTime::from_secs_saturating(secs));
                self.fx.push(Effect::Timer { at, node });
            }
        }
        for group in 0..self.ready_coll.len() {
            if !self.coll_busy[group]
                && let Some(Reverse(node)) = self.ready_coll[group].pop()
            {
                self.coll_busy[group] = true;
                let k = self.calls[group];
                self.calls[group] += 1;
                self.start_comm(
                    now,
                    Effect::Coll {
                        node,
                        group: group as u32,
                        k,
                    },
                );
            }
        }
    }

    /// `node` has ended at `now`: its resource is free, its children may be released.
    pub fn finish(&mut self, node: u32, now: SimTime) {
        let period = match self.graph.work[node as usize] {
            Work::Kernel(_) => self.end_compute(GPU, Row::Gpu, node, now),
            Work::Host(_) => self.end_compute(CPU, Row::Cpu, node, now),
            Work::Coll { group, .. } => {
                self.coll_busy[group as usize] = false;
                self.busy.change(now, Change::Comm(false))
            }
            Work::Send { .. } | Work::Recv { .. } | Work::Copy { .. } => {
                self.busy.change(now, Change::Comm(false))
            }
            Work::Nothing => unreachable!("nothing-nodes end when released"),
        };
        if let Some(start) = period {
            self.note(Row::Comm, None, start, now);
        }
        let mut freed = Vec::new();
        self.complete(node, now, &mut freed);
        for c in freed {
            self.release(c, now);
        }
    }

    /// A kernel or host operator ends: its unit is free (no period of communication ends).
    fn end_compute(&mut self, unit: usize, row: Row, node: u32, now: SimTime) -> Option<SimTime> {
        let (_, start) = self.running[unit]
            .take()
            .expect("a node ends on a busy unit");
        self.busy.change(now, compute_change(unit, false));
        self.note(row, Some(node), start, now);
        None
    }

    fn note(&mut self, row: Row, node: Option<u32>, start: SimTime, end: SimTime) {
        if let Some(ran) = &mut self.ran {
            ran.push((row, node, start, end));
        }
    }

    /// What the rank waits for, when it cannot go on: its first node not done and why.
    pub fn stuck(&self) -> Option<String> {
        if self.finished() {
            return None;
        }
        let ready = |q: &Ready| q.peek().map(|r| r.0);
        let blocked = (0..self.left.len()).find(|&i| self.left[i] > 0);
        let (ready_gpu, ready_cpu) = (ready(&self.ready[GPU]), ready(&self.ready[CPU]));
        Some(format!(
            "{} of {} nodes done; {}",
            self.done,
            self.graph.len(),
            match (ready_gpu, ready_cpu, blocked) {
                (Some(n), _, _) | (_, Some(n), _) =>
                    format!("node {:?} ready", self.graph.names[n as usize]),
                (_, _, Some(n)) => format!(
                    "node {:?} waits for {} dependencies",
                    self.graph.names[n], self.left[n]
                ),
                _ => "communication in flight".to_string(),
            }
        ))
    }
}

/// The busy-time change of a compute unit starting or ending.
fn compute_change(unit: usize, on: bool) -> Change {
    if unit == CPU {
        Change::Cpu(on)
    } else {
        Change::Gpu(on)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chakra::graph::{Peaks, test_node};
    use chakra::{AttrValue, EtFile, Node, NodeType};

    fn us(n: u64) -> SimTime {
        SimTime::from_nanos(n * 1000)
    }

    fn node(id: u64, kind: NodeType, dur: u64, deps: &[u64], cpu: bool) -> Node {
        test_node(id, kind, dur, deps, &[("is_cpu_op", AttrValue::Bool(cpu))])
    }

    fn rank(nodes: Vec<Node>, scale: f64) -> Rank {
        let et = EtFile {
            path: "t.et".into(),
            version: String::new(),
            metadata: vec![],
            nodes,
        };
        let peaks = Peaks {
            flops: 1e12,
            mem_bw: 1e12,
        };
        Rank::new(Arc::new(Graph::build(&et, 2, peaks).unwrap()), scale, true)
    }

    fn timers(r: &mut Rank) -> Vec<(SimTime, u32)> {
        r.fx.drain(..)
            .filter_map(|f| match f {
                Effect::Timer { at, node } => Some((at, node)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn one_kernel_and_one_cpu_operator_run_at_a_time_lowest_id_first() {
        let mut r = rank(
            vec![
                node(2, NodeType::CompNode, 5, &[], false),
                node(1, NodeType::CompNode, 3, &[], false),
                node(3, NodeType::CompNode, 4, &[], true),
            ],
            1.0,
        );
        r.issue(us(0));
        // Node ids 1 (kernel, index 0) and 3 (CPU, index 2) start; id 2 waits for the GPU.
        assert_eq!(timers(&mut r), vec![(us(4), 2), (us(3), 0)]);
        r.finish(0, us(3));
        r.issue(us(3));
        assert_eq!(timers(&mut r), vec![(us(8), 1)]);
    }

    #[test]
    fn compute_scale_divides_kernel_times_not_cpu_times() {
        let mut r = rank(
            vec![
                node(1, NodeType::CompNode, 3, &[], false),
                node(2, NodeType::CompNode, 3, &[], true),
            ],
            1.5,
        );
        r.issue(us(0));
        assert_eq!(timers(&mut r), vec![(us(3), 1), (us(2), 0)]);
    }

    #[test]
    fn a_child_is_released_when_its_last_dependency_ends() {
        let mut r = rank(
            vec![
                node(1, NodeType::CompNode, 3, &[], false),
                node(2, NodeType::CompNode, 4, &[], true),
                node(3, NodeType::CompNode, 1, &[1, 2], false),
            ],
            1.0,
        );
        r.issue(us(0));
        timers(&mut r);
        r.finish(0, us(3));
        r.issue(us(3));
        assert!(timers(&mut r).is_empty(), "node 3 still waits for node 2");
        r.finish(1, us(4));
        r.issue(us(4));
        assert_eq!(timers(&mut r), vec![(us(5), 2)]);
        r.finish(2, us(5));
        assert!(r.finished());
        assert_eq!(r.end, us(5));
        assert_eq!(r.busy.kernel, us(4));
    }

    #[test]
    fn collectives_of_one_group_run_one_at_a_time_and_count_their_calls() {
        let coll = |id: u64, deps: &[u64]| {
            let mut n = node(id, NodeType::CommCollNode, 0, deps, false);
            n.attrs.push(("comm_type".into(), AttrValue::Int(0)));
            n.attrs.push(("comm_size".into(), AttrValue::Int(8)));
            n
        };
        let mut r = rank(vec![coll(1, &[]), coll(2, &[])], 1.0);
        r.issue(us(0));
        assert_eq!(
            r.fx.drain(..).collect::<Vec<_>>(),
            vec![Effect::Coll {
                node: 0,
                group: 0,
                k: 0
            }]
        );
        r.finish(0, us(9));
        r.issue(us(9));
        assert_eq!(
            r.fx.drain(..).collect::<Vec<_>>(),
            vec![Effect::Coll {
                node: 1,
                group: 0,
                k: 1
            }]
        );
        assert_eq!(r.ran.as_ref().unwrap()[0], (Row::Comm, None, us(0), us(9)));
    }

    #[test]
    fn sends_issue_when_released_and_nothing_nodes_end_at_once() {
        let mut send = node(2, NodeType::CommSendNode, 0, &[1], false);
        send.attrs.push(("comm_dst".into(), AttrValue::Int(1)));
        send.attrs.push(("comm_size".into(), AttrValue::Int(64)));
        let r = rank(
            vec![node(1, NodeType::MetadataNode, 0, &[], false), send],
            1.0,
        );
        assert_eq!(r.done, 1);
        assert_eq!(
            r.fx,
            vec![Effect::Send {
                node: 1,
                peer: 1,
                bytes: 64.0,
                tag: 0
            }]
        );
    }
}
