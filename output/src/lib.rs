//! hetsim's outputs: the run summary, flows and link tables, and from the recorder the
//! timeline pictures, traces (Chrome `trace.json`, `paje.trace`) and `intervals.csv`.
//!
//! Everything is read from the world after a run; rows come in a fixed order (flows in
//! workload order, links in platform order) and JSON keys are sorted, so the same scenario and
//! seed give byte-identical files (apart from `wall_s`). Files are written next to their final
//! name and renamed only once all of them are complete: a failed write leaves no partial set.

pub mod busiest;
pub mod chrome;
pub mod headline;
pub mod intervals;
pub mod jobs;
pub mod order;
pub mod paje;
pub mod plot;
pub mod staged;
pub mod starpu;
pub mod study;

use bevy_ecs::prelude::*;
use serde::Serialize;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

use hetsim_components::{Flow, FlowDone, Link, LinkUsage};
use hetsim_engine::record::Recorder;
use hetsim_engine::{RunStats, Switches};
use hetsim_schema::scenario::OutputSpec;
use hetsim_systems::chakra::ChakraReport;
use hetsim_systems::cuda::CudaReport;
use hetsim_systems::jobs::compile::{JobsPlaced, Placed};
use hetsim_systems::mpi::{MpiJobReport, MpiReport, RankTotals};
use hetsim_systems::nccl::CollectiveRecord;
use hetsim_systems::platform::LinkEntities;
use hetsim_systems::runtime::RuntimeReport;

/// One row of `flows.csv`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowRow {
    pub id: String,
    pub src: String,
    pub dst: String,
    pub bytes: f64,
    pub start_s: f64,
    pub end_s: f64,
}

/// One row of `links.csv` (links that carried traffic).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkRow {
    pub link: String,
    pub bytes: f64,
    pub busy_s: f64,
    /// Bytes over (bandwidth x simulated time) in the busier direction.
    pub mean_utilisation: f64,
}

/// What a run produced, ready to print or write.
#[derive(Debug, Clone)]
pub struct Report {
    pub scenario: String,
    pub summary: Value,
    pub flows: Vec<FlowRow>,
    pub links: Vec<LinkRow>,
    /// What systems recorded, when the run recorded.
    pub record: Option<Recorder>,
    /// Per-rank totals of an MPI workload.
    pub mpi: Option<MpiReport>,
    /// Per-GPU totals and collectives of a CUDA workload.
    pub cuda: Option<CudaReport>,
    /// Per-rank totals and collectives of a Chakra workload.
    pub chakra: Option<ChakraReport>,
    /// What a task runtime ran: per-task times and the graph.
    pub runtime: Option<RuntimeReport>,
    /// Where and when each job ran, when the scenario has `jobs`.
    pub jobs: Vec<Placed>,
    /// With jobs: the job that used each link most.
    pub link_owners: jobs::LinkOwners,
}

/// Collects the report of a finished run.
pub fn report(world: &mut World, scenario: &str, seed: u64, stats: &RunStats) -> Report {
    let flows = flow_rows(world);
    let sim_time_s = stats.sim_time.as_secs_f64();
    let links = link_rows(world, sim_time_s);
    let switches: serde_json::Map<String, Value> = world
        .resource::<Switches>()
        .iter()
        .map(|s| (s.name.to_string(), Value::Bool(s.on)))
        .collect();
    // A flow's duration is its end less its start; its end (what `hetsim flows` prints as its
    // completion time) is in flows.csv, and the last one is `last_end_s`.
    let durations: Vec<f64> = flows.iter().map(|f| f.end_s - f.start_s).collect();
    let summary = json!({
        "scenario": scenario,
        "seed": seed,
        "sim_time_s": sim_time_s,
        "events": stats.events,
        "steps": stats.steps,
        "wall_s": stats.wall_s,
        "switches": switches,
        "flows": {
            "count": flows.len(),
            "bytes": flows.iter().map(|f| f.bytes).fold(0.0, |a, b| a + b),
            "mean_duration_s": if durations.is_empty() { 0.0 } else { durations.iter().fold(0.0, |a, b| a + b) / durations.len() as f64 },
            "max_duration_s": durations.iter().copied().fold(0.0, f64::max),
            "last_end_s": flows.iter().map(|f| f.end_s).fold(0.0, f64::max),
        },
        "links": {
            "used": links.len(),
            "bytes": links.iter().map(|l| l.bytes).fold(0.0, |a, b| a + b),
            "max_mean_utilisation": links.iter().map(|l| l.mean_utilisation).fold(0.0, f64::max),
        },
    });
    let mpi = world.get_resource::<MpiReport>().cloned();
    let mut summary = summary;
    if let Some(m) = &mpi {
        summary["mpi"] = mpi_summary(m);
    }
    let runtime = world.get_resource::<RuntimeReport>().cloned();
    if let Some(r) = &runtime {
        summary["runtime"] = runtime_summary(r);
    }
    let cuda = world.get_resource::<CudaReport>().cloned();
    if let Some(c) = &cuda {
        summary["cuda"] = cuda_summary(c);
    }
    let chakra = world.get_resource::<ChakraReport>().cloned();
    if let Some(c) = &chakra {
        summary["chakra"] = chakra_summary(c);
    }
    let jobs = world
        .get_resource::<JobsPlaced>()
        .map(|j| j.0.clone())
        .unwrap_or_default();
    let mut link_owners = jobs::LinkOwners::default();
    if !jobs.is_empty() {
        summary["jobs"] = jobs::summary(&jobs, &flows, mpi.as_ref(), cuda.as_ref());
        link_owners = jobs::link_owners(world, &jobs);
    }
    let record = world
        .remove_resource::<Recorder>()
        .filter(|r| r.is_on() && !r.is_empty());
    Report {
        jobs,
        link_owners,
        scenario: scenario.to_string(),
        summary,
        flows,
        links,
        record,
        mpi,
        cuda,
        chakra,
        runtime,
    }
}

/// Mean and max of a per-rank quantity.
fn mean_max(values: impl Iterator<Item = f64> + Clone) -> Value {
    let n = values.clone().count();
    let sum = values.clone().fold(0.0, |a, b| a + b);
    json!({
        "mean": if n == 0 { 0.0 } else { sum / n as f64 },
        "max": values.fold(0.0, f64::max),
    })
}

/// The rank that ends last (the first of them on a tie): it sets the run time.
fn slowest<T>(ranks: &[T], end_s: impl Fn(&T) -> f64) -> Option<&T> {
    ranks.iter().fold(None, |best: Option<&T>, r| match best {
        Some(b) if end_s(b) >= end_s(r) => Some(b),
        _ => Some(r),
    })
}

/// How many NCCL calls ran with each `algorithm/protocol`.
fn algorithm_protocol<'a>(
    records: impl Iterator<Item = &'a CollectiveRecord>,
) -> std::collections::BTreeMap<String, u64> {
    let mut chosen = std::collections::BTreeMap::new();
    for k in records {
        *chosen.entry(format!("{}/{}", k.algo, k.proto)).or_default() += 1;
    }
    chosen
}

/// The `mpi` section of the summary: time split per rank, messages and bytes per path.
fn mpi_summary(m: &MpiReport) -> Value {
    mpi_totals(&m.ranks, &m.messages, &m.bytes)
}

/// A job's `mpi` section, as [`mpi_summary`] for the whole run.
fn mpi_job_summary(j: &MpiJobReport) -> Value {
    mpi_totals(&j.ranks, &j.messages, &j.bytes)
}

/// Time split per rank, messages and bytes per path.
fn mpi_totals(ranks: &[RankTotals], messages: &[u64; 4], bytes: &[f64; 4]) -> Value {
    let mut paths = serde_json::Map::new();
    for (k, p) in hetsim_systems::mpi::Path::ALL.iter().enumerate() {
        paths.insert(
            p.name().to_string(),
            json!({ "messages": messages[k], "bytes": bytes[k] }),
        );
    }
    let slowest = slowest(ranks, |r| r.end_s);
    let shares = ranks.iter().map(|r| {
        if r.end_s > 0.0 {
            r.comm_s / r.end_s
        } else {
            0.0
        }
    });
    json!({
        "ranks": ranks.len(),
        "comm_share": mean_max(shares)["mean"],
        "slowest_rank": slowest.map(|r| json!({ "rank": r.rank, "end_s": r.end_s })),
        "comm_time_s": mean_max(ranks.iter().map(|r| r.comm_s)),
        "compute_time_s": mean_max(ranks.iter().map(|r| r.compute_s)),
        "end_s": mean_max(ranks.iter().map(|r| r.end_s)),
        "messages": messages.iter().sum::<u64>(),
        "bytes": bytes.iter().fold(0.0, |a, b| a + b),
        "paths": paths,
    })
}

/// The `cuda` section: busy time per GPU and the NCCL calls by algorithm and protocol.
fn cuda_summary(c: &CudaReport) -> Value {
    cuda_totals(&c.devices, &c.collectives)
}

/// A job's `cuda` section, as [`cuda_summary`] for the whole run.
fn cuda_job_summary(j: &hetsim_systems::cuda::CudaJobReport) -> Value {
    cuda_totals(&j.devices, &j.collectives)
}

/// Busy time per GPU and the NCCL calls by algorithm and protocol.
fn cuda_totals(
    d: &[hetsim_systems::cuda::DeviceTotals],
    collectives: &[CollectiveRecord],
) -> Value {
    json!({
        "gpus": d.len(),
        "kernel_time_s": mean_max(d.iter().map(|g| g.kernel_s)),
        "copy_time_s": mean_max(d.iter().map(|g| g.copy_s)),
        "nccl_time_s": mean_max(d.iter().map(|g| g.nccl_s)),
        "end_s": mean_max(d.iter().map(|g| g.end_s)),
        "kernels": d.iter().map(|g| g.kernels).sum::<u64>(),
        "copies": d.iter().map(|g| g.copies).sum::<u64>(),
        "collectives": collectives.len(),
        "algorithm_protocol": algorithm_protocol(collectives.iter()),
        "nccl": nccl_groups(collectives.iter()),
    })
}

/// The `chakra` section: the step (the last rank's end), each rank's time split (mean and
/// max), the NCCL calls grouped as for CUDA, messages, and the nodes with nothing to run.
fn chakra_summary(c: &ChakraReport) -> Value {
    let r = &c.ranks;
    let slowest = slowest(r, |x| x.end_s);
    let records = || c.collectives.iter().map(|(_, k)| k);
    let counts = |v: &[(String, u64)]| -> serde_json::Map<String, Value> {
        v.iter().map(|(k, n)| (k.clone(), json!(n))).collect()
    };
    json!({
        "ranks": r.len(),
        "step_time_s": slowest.map_or(0.0, |s| s.end_s),
        "slowest_rank": slowest.map(|s| json!({ "rank": s.rank, "end_s": s.end_s })),
        "kernel_time_s": mean_max(r.iter().map(|x| x.kernel_s)),
        "cpu_time_s": mean_max(r.iter().map(|x| x.cpu_s)),
        "comm_time_s": mean_max(r.iter().map(|x| x.comm_s)),
        "exposed_comm_s": mean_max(r.iter().map(|x| x.exposed_s)),
        "nodes": r.iter().map(|x| x.nodes as u64).sum::<u64>(),
        "collectives": c.collectives.len(),
        "algorithm_protocol": algorithm_protocol(records()),
        "nccl": nccl_groups(records()),
        "messages": c.messages,
        "message_bytes": c.message_bytes,
        "skipped_nodes": counts(&c.skipped),
        "ignored_attributes": counts(&c.ignored),
    })
}

/// NCCL calls grouped by (operation, size, algorithm/protocol) in order of first call: how
/// many, their mean time and nccl-tests' algbw and busbw (bytes / time, x the bus factor).
fn nccl_groups<'a>(records: impl Iterator<Item = &'a CollectiveRecord>) -> Value {
    let mut groups: Vec<(
        String,
        f64,
        String,
        Vec<&hetsim_systems::nccl::CollectiveRecord>,
    )> = Vec::new();
    for k in records {
        let how = format!("{}/{}", k.algo, k.proto);
        match groups
            .iter_mut()
            .find(|g| g.0 == k.op && g.1 == k.bytes && g.2 == how)
        {
            Some(g) => g.3.push(k),
            None => groups.push((k.op.clone(), k.bytes, how, vec![k])),
        }
    }
    groups
        .iter()
        .map(|(op, bytes, how, calls)| {
            let time = calls.iter().map(|k| k.end_s - k.start_s).sum::<f64>() / calls.len() as f64;
            let algbw = if time > 0.0 { bytes / time / 1e9 } else { 0.0 };
            json!({
                "op": op,
                "bytes": bytes,
                "gpus": calls[0].ranks,
                "algorithm_protocol": how,
                "calls": calls.len(),
                "mean_time_s": time,
                "algbw_GBps": algbw,
                "busbw_GBps": calls[0].bus_factor.map(|f| algbw * f),
            })
        })
        .collect()
}

/// The `runtime` section: makespan, GFlop/s, per-worker busy time, data movement.
fn runtime_summary(r: &RuntimeReport) -> Value {
    let workers: serde_json::Map<String, Value> = r
        .workers
        .iter()
        .map(|(name, busy, tasks)| (name.clone(), json!({ "busy_s": busy, "tasks": tasks })))
        .collect();
    json!({
        "scheduler": r.scheduler,
        "tasks": r.tasks,
        "makespan_s": r.makespan_s,
        "gflops": r.gflops,
        "workers": workers,
        "bytes": { "h2d": r.bytes_h2d, "d2h": r.bytes_d2h, "d2d": r.bytes_d2d },
        "transfers": r.transfers,
        "evictions": r.evictions,
        "writebacks": r.writebacks,
        "tidy_writebacks": r.tidy_writebacks,
    })
}

/// `collectives.csv`: one row per NCCL call (a group is one row), in the order they ended;
/// a Chakra workload's rows name their process group first.
/// `collectives.csv`: a row per NCCL call; records with a group (a Chakra process group, a
/// job) begin with it under `group_header`.
fn collectives_csv(
    records: &[(Option<&str>, &CollectiveRecord)],
    group_header: &'static str,
) -> std::io::Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let grouped = records.first().is_some_and(|(g, _)| g.is_some());
    let mut header = vec![
        "op",
        "bytes",
        "algo",
        "proto",
        "channels",
        "start_s",
        "end_s",
        "nccl_model_us",
    ];
    if grouped {
        header.insert(0, group_header);
    }
    w.write_record(&header)?;
    for (group, k) in records {
        let mut row = vec![
            k.op.clone(),
            k.bytes.to_string(),
            k.algo.clone(),
            k.proto.clone(),
            k.channels.to_string(),
            k.start_s.to_string(),
            k.end_s.to_string(),
            k.predicted_us.to_string(),
        ];
        if let Some(g) = group {
            row.insert(0, g.to_string());
        }
        w.write_record(&row)?;
    }
    w.into_inner()
        .map_err(|e| std::io::Error::other(e.to_string()))
}

/// `ranks.csv` of a Chakra workload: each rank's end and time split, seconds.
fn chakra_ranks_csv(c: &ChakraReport) -> std::io::Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "rank",
        "end_s",
        "kernel_s",
        "cpu_s",
        "comm_s",
        "exposed_comm_s",
        "nodes",
    ])?;
    for r in &c.ranks {
        w.write_record([
            r.rank.to_string(),
            r.end_s.to_string(),
            r.kernel_s.to_string(),
            r.cpu_s.to_string(),
            r.comm_s.to_string(),
            r.exposed_s.to_string(),
            r.nodes.to_string(),
        ])?;
    }
    w.into_inner()
        .map_err(|e| std::io::Error::other(e.to_string()))
}

fn flow_rows(world: &mut World) -> Vec<FlowRow> {
    // Spawn order is workload order; archetype moves on completion must not reorder rows.
    // The entities are sorted (their indices are distinct), then each row is built once, in
    // that order: no row is moved or copied.
    let mut order: Vec<Entity> = world
        .query_filtered::<Entity, With<Flow>>()
        .iter(world)
        .collect();
    order.sort_unstable_by_key(|e| e.index_u32());
    let mut q = world.query::<(&Flow, Option<&FlowDone>)>();
    order
        .into_iter()
        .map(|e| {
            let (f, done) = q.get(world, e).expect("a flow entity");
            FlowRow {
                id: f.id.to_string(),
                src: f.src.to_string(),
                dst: f.dst.to_string(),
                bytes: f.size,
                start_s: f.start.as_secs_f64(),
                end_s: done.map_or(f64::NAN, |d| d.end_s),
            }
        })
        .collect()
}

fn link_rows(world: &mut World, sim_time_s: f64) -> Vec<LinkRow> {
    let Some(entities) = world.get_resource::<LinkEntities>().map(|l| l.0.clone()) else {
        return Vec::new();
    };
    entities
        .iter()
        .filter_map(|&e| {
            let (name, link, usage) = (
                world.get::<Name>(e)?,
                world.get::<Link>(e)?,
                world.get::<LinkUsage>(e)?,
            );
            let bytes = usage.bytes[0] + usage.bytes[1];
            if bytes <= 0.0 {
                return None;
            }
            // Shared and fat-pipe links count everything in direction 0.
            let busiest = usage.bytes[0].max(usage.bytes[1]);
            let capacity = link.bandwidth * sim_time_s;
            Some(LinkRow {
                link: name.as_str().to_string(),
                bytes,
                busy_s: usage.busy[0].max(usage.busy[1]),
                mean_utilisation: if capacity > 0.0 {
                    busiest / capacity
                } else {
                    0.0
                },
            })
        })
        .collect()
}

/// Writes the report into `dir` as `spec` asks; returns the files written. Files are staged
/// under temporary names and renamed only once all are complete.
pub fn write(dir: &Path, report: &Report, spec: &OutputSpec) -> std::io::Result<Vec<PathBuf>> {
    staged::write_all(dir, |st| stage_all(st, report, spec))
}

fn stage_all(st: &mut staged::Staged, report: &Report, spec: &OutputSpec) -> std::io::Result<()> {
    let starpu = report.runtime.as_ref().filter(|_| spec.starpu_traces);
    // tasks.rec (tens of MB for a large DAG) is formatted on a second core while the other
    // files are formatted and written.
    std::thread::scope(|s| {
        let tasks_rec = starpu.map(|r| s.spawn(|| starpu::tasks_rec(r)));
        stage_tables(st, report, spec)?;
        if let (Some(r), Some(tasks_rec)) = (starpu, tasks_rec) {
            let (data, dag) = (starpu::data_rec(r), starpu::dag_dot(r));
            let tasks = tasks_rec
                .join()
                .map_err(|_| std::io::Error::other("tasks.rec: writer panicked"))?;
            st.bytes("tasks.rec", tasks)?;
            st.bytes("data.rec", data)?;
            st.bytes("dag.dot", dag)?;
        }
        if let Some(r) = report.runtime.as_ref().filter(|_| spec.runtime_log) {
            st.bytes("runtime-log.txt", runtime_log(&r.log))?;
        }
        Ok::<(), std::io::Error>(())
    })?;
    stage_record(st, report, spec)
}

/// `runtime-log.txt`: the task runtime's data events, a line each.
fn runtime_log(lines: &[String]) -> Vec<u8> {
    let mut out = Vec::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for line in lines {
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    out
}

/// summary.json and the tables: flows, links, ranks, collectives.
fn stage_tables(
    st: &mut staged::Staged,
    report: &Report,
    spec: &OutputSpec,
) -> std::io::Result<()> {
    st.json("summary.json", &report.summary)?;
    if spec.flows_csv && report.jobs.is_empty() {
        st.bytes(
            "flows.csv",
            csv_bytes(&report.flows, "id,src,dst,bytes,start_s,end_s")?,
        )?;
    } else if spec.flows_csv {
        st.bytes("flows.csv", job_flows_csv(&report.flows, &report.jobs)?)?;
    }
    if spec.links_csv {
        st.bytes(
            "links.csv",
            csv_bytes(&report.links, "link,bytes,busy_s,mean_utilisation")?,
        )?;
    }
    if let Some(m) = &report.mpi {
        st.bytes("ranks.csv", ranks_csv(m)?)?;
    }
    if let Some(c) = &report.cuda {
        let rows: Vec<_> = if c.jobs.is_empty() {
            c.collectives.iter().map(|k| (None, k)).collect()
        } else {
            c.jobs
                .iter()
                .flat_map(|j| j.collectives.iter().map(|k| (Some(j.name.as_str()), k)))
                .collect()
        };
        st.bytes("collectives.csv", collectives_csv(&rows, "job")?)?;
    }
    if let Some(c) = &report.chakra {
        let rows: Vec<_> = c
            .collectives
            .iter()
            .map(|(g, k)| (Some(g.as_str()), k))
            .collect();
        // Beside a CUDA or MPI workload in a mix, its own names.
        let (colls, ranks) = match (report.cuda.is_some(), report.mpi.is_some()) {
            (false, false) => ("collectives.csv", "ranks.csv"),
            _ => ("chakra_collectives.csv", "chakra_ranks.csv"),
        };
        st.bytes(colls, collectives_csv(&rows, "group")?)?;
        st.bytes(ranks, chakra_ranks_csv(c)?)?;
    }
    Ok(())
}

/// The recorded timeline's files: intervals, Chrome and Paje traces, pictures.
fn stage_record(
    st: &mut staged::Staged,
    report: &Report,
    spec: &OutputSpec,
) -> std::io::Result<()> {
    let Some(rec) = &report.record else {
        return Ok(());
    };
    if spec.intervals_csv {
        st.bytes("intervals.csv", intervals::csv(rec)?)?;
    }
    if spec.trace_json {
        st.bytes("trace.json", chrome::trace_json(rec, &report.scenario)?)?;
    }
    if spec.paje {
        st.bytes("paje.trace", paje::paje_trace(rec)?)?;
    }
    if spec.timeline
        && let Some(g) =
            plot::Gantt::build(rec, &format!("{}: timeline", report.scenario), spec.width)
    {
        st.figure("timeline", &g)?;
    }
    if spec.link_plot
        && let Some(c) =
            link_utilisation(rec, &report.scenario, spec.width, &report.jobs_of_links())
    {
        st.figure("link_utilisation", &c)?;
    }
    Ok(())
}

/// How many links the utilisation picture shows.
const BUSIEST_LINKS: usize = 8;

/// Utilisation over time of the busiest links ([`busiest`]'s rule), from the `utilisation`
/// counters; `None` when no link was sampled. With more samples than pixels, each pixel column
/// shows the mean over its time span (the note says so).
impl Report {
    /// Each link's job when the run had jobs: (job names, link name -> job index).
    fn jobs_of_links(&self) -> Option<(Vec<&str>, &jobs::LinkOwners)> {
        (!self.jobs.is_empty()).then(|| {
            let names = self.jobs.iter().map(|j| j.name.as_str()).collect();
            (names, &self.link_owners)
        })
    }
}

/// A run of jobs colours each link by the job that used it most and names that job.
pub fn link_utilisation(
    rec: &Recorder,
    scenario: &str,
    width: u32,
    owners: &Option<(Vec<&str>, &jobs::LinkOwners)>,
) -> Option<plot::Panels> {
    let end = rec
        .intervals()
        .iter()
        .map(|i| i.end)
        .chain(rec.samples().iter().map(|s| s.at))
        .max()?
        .as_secs_f64();
    let mut series: Vec<Vec<(f64, f64)>> = vec![Vec::new(); rec.resources().len()];
    for s in busiest::utilisation_samples(rec) {
        let pts = &mut series[s.resource.index()];
        let t = s.at.as_secs_f64();
        // The last sample at one instant holds.
        if pts.last().is_some_and(|p: &(f64, f64)| p.0 == t) {
            pts.pop();
        }
        pts.push((t, s.value));
    }
    let load = busiest::loads(rec, end);
    let mut ranked: Vec<(usize, f64)> = series
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.is_empty())
        .map(|(i, _)| (i, load[i]))
        .collect();
    if ranked.is_empty() || end <= 0.0 {
        return None;
    }
    let total = ranked.len();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked.truncate(BUSIEST_LINKS);
    let (scale, unit) = plot::time_unit(end);
    let bins = (width as usize).saturating_sub(120).max(50);
    let mut binned = false;
    let lines: Vec<plot::Series> = ranked
        .iter()
        .map(|&(i, _)| {
            let pts = &series[i];
            let drawn = if pts.len() > bins {
                binned = true;
                plot::lines::binned_mean(pts, end, bins)
            } else {
                plot::lines::steps(pts, end)
            };
            let name = &rec.resources()[i].name;
            let owner = owners.as_ref().and_then(|(names, o)| {
                // Rows of full-duplex links carry their direction (`name:up`).
                let link = name.rsplit_once(':').map_or(name.as_str(), |(l, _)| l);
                o.0.get(link).map(|&j| (names[j], j))
            });
            plot::Series {
                label: owner.map_or_else(|| name.clone(), |(job, _)| format!("{name} ({job})")),
                points: drawn.into_iter().map(|(t, v)| (t / scale, v)).collect(),
                style: plot::lines::LineStyle {
                    colour: owner.map(|(_, j)| j),
                    dash: 0,
                },
                gaps: Vec::new(),
            }
        })
        .collect();
    let mut note = format!(
        "% of each link's bandwidth in use; the {} busiest of {total} links ({})",
        ranked.len(),
        busiest::RULE
    );
    if owners.is_some() {
        note.push_str("; coloured by the job that moved the most bytes over it");
    }
    if binned {
        note.push_str("; each pixel column shows the mean over its time span");
    }
    let y_max = lines
        .iter()
        .flat_map(|l: &plot::Series| l.points.iter().map(|p| p.1))
        .fold(100.0f64, f64::max);
    Some(plot::Panels {
        title: format!("{scenario}: link utilisation"),
        note: Some(note),
        x_desc: format!("simulated time ({unit})"),
        y_unit: "%".to_string(),
        x_end: end / scale,
        // Headroom for the panel title above a full line.
        y_max: y_max * 1.3,
        series: lines,
        width,
    })
}

/// `ranks.csv`: one row per rank.
/// `ranks.csv`: a row per rank; with jobs, each row first names its job (ranks numbered
/// within their job).
fn ranks_csv(m: &MpiReport) -> std::io::Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let header = [
        "rank",
        "node",
        "gpu",
        "comm_time_s",
        "compute_time_s",
        "end_s",
    ];
    let row = |r: &RankTotals| {
        [
            r.rank.to_string(),
            r.node.to_string(),
            r.gpu.to_string(),
            r.comm_s.to_string(),
            r.compute_s.to_string(),
            r.end_s.to_string(),
        ]
    };
    if m.jobs.is_empty() {
        w.write_record(header)?;
        for r in &m.ranks {
            w.write_record(row(r))?;
        }
    } else {
        w.write_record(std::iter::once("job").chain(header))?;
        for j in &m.jobs {
            for r in &j.ranks {
                w.write_record(std::iter::once(j.name.clone()).chain(row(r)))?;
            }
        }
    }
    w.into_inner()
        .map_err(|e| std::io::Error::other(e.to_string()))
}

/// `flows.csv` of a run of jobs: each row first names its flow's job (empty for none).
fn job_flows_csv(flows: &[FlowRow], jobs: &[Placed]) -> std::io::Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(["job", "id", "src", "dst", "bytes", "start_s", "end_s"])?;
    for f in flows {
        w.write_record([
            jobs::job_of(&f.id, &f.src, jobs)
                .map_or("", |j| jobs[j].name.as_str())
                .to_string(),
            f.id.clone(),
            f.src.clone(),
            f.dst.clone(),
            f.bytes.to_string(),
            f.start_s.to_string(),
            f.end_s.to_string(),
        ])?;
    }
    w.into_inner()
        .map_err(|e| std::io::Error::other(e.to_string()))
}

/// CSV of `rows`; `header` is what serde would write, for when there are no rows.
fn csv_bytes<T: Serialize>(rows: &[T], header: &str) -> std::io::Result<Vec<u8>> {
    if rows.is_empty() {
        return Ok(format!("{header}\n").into_bytes());
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in rows {
        w.serialize(r).map_err(std::io::Error::other)?;
    }
    w.into_inner()
        .map_err(|e| std::io::Error::other(e.to_string()))
}
