//! What the runtime sees of the machine: workers (GPUs first, then CPU cores, as StarPU numbers
//! them), memory nodes (0 = RAM, then one per GPU) with their capacities and endpoints, the
//! bus predictions the dm* schedulers use, and codelet time models.

use foldhash::fast::FixedState;
use std::collections::{BTreeMap, HashMap};

use hetsim_schema::scenario::{PlatformSpec, StarpuMachine};
use hetsim_schema::starpu::{bus, perfmodel, platform};
use hetsim_schema::tasks::{CodeletModel, TimeModel};

use super::graph::Task;
use crate::platform::{Endpoint, Topology};

use super::MIB;

/// Values between memory nodes, `[from][to]`.
type Matrix = Vec<Vec<f64>>;

/// A kind of worker, with its device number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Arch {
    Cuda(u32),
    Cpu,
}

#[derive(Debug, Clone)]
pub struct Worker {
    pub arch: Arch,
    pub node: u32,
    pub name: String,
    /// StarPU's relative speed-up (random's weights): CUDA 13.33, CPU 0.5.
    pub speedup: f64,
}

#[derive(Debug, Clone)]
pub struct MemNode {
    pub name: String,
    pub endpoint: Endpoint,
    /// Bytes usable (infinite for RAM).
    pub capacity: f64,
}

#[derive(Debug, Clone, Default)]
pub struct Machine {
    pub workers: Vec<Worker>,
    pub nodes: Vec<MemNode>,
    /// Predicted bandwidth (bytes/s) and latency (s) between memory nodes.
    pub bw: Vec<Vec<f64>>,
    pub lat: Vec<Vec<f64>>,
    /// Whether a copy may go straight from one node to another: RAM and a GPU always; two
    /// GPUs with peer access (the platform's `memcpy_peer`, or a route between them).
    /// Otherwise it takes two hops through RAM.
    pub direct: Vec<Vec<bool>>,
}

impl Machine {
    /// The GPUs StarPU's transfer prediction assumes share every bus.
    fn ngpus(&self) -> f64 {
        (self.nodes.len() - 1) as f64
    }

    /// One hop's time alone on its link: latency + size / bandwidth (0 on the same node or
    /// with an unknown bus).
    fn hop(&self, from: u32, to: u32, bytes: f64, share: f64) -> f64 {
        if from == to || bytes <= 0.0 {
            return 0.0;
        }
        let bw = self.bw[from as usize][to as usize];
        let lat = self.lat[from as usize][to as usize];
        if bw.is_finite() && bw > 0.0 {
            lat + bytes * share / bw
        } else {
            0.0
        }
    }

    /// Sums `hop` over the path a copy takes (through RAM between GPUs without peer access).
    fn path(&self, from: u32, to: u32, bytes: f64, share: f64) -> f64 {
        if from == to || self.direct[from as usize][to as usize] {
            self.hop(from, to, bytes, share)
        } else {
            self.hop(from, 0, bytes, share) + self.hop(0, to, bytes, share)
        }
    }

    /// StarPU's transfer prediction (`starpu_transfer_predict`, summed over the hops):
    /// latency + 2 x ngpus x size / bandwidth per hop, as if every GPU moved data both ways
    /// on the bus at once (ngpus = the CUDA devices in use; 0 on the same node or with an
    /// unknown bus).
    pub fn predict(&self, from: u32, to: u32, bytes: f64) -> f64 {
        self.path(from, to, bytes, 2.0 * self.ngpus())
    }

    /// The time a copy takes alone on the bus: latency + size / bandwidth per hop (the crude
    /// bus model of `pcie_shared_bus` off).
    pub fn alone(&self, from: u32, to: u32, bytes: f64) -> f64 {
        self.path(from, to, bytes, 1.0)
    }

    /// Whether worker `w`'s memory node can hold `bytes` at once.
    pub fn fits(&self, w: usize, bytes: f64) -> bool {
        bytes <= self.nodes[self.workers[w].node as usize].capacity
    }

    pub fn from_platform(spec: &PlatformSpec, topo: &mut Topology) -> Result<Machine, String> {
        match spec {
            PlatformSpec::StarpuMachine(m) => starpu(m, topo),
            PlatformSpec::Cluster(c) => {
                let gpus = c.node.gpus;
                let cpus = c.node.cpu_cores.saturating_sub(gpus);
                let cap = (c.node.gpu.memory.0 / MIB * 0.9).floor() * MIB;
                if gpus > 0 && cap <= 0.0 {
                    return Err(format!(
                        "platform.node.gpu.memory: {} B leaves the runtime no room on a GPU (it uses 90 % in whole MiB); expected at least 2 MiB",
                        c.node.gpu.memory.0
                    ));
                }
                let mut nodes = vec![MemNode {
                    name: "RAM".into(),
                    endpoint: Endpoint::Host { node: 0 },
                    capacity: f64::INFINITY,
                }];
                nodes.extend((0..gpus).map(|g| MemNode {
                    name: format!("CUDA{g}"),
                    endpoint: Endpoint::Gpu { node: 0, gpu: g },
                    capacity: cap,
                }));
                let (bw, lat) = route_matrices(&nodes, topo)?;
                let n = nodes.len();
                Ok(Machine {
                    workers: workers(gpus, cpus),
                    nodes,
                    bw,
                    lat,
                    // RAM and a GPU always; two GPUs over NVLink or with PCIe peer access.
                    direct: (0..n)
                        .map(|i| {
                            (0..n)
                                .map(|j| {
                                    i == 0
                                        || j == 0
                                        || c.node.nvlink.is_some()
                                        || c.node.pcie.peer_access
                                })
                                .collect()
                        })
                        .collect(),
                })
            }
            _ => Err("platform: the task runtime needs a StarpuMachine or Cluster platform".into()),
        }
    }
}

fn workers(gpus: u32, cpus: u32) -> Vec<Worker> {
    let mut w: Vec<Worker> = (0..gpus)
        .map(|g| Worker {
            arch: Arch::Cuda(g),
            node: g + 1,
            name: format!("CUDA{g}"),
            speedup: 13.33,
        })
        .collect();
    w.extend((0..cpus).map(|c| Worker {
        arch: Arch::Cpu,
        node: 0,
        name: format!("CPU{c}"),
        speedup: 0.5,
    }));
    w
}

/// Bandwidth and latency matrices between `n` memory nodes, from `pair(from, to)` for every
/// pair of distinct nodes (the diagonal: infinite bandwidth, no latency).
fn pair_matrices(
    n: usize,
    mut pair: impl FnMut(usize, usize) -> Result<(f64, f64), String>,
) -> Result<(Matrix, Matrix), String> {
    let mut bw = vec![vec![f64::INFINITY; n]; n];
    let mut lat = vec![vec![0.0; n]; n];
    for i in 0..n {
        for j in 0..n {
            if i != j {
                (bw[i][j], lat[i][j]) = pair(i, j)?;
            }
        }
    }
    Ok((bw, lat))
}

/// Bandwidth and latency of each pair of memory nodes' routes (a platform without bus files).
fn route_matrices(nodes: &[MemNode], topo: &mut Topology) -> Result<(Matrix, Matrix), String> {
    pair_matrices(nodes.len(), |i, j| {
        let r = topo
            .route(nodes[i].endpoint, nodes[j].endpoint)
            .map_err(|e| format!("platform: {e}"))?;
        Ok((topo.bottleneck(&r), r.latency.as_secs_f64()))
    })
}

fn starpu(m: &StarpuMachine, topo: &mut Topology) -> Result<Machine, String> {
    let host = &m.hostname;
    let (label, text) = starpu_file(m, &format!("bus/{host}.platform.xml"))?;
    let p = platform::parse(text).map_err(|e| format!("{label}: {e}"))?;
    let gpus: Vec<&platform::Host> = p
        .hosts
        .iter()
        .filter(|h| h.id.starts_with("CUDA"))
        .collect();
    let cpus = p.hosts.iter().filter(|h| h.id.starts_with("CPU")).count() as u32;
    let (ncuda, ncpu) = starpu_workers(m, gpus.len() as u32, cpus)?;
    let gpus = &gpus[..ncuda as usize];
    let nodes = starpu_nodes(m, label, gpus, topo)?;
    // Bus matrices: RAM is raw index 0, CUDA device d is 1 + d (MB/s = bytes/us, us).
    let matrix = |suffix: &str| -> Result<bus::Matrix, String> {
        let (label, text) = starpu_file(m, &format!("bus/{host}.{suffix}"))?;
        bus::parse_matrix(text).map_err(|e| format!("{label}: {e}"))
    };
    let (bwm, latm) = (matrix("bandwidth")?, matrix("latency")?);
    let (bw, lat) = pair_matrices(nodes.len(), |i, j| {
        Ok((
            bwm.get(i, j).map_or(f64::NAN, |v| v * 1e6),
            latm.get(i, j).map_or(0.0, |v| v * 1e-6),
        ))
    })?;
    let direct = starpu_direct(gpus, &nodes, topo);
    Ok(Machine {
        workers: workers(ncuda, ncpu),
        nodes,
        bw,
        lat,
        direct,
    })
}

/// One of the files a StarPU machine reads, with its label for errors.
fn starpu_file<'a>(m: &'a StarpuMachine, name: &str) -> Result<&'a (String, String), String> {
    m.files
        .get(name)
        .ok_or_else(|| format!("platform.StarpuMachine: {name} was not read"))
}

/// The CUDA and CPU workers asked for (`ncuda`, `ncpu`; by default every GPU, and every core
/// not driving one), checked against the host's `gpus` and `cpus`.
fn starpu_workers(m: &StarpuMachine, gpus: u32, cpus: u32) -> Result<(u32, u32), String> {
    let host = &m.hostname;
    let ncuda = m.ncuda.unwrap_or(gpus);
    if ncuda > gpus {
        return Err(format!(
            "platform.ncuda: {host} has {gpus} CUDA devices, not {ncuda}"
        ));
    }
    let ncpu = m.ncpu.unwrap_or(cpus.saturating_sub(ncuda));
    if u64::from(ncpu) + u64::from(ncuda) > u64::from(cpus) {
        return Err(format!(
            "platform.ncpu: {host} has {cpus} CPU cores; {ncuda} drive the GPUs, so at most {} CPU workers",
            cpus.saturating_sub(ncuda)
        ));
    }
    Ok((ncuda, ncpu))
}

/// RAM, then each GPU used with its memory: `limit_cuda_mem_mb` if set, else 90 % of its
/// `memsize` (StarPU's default), in whole MiB.
fn starpu_nodes(
    m: &StarpuMachine,
    label: &str,
    gpus: &[&platform::Host],
    topo: &mut Topology,
) -> Result<Vec<MemNode>, String> {
    let mut nodes = vec![MemNode {
        name: "RAM".into(),
        endpoint: topo.endpoint("RAM").map_err(|e| format!("{label}: {e}"))?,
        capacity: f64::INFINITY,
    }];
    for g in gpus {
        let memsize: f64 = g
            .props
            .get("memsize")
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("{label}: host {} has no memsize", g.id))?;
        if !(memsize.is_finite() && memsize > 0.0) {
            return Err(format!(
                "{label}: host {}: memsize {memsize}: expected a size above zero",
                g.id
            ));
        }
        let cap = match m.limit_cuda_mem_mb {
            Some(mb) if mb > 0.0 => mb * MIB,
            Some(_) => return Err("platform.limit_cuda_mem_mb: expected a positive size".into()),
            None => ((memsize / MIB).floor() * 0.9).floor() * MIB,
        };
        if cap <= 0.0 {
            return Err(format!(
                "{label}: host {}: memsize {memsize} B leaves the runtime no room (it uses 90 % in whole MiB)",
                g.id
            ));
        }
        nodes.push(MemNode {
            name: g.id.clone(),
            endpoint: topo.endpoint(&g.id).map_err(|e| format!("{label}: {e}"))?,
            capacity: cap,
        });
    }
    Ok(nodes)
}

/// Which node pairs copy directly. Peer copies: the destination's driver does them when its
/// host says `memcpy_peer` (StarPU prefers the destination as handler; the source's would do
/// too) and the platform routes the pair.
fn starpu_direct(
    gpus: &[&platform::Host],
    nodes: &[MemNode],
    topo: &mut Topology,
) -> Vec<Vec<bool>> {
    let peer =
        |i: usize| i > 0 && gpus[i - 1].props.get("memcpy_peer").map(String::as_str) == Some("1");
    let n = nodes.len();
    let mut direct = vec![vec![true; n]; n];
    for i in 1..n {
        for j in 1..n {
            if i != j {
                direct[i][j] = (peer(i) || peer(j))
                    && topo.route(nodes[i].endpoint, nodes[j].endpoint).is_ok();
            }
        }
    }
    direct
}

/// Where a codelet's times come from.
#[derive(Debug, Clone)]
enum Source {
    /// `runtime.models.<codelet>`.
    Given(String, CodeletModel),
    /// A StarPU machine's file, with its label.
    Starpu(String, perfmodel::PerfModel),
}

/// A codelet's time somewhere: mean (s), standard deviation (s), calibrated.
pub type Timing = (f64, f64, bool);

/// Codelet time models, looked up per (codelet, arch, footprint) and cached (hashed: dm*
/// policies ask once per worker per push; the cache is never iterated, so its order does not
/// matter).
#[derive(Debug, Clone, Default)]
pub struct Models {
    sources: Vec<Option<Source>>,
    cache: HashMap<(u16, Arch, u32), Option<Timing>, FixedState>,
}

impl Models {
    /// Models for `codelets`: the scenario's `runtime.models` first, then the StarPU machine's
    /// files.
    pub fn new(
        codelets: &[String],
        given: &BTreeMap<String, CodeletModel>,
        platform: &PlatformSpec,
    ) -> Result<Models, String> {
        let mut sources = Vec::new();
        for c in codelets {
            let s = if let Some(m) = given.get(c) {
                Some(Source::Given(format!("runtime.models.{c}"), m.clone()))
            } else if let PlatformSpec::StarpuMachine(m) = platform {
                match m.files.get(&format!("codelets/45/{c}.{}", m.hostname)) {
                    Some((label, text)) => Some(Source::Starpu(
                        label.clone(),
                        perfmodel::parse(text).map_err(|e| format!("{label}: {e}"))?,
                    )),
                    None => None,
                }
            } else {
                None
            };
            sources.push(s);
        }
        Ok(Models {
            sources,
            cache: HashMap::default(),
        })
    }

    /// Mean and standard deviation of `task` on `arch`, seconds; `None` if it cannot run there.
    pub fn time(&mut self, task: &Task, arch: Arch) -> Option<(f64, f64)> {
        self.timing(task, arch).map(|(m, sd, _)| (m, sd))
    }

    /// Mean, standard deviation and whether the model is calibrated there: a StarPU history
    /// entry needs STARPU_CALIBRATE_MINIMUM = 10 samples; below, the dm* policies see NaN
    /// (the time is still used to run the task, as StarPU-SimGrid does).
    pub fn timing(&mut self, task: &Task, arch: Arch) -> Option<Timing> {
        let key = (task.codelet, arch, task.footprint);
        if let Some(v) = self.cache.get(&key) {
            return *v;
        }
        let v = self.sources[task.codelet as usize]
            .as_ref()
            .and_then(|s| lookup(s, task, arch));
        self.cache.insert(key, v);
        v
    }

    pub fn has_model(&self, codelet: u16) -> bool {
        self.sources[codelet as usize].is_some()
    }

    /// Where `codelet`'s model comes from: `runtime.models.<codelet>` or a StarPU file.
    pub fn source(&self, codelet: u16) -> Option<&str> {
        self.sources[codelet as usize].as_ref().map(|s| match s {
            Source::Given(at, _) | Source::Starpu(at, _) => at.as_str(),
        })
    }
}

/// Samples a history entry needs to count as calibrated.
const CALIBRATE_MINIMUM: u64 = 10;

fn lookup(s: &Source, task: &Task, arch: Arch) -> Option<Timing> {
    let us = 1e-6;
    match s {
        Source::Given(_, m) => {
            let model = match arch {
                Arch::Cpu => m.cpu.as_ref(),
                Arch::Cuda(_) => m.cuda.as_ref(),
            }?;
            let (m, sd) = match model {
                TimeModel::Constant(d) => (d.0.as_secs_f64(), 0.0),
                TimeModel::Normal { mean, stddev } => {
                    (mean.0.as_secs_f64(), stddev.0.as_secs_f64())
                }
                TimeModel::Histogram(points) => {
                    let (_, d) = points.iter().min_by(|a, b| {
                        (a.0.0 - task.size)
                            .abs()
                            .total_cmp(&(b.0.0 - task.size).abs())
                    })?;
                    (d.0.as_secs_f64(), 0.0)
                }
                TimeModel::Power { a, b } => (a * task.size.powf(*b) * us, 0.0),
                TimeModel::PowerPlus { a, b, c } => ((a * task.size.powf(*b) + c) * us, 0.0),
            };
            Some((m, sd, true))
        }
        Source::Starpu(_, p) => {
            let (kind, dev) = match arch {
                Arch::Cpu => (perfmodel::DeviceKind::Cpu, 0),
                Arch::Cuda(d) => (perfmodel::DeviceKind::Cuda, d),
            };
            if let Some(e) = p.history(kind, dev, task.footprint)
                && e.n > 0
                && e.mean_us.is_finite()
            {
                return Some((
                    e.mean_us * us,
                    e.dev_us.max(0.0) * us,
                    e.n >= CALIBRATE_MINIMUM,
                ));
            }
            // No measurement at this footprint: the fitted regressions, if any.
            let comb = p.combs.iter().find(|c| {
                c.devices.len() == 1 && c.devices[0].kind == kind && c.devices[0].id == dev
            })?;
            let m = comb.impls.first()?;
            let [a, b, c] = m.nl;
            if a.is_finite() && b.is_finite() && c.is_finite() {
                return Some(((a * task.size.powf(b) + c) * us, 0.0, true));
            }
            let r = &m.regression;
            if r.alpha.is_finite() && r.beta.is_finite() && r.n > 1 {
                return Some((r.alpha * task.size.powf(r.beta) * us, 0.0, true));
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starpu_uses_every_gpu_and_the_cores_left_unless_told_and_refuses_more() {
        let m = |ncuda, ncpu| StarpuMachine {
            dir: String::new(),
            hostname: "attila".into(),
            ncuda,
            ncpu,
            limit_cuda_mem_mb: None,
            files: BTreeMap::new(),
        };
        // attila: 3 GPUs and 12 cores, one core driving each GPU (STARPU_NCUDA, STARPU_NCPU).
        assert_eq!(starpu_workers(&m(None, None), 3, 12), Ok((3, 9)));
        assert_eq!(starpu_workers(&m(Some(1), None), 3, 12), Ok((1, 11)));
        assert_eq!(starpu_workers(&m(Some(2), Some(4)), 3, 12), Ok((2, 4)));
        let err = starpu_workers(&m(Some(4), None), 3, 12).unwrap_err();
        assert!(
            err.starts_with("platform.ncuda: attila has 3 CUDA devices"),
            "{err}"
        );
        let err = starpu_workers(&m(None, Some(10)), 3, 12).unwrap_err();
        assert!(err.contains("so at most 9 CPU workers"), "{err}");
    }

    /// RAM and two GPUs, 1 GB/s and 10 us on every bus, no peer access.
    fn two_gpus() -> Machine {
        let node = |name: &str, gpu| MemNode {
            name: name.into(),
            endpoint: Endpoint::Gpu { node: 0, gpu },
            capacity: 1e9,
        };
        Machine {
            workers: workers(2, 0),
            nodes: vec![node("RAM", 0), node("CUDA0", 0), node("CUDA1", 1)],
            bw: vec![vec![1e9; 3]; 3],
            lat: vec![vec![1e-5; 3]; 3],
            direct: vec![
                vec![true, true, true],
                vec![true, true, false],
                vec![true, false, true],
            ],
        }
    }

    #[test]
    fn predictions_follow_starpu_transfer_predict() {
        let m = two_gpus();
        // starpu_transfer_predict: latency + 2 x ngpus x size / bandwidth, ngpus = 2:
        // 10 us + 4 x 1 MB / (1 GB/s) = 4.01 ms; GPU -> GPU without peer: two hops.
        assert!((m.predict(0, 1, 1e6) - 4.01e-3).abs() < 1e-15);
        assert!((m.predict(1, 2, 1e6) - 8.02e-3).abs() < 1e-15);
        // Alone on the bus: 10 us + 1 ms per hop.
        assert!((m.alone(1, 2, 1e6) - 2.02e-3).abs() < 1e-15);
        assert_eq!(m.predict(1, 1, 1e6), 0.0);
    }
}
