//! Each job's own results when a scenario runs several (`jobs`): the `jobs` section of
//! summary.json, the job of each flow for flows.csv, and each job's headline line. The
//! slowdown against the job alone is added by whoever ran it alone (`alone_s`).

use serde_json::{Value, json};

use hetsim_systems::cuda::CudaReport;
use hetsim_systems::jobs::compile::Placed;
use hetsim_systems::mpi::MpiReport;

use crate::FlowRow;

/// The index in `jobs` of the job a flow (its `id` and source row `src`) belongs to: the one
/// its id or its source row names first (`halo/m3.data`, `halo/node[2].rank[5]`); `None` for
/// a flow of no job.
pub fn job_of(id: &str, src: &str, jobs: &[Placed]) -> Option<usize> {
    let named = |s: &str| {
        let (prefix, _) = s.split_once('/')?;
        jobs.iter().position(|j| j.name == prefix)
    };
    named(id).or_else(|| named(src))
}

/// The `jobs` section: per job its nodes, start, end and time, its flows and bytes, and for
/// an MPI job its ranks' time split and messages, for a CUDA job its GPUs' and collectives'.
pub fn summary(
    jobs: &[Placed],
    flows: &[FlowRow],
    mpi: Option<&MpiReport>,
    cuda: Option<&CudaReport>,
) -> Value {
    let owner: Vec<Option<usize>> = flows.iter().map(|f| job_of(&f.id, &f.src, jobs)).collect();
    let rows: Vec<Value> = jobs
        .iter()
        .enumerate()
        .map(|(j, job)| {
            let mine: Vec<&FlowRow> = flows
                .iter()
                .zip(&owner)
                .filter(|(_, o)| **o == Some(j))
                .map(|(f, _)| f)
                .collect();
            let start_s = job.start.as_secs_f64();
            let flows_end = mine.iter().map(|f| f.end_s).fold(start_s, f64::max);
            let mut row = json!({
                "name": job.name,
                "workload": job.kind,
                "nodes": job.nodes,
                "start_s": start_s,
                "flows": mine.len(),
                "flow_bytes": mine.iter().map(|f| f.bytes).fold(0.0, |a, b| a + b),
            });
            let ranks = mpi.and_then(|m| m.jobs.iter().find(|r| r.name == job.name));
            let gpus = cuda.and_then(|c| c.jobs.iter().find(|g| g.name == job.name));
            let end_s = match (ranks, gpus) {
                (Some(r), _) => {
                    row["mpi"] = crate::mpi_job_summary(r);
                    r.ranks.iter().map(|x| x.end_s).fold(start_s, f64::max)
                }
                (_, Some(g)) => {
                    row["cuda"] = crate::cuda_job_summary(g);
                    g.devices.iter().map(|x| x.end_s).fold(start_s, f64::max)
                }
                _ => flows_end,
            };
            row["end_s"] = json!(end_s);
            row["sim_time_s"] = json!(end_s - start_s);
            row
        })
        .collect();
    Value::Array(rows)
}

/// One line per job: `job halo (Mpi, 16 nodes from 0 s): 5.712 ms; alone 5.700 ms, 1.002x`.
pub fn lines(jobs: &Value) -> Vec<String> {
    let Some(jobs) = jobs.as_array() else {
        return Vec::new();
    };
    jobs.iter()
        .map(|j| {
            let num = |v: &Value| v.as_f64().unwrap_or(0.0);
            let alone = match (j.get("alone_s"), j.get("slowdown")) {
                (Some(a), Some(s)) => format!(
                    "; alone {}, slowdown {:.3}x",
                    crate::headline::seconds(num(a)),
                    num(s)
                ),
                _ => String::new(),
            };
            let comm = j
                .get("mpi")
                .map(|m| {
                    format!(
                        ", communication {:.1} %",
                        100.0 * m["comm_share"].as_f64().unwrap_or(0.0)
                    )
                })
                .unwrap_or_default();
            format!(
                "job {} ({}, {} nodes from {}): {}{comm}{alone}",
                j["name"].as_str().unwrap_or("?"),
                j["workload"].as_str().unwrap_or("?"),
                j["nodes"].as_array().map_or(0, Vec::len),
                crate::headline::seconds(num(&j["start_s"])),
                crate::headline::seconds(num(&j["sim_time_s"])),
            )
        })
        .collect()
}

/// For each link that carried a job's bytes, by name: the job (its index in `jobs`) that
/// moved the most bytes over it, both directions together (the first job on a tie).
pub fn link_owners(world: &mut bevy_ecs::world::World, jobs: &[Placed]) -> LinkOwners {
    use hetsim_components::Flow;
    use hetsim_systems::network::FlowRoute;
    let Some(names) = world
        .get_resource::<hetsim_systems::platform::Topology>()
        .map(|t| t.links.iter().map(|l| l.name.clone()).collect::<Vec<_>>())
    else {
        return LinkOwners::default();
    };
    let mut bytes = vec![vec![0.0f64; jobs.len()]; names.len()];
    let mut q = world.query::<(&Flow, &FlowRoute)>();
    for (f, route) in q.iter(world) {
        let Some(j) = job_of(&f.id.as_text(), &f.src, jobs) else {
            continue;
        };
        for hop in &route.0.hops {
            bytes[hop.link as usize][j] += f.size;
        }
    }
    let owner =
        names
            .into_iter()
            .zip(bytes)
            .filter_map(|(name, per_job)| {
                let (j, most) = per_job.iter().enumerate().fold((0, 0.0), |best, (j, &b)| {
                    if b > best.1 { (j, b) } else { best }
                });
                (most > 0.0).then_some((name, j))
            })
            .collect();
    LinkOwners(owner)
}

/// Link name -> index of the job that used it most ([`link_owners`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LinkOwners(pub std::collections::BTreeMap<String, usize>);
