//! hetsim's outputs: the run summary, flows and link tables.
//!
//! Everything is read from the world after a run; rows come in a fixed order (flows in
//! workload order, links in platform order) and JSON keys are sorted, so the same scenario and
//! seed give byte-identical files (apart from `wall_s`). Files are written next to their final
//! name and renamed only once all of them are complete: a failed write leaves no partial set.

use bevy_ecs::prelude::*;
use serde::Serialize;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

use hetsim_components::entities::{Flow, FlowDone, Link, LinkUsage};
use hetsim_engine::{RunStats, Switches};
use hetsim_systems::platform::LinkEntities;

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
    pub summary: Value,
    pub flows: Vec<FlowRow>,
    pub links: Vec<LinkRow>,
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
            "mean_completion_s": if durations.is_empty() { 0.0 } else { durations.iter().fold(0.0, |a, b| a + b) / durations.len() as f64 },
            "max_completion_s": durations.iter().copied().fold(0.0, f64::max),
            "last_end_s": flows.iter().map(|f| f.end_s).fold(0.0, f64::max),
        },
        "links": {
            "used": links.len(),
            "bytes": links.iter().map(|l| l.bytes).fold(0.0, |a, b| a + b),
            "max_mean_utilisation": links.iter().map(|l| l.mean_utilisation).fold(0.0, f64::max),
        },
    });
    Report {
        summary,
        flows,
        links,
    }
}

fn flow_rows(world: &mut World) -> Vec<FlowRow> {
    let mut q = world.query::<(Entity, &Flow, Option<&FlowDone>)>();
    let mut rows: Vec<(u32, FlowRow)> = q
        .iter(world)
        .map(|(e, f, done)| {
            let row = FlowRow {
                id: f.id.clone(),
                src: f.src.clone(),
                dst: f.dst.clone(),
                bytes: f.size,
                start_s: f.start.as_secs_f64(),
                end_s: done.map_or(f64::NAN, |d| d.end_s),
            };
            (e.index_u32(), row)
        })
        .collect();
    // Spawn order is workload order; archetype moves on completion must not reorder rows.
    rows.sort_by_key(|(i, _)| *i);
    rows.into_iter().map(|(_, r)| r).collect()
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

/// Which files to write.
#[derive(Debug, Clone, Copy)]
pub struct Files {
    pub flows_csv: bool,
    pub links_csv: bool,
}

/// Writes the report into `dir`; returns the files written.
pub fn write(dir: &Path, report: &Report, files: Files) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut staged: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut stage = |name: &str, bytes: Vec<u8>| -> std::io::Result<()> {
        let fin = dir.join(name);
        let tmp = dir.join(format!(".{name}.partial"));
        std::fs::write(&tmp, bytes)?;
        staged.push((tmp, fin));
        Ok(())
    };
    let result = (|| {
        let mut summary =
            serde_json::to_vec_pretty(&report.summary).map_err(std::io::Error::other)?;
        summary.push(b'\n');
        stage("summary.json", summary)?;
        if files.flows_csv {
            stage(
                "flows.csv",
                csv_bytes(&report.flows, "id,src,dst,bytes,start_s,end_s")?,
            )?;
        }
        if files.links_csv {
            stage(
                "links.csv",
                csv_bytes(&report.links, "link,bytes,busy_s,mean_utilisation")?,
            )?;
        }
        Ok(())
    })();
    if let Err(e) = result {
        for (tmp, _) in &staged {
            let _ = std::fs::remove_file(tmp);
        }
        return Err(e);
    }
    for (tmp, fin) in &staged {
        std::fs::rename(tmp, fin)?;
    }
    Ok(staged.into_iter().map(|(_, f)| f).collect())
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
