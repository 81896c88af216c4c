//! A scenario's `jobs` made into what the models run: each job's nodes chosen by its
//! placement, its MPI ranks given those nodes, its flows renamed onto them, its start kept.
//! Plain data in, plain data out; errors name the job and its field.

use hetsim_schema::SimTime;
use hetsim_schema::jobs::{JobPlacement, JobSpec};
use hetsim_schema::mpi::{MpiSpec, Placement};
use hetsim_schema::scenario::{FlowSpec, Network, PlatformSpec, Workload};

use super::instance::Instance;
use super::placement::{self, Machine, Policy, Request};
use crate::cuda::CudaJob;
use crate::mpi::MpiJob;

/// What a job runs, as the models take it.
enum Work {
    Mpi(MpiSpec),
    Cuda(hetsim_schema::cuda::CudaSpec),
    Flows,
}

/// The jobs, ready for the models.
#[derive(Debug, Clone, Default)]
pub struct Compiled {
    pub mpi: Vec<MpiJob>,
    pub cuda: Vec<CudaJob>,
    /// Flows of every flow job, on platform nodes, starting at their job's start, each with
    /// its field path.
    pub flows: Vec<(String, FlowSpec)>,
    pub placed: Vec<Placed>,
}

impl Compiled {
    /// Only job `i` of them, on the nodes it has among all (to run it alone).
    pub fn only(self, i: usize) -> Compiled {
        let Some(job) = self.placed.get(i).cloned() else {
            return Compiled::default();
        };
        let prefix = format!("jobs[{i}].");
        Compiled {
            mpi: self
                .mpi
                .into_iter()
                .filter(|m| m.name.as_deref() == Some(job.name.as_str()))
                .collect(),
            cuda: self
                .cuda
                .into_iter()
                .filter(|c| c.name.as_deref() == Some(job.name.as_str()))
                .collect(),
            flows: self
                .flows
                .into_iter()
                .filter(|(path, _)| path.starts_with(&prefix))
                .collect(),
            placed: vec![job],
        }
    }
}

/// Where and when each job ran (inserted by whoever assembles the app; reports read it).
#[derive(bevy_ecs::prelude::Resource, Debug, Clone, Default)]
pub struct JobsPlaced(pub Vec<Placed>);

/// Where and when a job ran, for its report.
#[derive(Debug, Clone, PartialEq)]
pub struct Placed {
    pub name: String,
    pub kind: &'static str,
    pub nodes: Vec<u32>,
    pub start: SimTime,
}

/// The machine as jobs see it: nodes, GPUs per node, nodes per leaf switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub nodes: u32,
    pub gpus: u32,
    pub per_leaf: u32,
}

/// The shape of a cluster platform; jobs need one.
pub fn shape(platform: &PlatformSpec) -> Result<Shape, String> {
    let PlatformSpec::Cluster(c) = platform else {
        return Err("jobs: jobs need a Cluster platform (nodes with GPUs)".into());
    };
    let per_leaf = match &c.network {
        Network::FatTree(ft) => ft.children.first().copied().unwrap_or(c.nodes),
        _ => c.nodes,
    };
    Ok(Shape {
        nodes: c.nodes,
        gpus: c.node.gpus,
        per_leaf: per_leaf.max(1),
    })
}

/// Places every job and makes it into model input; `read` reads a TraceR job file.
pub fn compile(
    jobs: &[JobSpec],
    shape: Shape,
    seed: u64,
    read: &dyn Fn(&str) -> Result<Vec<u8>, String>,
) -> Result<Compiled, String> {
    check_names(jobs)?;
    let mut requests = Vec::with_capacity(jobs.len());
    let mut specs = Vec::with_capacity(jobs.len());
    for (i, job) in jobs.iter().enumerate() {
        let at = |e: String| format!("job `{}`: jobs[{i}].{e}", job.name);
        let (request, spec) = request_of(job, shape, read).map_err(at)?;
        requests.push(request);
        specs.push(spec);
    }
    let machine = Machine {
        nodes: shape.nodes,
        per_leaf: shape.per_leaf,
    };
    let nodes = placement::place(&requests, machine, seed).map_err(|e| format!("jobs: {e}"))?;
    let mut out = Compiled::default();
    for (i, ((job, nodes), spec)) in jobs.iter().zip(nodes).zip(specs).enumerate() {
        let at = |e: String| format!("job `{}`: jobs[{i}].{e}", job.name);
        match spec {
            Work::Flows => {
                let Workload::Flows(flows) = &job.workload else {
                    unreachable!("flow work comes from a flow list")
                };
                for (k, f) in flows.iter().enumerate() {
                    let path = format!("jobs[{i}].workload.Flows[{k}]");
                    let f = flow_on((k, f), &job.name, &nodes, job.start.0)
                        .map_err(|e| at(format!("workload.Flows[{k}].{e}")))?;
                    out.flows.push((path, f));
                }
            }
            Work::Mpi(spec) => out.mpi.push(instance(spec, i, job, &nodes)),
            Work::Cuda(spec) => out.cuda.push(instance(spec, i, job, &nodes)),
        }
        out.placed.push(Placed {
            name: job.name.clone(),
            kind: job.workload.kind(),
            nodes,
            start: job.start.0,
        });
    }
    Ok(out)
}

/// Job `i` as its model runs it: on `nodes`, from its start, named, its path its workload's.
fn instance<S>(spec: S, i: usize, job: &JobSpec, nodes: &[u32]) -> Instance<S> {
    Instance {
        name: Some(job.name.clone()),
        path: format!("jobs[{i}].workload.{}", job.workload.kind()),
        spec,
        nodes: Some(nodes.to_vec()),
        start: job.start.0,
    }
}

/// Job names are plain and distinct: they prefix rows and flow ids.
fn check_names(jobs: &[JobSpec]) -> Result<(), String> {
    for (i, job) in jobs.iter().enumerate() {
        hetsim_schema::load::check_name(&job.name).map_err(|e| format!("jobs[{i}].name: {e}"))?;
        if let Some(k) = jobs[..i].iter().position(|j| j.name == job.name) {
            return Err(format!(
                "jobs[{i}].name: `{}` is the name of jobs[{k}] too; a job's name is its own",
                job.name
            ));
        }
    }
    Ok(())
}

/// A job's placement request and its work as it will run (a TraceR job file becomes an
/// explicit placement on the job's nodes).
fn request_of(
    job: &JobSpec,
    shape: Shape,
    read: &dyn Fn(&str) -> Result<Vec<u8>, String>,
) -> Result<(Request, Work), String> {
    let mut work = match &job.workload {
        Workload::Mpi(m) => Work::Mpi(m.clone()),
        Workload::Cuda(c) => Work::Cuda(c.clone()),
        Workload::Flows(_) => Work::Flows,
        other => {
            return Err(format!(
                "workload: a job runs Mpi, Cuda or Flows; {} jobs are not supported yet",
                other.kind()
            ));
        }
    };
    let policy = match &job.placement {
        JobPlacement::Contiguous => Policy::Contiguous,
        JobPlacement::Linear(offset) => Policy::Linear { offset: *offset },
        JobPlacement::Random => Policy::Random,
        JobPlacement::Spread => Policy::Spread,
        JobPlacement::Nodes(list) => Policy::Nodes(list.clone()),
        JobPlacement::TraceR {
            file,
            ranks_per_node,
        } => {
            let Work::Mpi(spec) = &mut work else {
                return Err("placement.TraceR: a TraceR job file places MPI ranks".into());
            };
            let per = ranks_per_node.unwrap_or(spec.gpus_per_node.unwrap_or(shape.gpus));
            tracer_policy(spec, file, per, shape, read)?
        }
    };
    let needed = match (&job.workload, &policy, &work) {
        (_, Policy::Nodes(list), _) => list.len() as u32,
        (
            _,
            Policy::Slots {
                slots,
                ranks_per_node,
            },
            _,
        ) => placement::slot_nodes(slots, *ranks_per_node).len() as u32,
        (Workload::Flows(flows), ..) => flows_nodes(flows),
        (_, _, Work::Mpi(m)) => m
            .ranks
            .div_ceil(m.gpus_per_node.unwrap_or(shape.gpus).max(1)),
        (_, _, Work::Cuda(c)) => match (c.gpus, job.nodes) {
            (Some(g), _) => g.div_ceil(shape.gpus.max(1)),
            (None, Some(n)) => n,
            (None, None) => {
                return Err("nodes: a Cuda job without `gpus` runs on every GPU of its nodes; say how many nodes (or set workload.Cuda.gpus)".into());
            }
        },
        _ => 0,
    };
    let nodes = job.nodes.unwrap_or(needed);
    if nodes < needed {
        return Err(format!(
            "nodes: {nodes} nodes, but the job needs {needed} (its {} and placement)",
            job.workload.kind()
        ));
    }
    if nodes == 0 {
        return Err("nodes: the job holds no node".into());
    }
    let request = Request {
        name: job.name.clone(),
        nodes,
        policy,
    };
    Ok((request, work))
}

/// TraceR's job file as a placement: the nodes its slots reach, and each rank on its slot's
/// GPU of the job's own node list.
fn tracer_policy(
    spec: &mut MpiSpec,
    file: &str,
    per: u32,
    shape: Shape,
    read: &dyn Fn(&str) -> Result<Vec<u8>, String>,
) -> Result<Policy, String> {
    let bad = |e: String| format!("placement.TraceR.file: `{file}`: {e}");
    let slots = super::tracer::job_file(&read(file).map_err(bad)?).map_err(bad)?;
    if slots.len() != spec.ranks as usize {
        return Err(bad(format!(
            "{} slots for the job's {} ranks",
            slots.len(),
            spec.ranks
        )));
    }
    if per == 0 || per > shape.gpus {
        return Err(format!(
            "placement.TraceR.ranks_per_node: expected 1 to {} (the GPUs of a node), got {per}",
            shape.gpus
        ));
    }
    let nodes = placement::slot_nodes(&slots, per);
    let names = slots
        .iter()
        .map(|s| {
            let local = nodes.iter().position(|&n| n == s / per).expect("listed");
            format!("node[{local}].gpu[{}]", s % per)
        })
        .collect();
    spec.placement = Placement::Explicit(names);
    spec.gpus_per_node = Some(per);
    Ok(Policy::Slots {
        slots,
        ranks_per_node: per,
    })
}

/// Nodes a flow list names: its highest `node[N]` plus one.
fn flows_nodes(flows: &[FlowSpec]) -> u32 {
    flows
        .iter()
        .flat_map(|f| [&f.src, &f.dst])
        .filter_map(|e| e.as_deref().and_then(node_of))
        .map(|(n, _)| n + 1)
        .max()
        .unwrap_or(0)
}

/// `node[N]` at the start of an endpoint name, and what follows it.
fn node_of(name: &str) -> Option<(u32, &str)> {
    let rest = name.strip_prefix("node[")?;
    let (n, rest) = rest.split_once(']')?;
    Some((n.parse().ok()?, rest))
}

/// A job's flow on the platform: endpoints on the job's nodes, id prefixed with the job's
/// name, start after the job's. Flows over listed links keep their links.
fn flow_on(
    (k, f): (usize, &FlowSpec),
    job: &str,
    nodes: &[u32],
    start: SimTime,
) -> Result<FlowSpec, String> {
    let rename = |field: &str, e: &Option<String>| -> Result<Option<String>, String> {
        let Some(name) = e else { return Ok(None) };
        let (n, rest) = node_of(name).ok_or_else(|| {
            format!("{field}: `{name}`: a job's endpoints are node[N]... of its own nodes")
        })?;
        let on = nodes.get(n as usize).ok_or_else(|| {
            format!(
                "{field}: `{name}`: the job holds {} nodes (node[0] to node[{}])",
                nodes.len(),
                nodes.len().saturating_sub(1)
            )
        })?;
        Ok(Some(format!("node[{on}]{rest}")))
    };
    let mut out = f.clone();
    out.src = rename("src", &f.src)?;
    out.dst = rename("dst", &f.dst)?;
    let id = f.id.clone().unwrap_or_else(|| format!("f{k}"));
    out.id = Some(format!("{job}/{id}"));
    out.start = hetsim_schema::units::Duration(start.saturating_add(f.start.0));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPE: Shape = Shape {
        nodes: 8,
        gpus: 4,
        per_leaf: 4,
    };

    fn jobs(text: &str) -> Vec<JobSpec> {
        hetsim_schema::load::from_ron(text, "test", "").unwrap()
    }

    fn no_files(_: &str) -> Result<Vec<u8>, String> {
        Err("no files here".into())
    }

    #[test]
    fn an_mpi_job_holds_its_ranks_nodes_and_starts_when_it_says() {
        let j = jobs(
            r#"[Job(name: "a", workload: Mpi(ranks: 6, program: Generator(Halo3d(iterations: 1, compute: "1ms"))), placement: Linear(5), start: "2ms")]"#,
        );
        let c = compile(&j, SHAPE, 0, &no_files).unwrap();
        assert_eq!(c.mpi[0].nodes.as_deref(), Some(&[5, 6][..]));
        assert_eq!(c.mpi[0].start, SimTime::from_nanos(2_000_000));
        assert_eq!(c.mpi[0].path, "jobs[0].workload.Mpi");
        assert_eq!(c.placed[0].kind, "Mpi");
    }

    #[test]
    fn flows_move_onto_the_jobs_nodes_with_its_name_and_start() {
        let j = jobs(
            r#"[Job(name: "f", workload: Flows([FlowSpec(src: Some("node[1].gpu[0]"), dst: Some("node[0].nic[0]"), size: "1MB", start: "1ms")]), placement: Nodes([6, 2]), start: "1ms")]"#,
        );
        let c = compile(&j, SHAPE, 0, &no_files).unwrap();
        let (path, f) = &c.flows[0];
        assert_eq!(path, "jobs[0].workload.Flows[0]");
        assert_eq!(f.src.as_deref(), Some("node[2].gpu[0]"));
        assert_eq!(f.dst.as_deref(), Some("node[6].nic[0]"));
        assert_eq!(f.id.as_deref(), Some("f/f0"));
        assert_eq!(f.start.0, SimTime::from_nanos(2_000_000));
    }

    #[test]
    fn a_tracer_job_file_places_each_rank_on_its_slot() {
        // Slots 9, 8, 1, 0 at 2 ranks per node: nodes 4 and 0, rank 0 on node 4's GPU 1.
        let file: Vec<u8> = [9i32, 8, 1, 0]
            .iter()
            .flat_map(|s| s.to_le_bytes())
            .collect();
        let read = |_: &str| Ok(file.clone());
        let j = jobs(
            r#"[Job(name: "t", workload: Mpi(ranks: 4, program: Generator(Halo3d(iterations: 1, compute: "1ms"))), placement: TraceR(file: "job0", ranks_per_node: 2))]"#,
        );
        let c = compile(&j, SHAPE, 0, &read).unwrap();
        assert_eq!(c.mpi[0].nodes.as_deref(), Some(&[4, 0][..]));
        let Placement::Explicit(names) = &c.mpi[0].spec.placement else {
            panic!("an explicit placement")
        };
        assert_eq!(
            names,
            &[
                "node[0].gpu[1]",
                "node[0].gpu[0]",
                "node[1].gpu[1]",
                "node[1].gpu[0]"
            ]
        );
        let short = |_: &str| Ok(file[..8].to_vec());
        let e = compile(&j, SHAPE, 0, &short).unwrap_err();
        assert!(e.contains("2 slots for the job's 4 ranks"), "{e}");
    }

    #[test]
    fn a_cuda_job_needs_its_gpus_or_its_nodes() {
        let prog = r#"program: [Kernel(stream: 0, name: "k", time: "1ms")]"#;
        let j = jobs(&format!(
            r#"[Job(name: "c", workload: Cuda(gpus: 6, {prog}))]"#
        ));
        let c = compile(&j, SHAPE, 0, &no_files).unwrap();
        assert_eq!(c.cuda[0].nodes.as_deref(), Some(&[0, 1][..]));
        let j = jobs(&format!(r#"[Job(name: "c", workload: Cuda({prog}))]"#));
        let e = compile(&j, SHAPE, 0, &no_files).unwrap_err();
        assert!(
            e.contains("job `c`: jobs[0].nodes: a Cuda job without `gpus`"),
            "{e}"
        );
    }

    #[test]
    fn only_keeps_one_job_on_the_nodes_it_had_among_all() {
        let j = jobs(
            r#"[Job(name: "a", workload: Flows([FlowSpec(src: Some("node[0].host"), dst: Some("node[1].host"), size: "1MB")])),
                Job(name: "b", workload: Mpi(ranks: 4, program: Generator(Halo3d(iterations: 1, compute: "1ms"))), placement: Random)]"#,
        );
        let all = compile(&j, SHAPE, 5, &no_files).unwrap();
        let b = all.clone().only(1);
        assert!(b.flows.is_empty());
        assert_eq!(b.mpi.len(), 1);
        assert_eq!(b.placed, vec![all.placed[1].clone()]);
        assert_eq!(all.clone().only(0).flows.len(), 1);
    }

    #[test]
    fn the_machine_shape_comes_from_a_cluster_and_its_leaves() {
        let p: PlatformSpec = hetsim_schema::load::from_ron(
            r#"Cluster(nodes: 36, node: NodeSpec(gpus: 4, gpu: GpuSpec(name: "g", memory: "16GiB", speed: "1TFlop/s")), network: FatTree(children: [18, 2], bandwidth: "10GB/s"))"#,
            "test",
            "",
        )
        .unwrap();
        assert_eq!(
            shape(&p).unwrap(),
            Shape {
                nodes: 36,
                gpus: 4,
                per_leaf: 18
            }
        );
    }
}
