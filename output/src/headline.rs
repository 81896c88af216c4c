//! The lines `hetsim run` prints: each workload's result first (what a user asked the run
//! for), then how much simulating it cost. Read from the report only, so a test can check the
//! words without running a simulation.

use serde_json::Value;

use crate::Report;

/// At most this many NCCL lines (distinct operation, size and algorithm); the rest are
/// counted in one more line.
const NCCL_LINES: usize = 3;

/// The result lines of a run, one or more per workload, then the cost of the run.
pub fn lines(report: &Report) -> Vec<String> {
    let s = &report.summary;
    let name = &report.scenario;
    let mut out = Vec::new();
    if let Some(r) = s.get("runtime") {
        out.push(format!("{name}: {}", task_graph(r)));
    }
    if let Some(m) = s.get("mpi") {
        out.push(format!("{name}: {}", mpi(m)));
    }
    if let Some(c) = s.get("cuda") {
        out.extend(cuda(c).into_iter().map(|l| format!("{name}: {l}")));
    }
    if let Some(c) = s.get("chakra") {
        out.extend(chakra(c).into_iter().map(|l| format!("{name}: {l}")));
    }
    // What bounded communication: a faster link elsewhere would not have helped.
    if let Some(l) = busiest_link(report)
        .filter(|_| ["mpi", "cuda", "chakra"].iter().any(|k| s.get(k).is_some()))
    {
        out.push(format!("{name}: {}", bound(l, num(&s["sim_time_s"]))));
    }
    if out.is_empty() {
        out.push(format!("{name}: {}", flows(report)));
    }
    if let Some(jobs) = s.get("jobs") {
        out.extend(
            crate::jobs::lines(jobs)
                .into_iter()
                .map(|l| format!("{name}: {l}")),
        );
    }
    out.push(format!(
        "{name}: simulated {} in {:.3} s wall ({} events; {} flows, {} moved)",
        seconds(num(&s["sim_time_s"])),
        num(&s["wall_s"]),
        s["events"],
        s["flows"]["count"],
        bytes(num(&s["flows"]["bytes"])),
    ));
    out
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

/// `dmdas ran 1540 tasks in 1.850 s: 1275.0 GFlop/s on 3 GPUs + 8 CPUs`.
fn task_graph(r: &Value) -> String {
    let workers: Vec<&String> = r["workers"]
        .as_object()
        .map(|w| w.keys().collect())
        .unwrap_or_default();
    let gpus = workers.iter().filter(|w| w.starts_with("CUDA")).count();
    let cpus = workers.iter().filter(|w| w.starts_with("CPU")).count();
    let on = match (gpus, cpus) {
        (0, c) => plural(c, "CPU"),
        (g, 0) => plural(g, "GPU"),
        (g, c) => format!("{} + {}", plural(g, "GPU"), plural(c, "CPU")),
    };
    let evictions = r["evictions"].as_u64().unwrap_or(0);
    format!(
        "{} ran {} tasks in {}: {:.1} GFlop/s on {on}{}",
        r["scheduler"].as_str().unwrap_or("?"),
        r["tasks"],
        seconds(num(&r["makespan_s"])),
        num(&r["gflops"]),
        if evictions > 0 {
            format!(" ({} evictions)", evictions)
        } else {
            String::new()
        }
    )
}

/// `communication is 27.3 % of run time (mean of 64 ranks); the slowest, rank 12, ends at ...`.
fn mpi(m: &Value) -> String {
    let slowest = &m["slowest_rank"];
    let mut paths: Vec<String> = m["paths"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(_, p)| p["messages"].as_u64().unwrap_or(0) > 0)
        .map(|(k, p)| format!("{} {k}", p["messages"]))
        .collect();
    if paths.is_empty() {
        paths.push("none".into());
    }
    format!(
        "communication is {:.1} % of run time (mean of {} ranks); the slowest, rank {}, ends at {}; {} messages, {} ({})",
        100.0 * num(&m["comm_share"]),
        m["ranks"],
        slowest["rank"],
        seconds(num(&slowest["end_s"])),
        m["messages"],
        bytes(num(&m["bytes"])),
        paths.join(", "),
    )
}

/// `282.6 ms kernels`: the largest of each (key, words) time that is above zero, in order.
fn busiest_times(section: &Value, times: &[(&str, &str)]) -> Vec<String> {
    times
        .iter()
        .filter(|(k, _)| num(&section[k]["max"]) > 0.0)
        .map(|(k, what)| format!("{} {what}", seconds(num(&section[k]["max"]))))
        .collect()
}

/// The NCCL lines, then the GPUs' end and busy times.
fn cuda(c: &Value) -> Vec<String> {
    let mut out = nccl_lines(c, "summary.json: cuda.nccl");
    // Only what the program does: a pure NCCL program has no kernel or copy time to show.
    let busy = busiest_times(
        c,
        &[
            ("kernel_time_s", "kernels"),
            ("copy_time_s", "copies"),
            ("nccl_time_s", "NCCL"),
        ],
    );
    out.push(format!(
        "{} end at {}{}",
        plural(c["gpus"].as_u64().unwrap_or(0) as usize, "GPU"),
        seconds(num(&c["end_s"]["max"])),
        if busy.is_empty() {
            String::new()
        } else {
            format!("; per GPU at most {}", busy.join(", "))
        }
    ));
    out
}

/// One line per NCCL group (`AllReduce of 512 MiB on 8 GPUs: 12 calls, 3.970 ms each, busbw
/// 236.4 GB/s (ring/Simple)`), at most [`NCCL_LINES`], then how many others and where.
fn nccl_lines(c: &Value, more: &str) -> Vec<String> {
    let groups = c["nccl"].as_array().cloned().unwrap_or_default();
    let mut out: Vec<String> = groups
        .iter()
        .take(NCCL_LINES)
        .map(|g| {
            let bw = match g["busbw_GBps"].as_f64() {
                Some(b) => format!("busbw {b:.1} GB/s"),
                None => format!("algbw {:.1} GB/s", num(&g["algbw_GBps"])),
            };
            format!(
                "{} of {} on {} GPUs: {} each ({}), {bw}, {}",
                g["op"].as_str().unwrap_or("?"),
                binary_bytes(num(&g["bytes"])),
                g["gpus"],
                seconds(num(&g["mean_time_s"])),
                plural(g["calls"].as_u64().unwrap_or(0) as usize, "call"),
                g["algorithm_protocol"].as_str().unwrap_or("?"),
            )
        })
        .collect();
    if groups.len() > NCCL_LINES {
        out.push(format!(
            "and {} other NCCL operations ({more})",
            groups.len() - NCCL_LINES
        ));
    }
    out
}

/// `step of 0.42 s on 8 ranks (the slowest, rank 3); per rank at most 0.29 s of kernels, 0.05
/// s of CPU operators, 0.04 s of communication, 0.01 s of it exposed`, then the NCCL lines.
fn chakra(c: &Value) -> Vec<String> {
    let slowest = &c["slowest_rank"];
    // Only what the trace does: a pure communication trace has no kernel or CPU time.
    let mut busy = busiest_times(
        c,
        &[
            ("kernel_time_s", "of kernels"),
            ("cpu_time_s", "of CPU operators"),
        ],
    );
    busy.push(format!(
        "{} of communication, {} of it exposed (mean {})",
        seconds(num(&c["comm_time_s"]["max"])),
        seconds(num(&c["exposed_comm_s"]["max"])),
        seconds(num(&c["exposed_comm_s"]["mean"])),
    ));
    let mut out = vec![format!(
        "step of {} on {} (the slowest, rank {}); per rank at most {}",
        seconds(num(&c["step_time_s"])),
        plural(c["ranks"].as_u64().unwrap_or(0) as usize, "rank"),
        slowest["rank"],
        busy.join(", "),
    )];
    out.extend(nccl_lines(c, "summary.json: chakra.nccl"));
    out
}

/// The busiest link: the highest mean utilisation (bytes over bandwidth x run time, in the
/// busier direction), the first in platform order on a tie. The rule every picture and line
/// that names "the busiest links" follows.
pub fn busiest_link(report: &Report) -> Option<&crate::LinkRow> {
    report
        .links
        .iter()
        .fold(None, |best: Option<&crate::LinkRow>, l| match best {
            Some(b) if b.mean_utilisation >= l.mean_utilisation => Some(b),
            _ => Some(l),
        })
}

/// `busiest link node[0].pcie, 8.8 % used: busy 8.8 % of the run, at 100.0 % while busy`.
/// A link near 100 % while busy bounded the transfers that crossed it; utilisation above
/// 100 % means contention was switched off (every flow ran at full speed beside the others).
fn bound(l: &crate::LinkRow, sim_time_s: f64) -> String {
    let busy_share = if sim_time_s > 0.0 {
        l.busy_s / sim_time_s
    } else {
        0.0
    };
    let while_busy = if l.busy_s > 0.0 {
        l.mean_utilisation * sim_time_s / l.busy_s
    } else {
        0.0
    };
    format!(
        "busiest link {}, {:.1} % used: busy {:.1} % of the run, at {:.1} % while busy{}",
        l.link,
        100.0 * l.mean_utilisation,
        100.0 * busy_share,
        100.0 * while_busy,
        over_full(while_busy),
    )
}

/// Why a link can be more than fully used.
fn over_full(utilisation: f64) -> &'static str {
    if utilisation > 1.001 {
        " (over 100 %: contention is off, flows do not share bandwidth)"
    } else {
        ""
    }
}

/// After a `--set` that changed the links `changed` (by name): a line when none of them is the
/// busiest link, so that a change that could not help says so (`--set changed 2 links
/// (node[0].nic[0], node[1].nic[0]); none of them is the busiest link, node[0].pcie`).
pub fn set_note(report: &Report, changed: &[String]) -> Option<String> {
    let busiest = busiest_link(report)?;
    if changed.is_empty() || changed.contains(&busiest.link) {
        return None;
    }
    const NAMED: usize = 3;
    let mut names = changed
        .iter()
        .take(NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if changed.len() > NAMED {
        names.push_str(&format!(" and {} more", changed.len() - NAMED));
    }
    Some(format!(
        "{}: --set changed {} ({names}); none of them is the busiest link, {}",
        report.scenario,
        plural(changed.len(), "link"),
        busiest.link,
    ))
}

/// `6 flows move 3.304 GB in 163.8 ms; busiest link node[0].nic[0]:up, 100.0 % used`.
fn flows(report: &Report) -> String {
    let f = &report.summary["flows"];
    let busiest = busiest_link(report);
    format!(
        "{} move {} in {}{}",
        plural(f["count"].as_u64().unwrap_or(0) as usize, "flow"),
        bytes(num(&f["bytes"])),
        seconds(num(&f["last_end_s"])),
        busiest.map_or(String::new(), |l| format!(
            "; busiest link {}, {:.1} % used{}",
            l.link,
            100.0 * l.mean_utilisation,
            over_full(l.mean_utilisation),
        )),
    )
}

fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// The unit a duration is written in: (seconds per unit, name), so that the number stays
/// below 1000 (zero in seconds).
pub fn seconds_unit(s: f64) -> (f64, &'static str) {
    let a = s.abs();
    if a >= 1.0 || a == 0.0 {
        (1.0, "s")
    } else if a >= 1e-3 {
        (1e-3, "ms")
    } else if a >= 1e-6 {
        (1e-6, "µs")
    } else {
        (1e-9, "ns")
    }
}

/// A duration with four significant digits in a unit that keeps it readable.
pub fn seconds(s: f64) -> String {
    let (scale, unit) = seconds_unit(s);
    format!("{} {unit}", four_digits(s / scale))
}

/// Bytes in powers of ten (as flows.csv and link bandwidths count them).
pub fn bytes(b: f64) -> String {
    let a = b.abs();
    let (v, unit) = if a >= 1e9 {
        (b / 1e9, "GB")
    } else if a >= 1e6 {
        (b / 1e6, "MB")
    } else if a >= 1e3 {
        (b / 1e3, "kB")
    } else {
        (b, "B")
    };
    format!("{} {unit}", four_digits(v))
}

/// Bytes in powers of two, as NCCL and nccl-tests sizes are given.
pub fn binary_bytes(b: f64) -> String {
    let a = b.abs();
    let (v, unit) = if a >= (1u64 << 30) as f64 {
        (b / (1u64 << 30) as f64, "GiB")
    } else if a >= (1u64 << 20) as f64 {
        (b / (1u64 << 20) as f64, "MiB")
    } else if a >= 1024.0 {
        (b / 1024.0, "KiB")
    } else {
        (b, "B")
    };
    // Whole sizes (512 MiB) read better without decimals.
    format!("{} {unit}", crate::plot::trim_zeros(&four_digits(v)))
}

fn four_digits(v: f64) -> String {
    let a = v.abs();
    let decimals = if a >= 1000.0 {
        0
    } else if a >= 100.0 {
        1
    } else if a >= 10.0 {
        2
    } else {
        3
    };
    format!("{v:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report(summary: Value) -> Report {
        Report {
            scenario: "s".into(),
            summary,
            flows: Vec::new(),
            links: vec![crate::LinkRow {
                link: "nic".into(),
                bytes: 1.0,
                busy_s: 1.0,
                mean_utilisation: 0.5,
            }],
            record: None,
            mpi: None,
            cuda: None,
            chakra: None,
            runtime: None,
            jobs: Vec::new(),
            link_owners: Default::default(),
        }
    }

    fn base() -> Value {
        json!({
            "sim_time_s": 0.1638432, "wall_s": 0.003, "events": 15,
            "flows": {"count": 6, "bytes": 3.304e9, "last_end_s": 0.1638432},
        })
    }

    #[test]
    fn units_keep_four_digits() {
        assert_eq!(seconds(1.850454), "1.850 s");
        assert_eq!(seconds(0.1638432), "163.8 ms");
        assert_eq!(seconds(23.1e-6), "23.10 µs");
        assert_eq!(seconds(0.0), "0.000 s");
        assert_eq!(bytes(3.304e9), "3.304 GB");
        assert_eq!(bytes(512.0 * 1024.0 * 1024.0), "536.9 MB");
        assert_eq!(binary_bytes(512.0 * 1024.0 * 1024.0), "512 MiB");
        assert_eq!(binary_bytes(1536.0), "1.5 KiB");
        assert_eq!(binary_bytes(100.0), "100 B");
        assert_eq!(binary_bytes(1000.0), "1000 B");
    }

    #[test]
    fn flows_alone_say_what_moved_and_the_busiest_link() {
        let l = lines(&report(base()));
        assert_eq!(
            l,
            [
                "s: 6 flows move 3.304 GB in 163.8 ms; busiest link nic, 50.0 % used",
                "s: simulated 163.8 ms in 0.003 s wall (15 events; 6 flows, 3.304 GB moved)",
            ]
        );
    }

    #[test]
    fn a_task_graph_says_scheduler_makespan_and_gflops_first() {
        let mut s = base();
        s["runtime"] = json!({
            "scheduler": "dmdas", "tasks": 1540, "makespan_s": 1.850454, "gflops": 1274.98,
            "evictions": 0,
            "workers": {"CPU0": {}, "CPU1": {}, "CUDA0": {}, "CUDA1": {}, "CUDA2": {}},
        });
        let l = lines(&report(s));
        assert_eq!(
            l[0],
            "s: dmdas ran 1540 tasks in 1.850 s: 1275.0 GFlop/s on 3 GPUs + 2 CPUs"
        );
        assert_eq!(l.len(), 2, "no flows line beside a model's line");
    }

    #[test]
    fn mpi_says_communication_share_and_the_slowest_rank_first() {
        let mut s = base();
        s["mpi"] = json!({
            "ranks": 8, "comm_share": 0.2731, "slowest_rank": {"rank": 5, "end_s": 0.006878},
            "messages": 400, "bytes": 1.2388e8,
            "paths": {"gpudirect": {"messages": 200}, "hostcopy": {"messages": 0},
                      "nvlink": {"messages": 200}},
        });
        assert_eq!(
            lines(&report(s))[0],
            "s: communication is 27.3 % of run time (mean of 8 ranks); the slowest, rank 5, \
             ends at 6.878 ms; 400 messages, 123.9 MB (200 gpudirect, 200 nvlink)"
        );
    }

    #[test]
    fn nccl_says_time_and_busbw_per_operation() {
        let mut s = base();
        s["cuda"] = json!({
            "gpus": 8, "end_s": {"max": 0.3187}, "kernel_time_s": {"max": 0.2826},
            "copy_time_s": {"max": 0.0242}, "nccl_time_s": {"max": 0.0476},
            "nccl": [{"op": "all_reduce", "bytes": 536870912.0, "gpus": 8, "calls": 12,
                      "mean_time_s": 0.00397, "algbw_GBps": 135.2, "busbw_GBps": 236.6,
                      "algorithm_protocol": "ring/Simple"}],
        });
        let l = lines(&report(s));
        assert_eq!(
            l[0],
            "s: all_reduce of 512 MiB on 8 GPUs: 3.970 ms each (12 calls), busbw 236.6 GB/s, ring/Simple"
        );
        assert_eq!(
            l[1],
            "s: 8 GPUs end at 318.7 ms; per GPU at most 282.6 ms kernels, 24.20 ms copies, 47.60 ms NCCL"
        );
    }

    #[test]
    fn chakra_says_the_step_what_ranks_did_and_the_nccl_calls() {
        let mut s = base();
        s["chakra"] = json!({
            "ranks": 8, "step_time_s": 0.3412, "slowest_rank": {"rank": 3, "end_s": 0.3412},
            "kernel_time_s": {"max": 0.2928, "mean": 0.29}, "cpu_time_s": {"max": 0.0, "mean": 0.0},
            "comm_time_s": {"max": 0.05, "mean": 0.04}, "exposed_comm_s": {"max": 0.02, "mean": 0.01},
            "nccl": [{"op": "all_reduce", "bytes": 1048576.0, "gpus": 8, "calls": 5,
                      "mean_time_s": 0.001, "algbw_GBps": 1.0, "busbw_GBps": 1.75,
                      "algorithm_protocol": "ring/LL"}],
        });
        let l = lines(&report(s));
        assert_eq!(
            l[0],
            "s: step of 341.2 ms on 8 ranks (the slowest, rank 3); per rank at most 292.8 ms of kernels, 50.00 ms of communication, 20.00 ms of it exposed (mean 10.00 ms)"
        );
        assert_eq!(
            l[1],
            "s: all_reduce of 1 MiB on 8 GPUs: 1.000 ms each (5 calls), busbw 1.8 GB/s, ring/LL"
        );
        assert!(l[2].contains("busiest link nic"), "{}", l[2]);
    }

    fn link(name: &str, busy_s: f64, mean_utilisation: f64) -> crate::LinkRow {
        crate::LinkRow {
            link: name.into(),
            bytes: 1.0,
            busy_s,
            mean_utilisation,
        }
    }

    #[test]
    fn mpi_and_nccl_name_the_busiest_link_and_how_it_was_used() {
        // The halo exchange's bound: the PCIe host bus, full whenever it carried anything
        // (busy 3.387 ms of 38.59 ms at 8.778 % mean utilisation: 100 % while busy).
        let mut s = base();
        s["sim_time_s"] = json!(0.03859);
        s["mpi"] = json!({"ranks": 8, "slowest_rank": {}, "paths": {}});
        let mut r = report(s);
        r.links = vec![
            link("node[0].nic[0]", 0.003387, 0.08428),
            link("node[0].pcie", 0.003387, 0.08777),
            link("node[1].pcie", 0.003387, 0.08777),
        ];
        assert_eq!(
            lines(&r)[1],
            "s: busiest link node[0].pcie, 8.8 % used: busy 8.8 % of the run, at 100.0 % while busy"
        );
        let mut s = base();
        s["cuda"] = json!({"gpus": 2, "nccl": [], "end_s": {"max": 1.0}});
        s["sim_time_s"] = json!(2.0);
        let mut r = report(s);
        r.links = vec![link("nvlink", 1.0, 0.25)];
        assert_eq!(
            lines(&r)[1],
            "s: busiest link nvlink, 25.0 % used: busy 50.0 % of the run, at 50.0 % while busy"
        );
    }

    #[test]
    fn a_link_over_full_says_contention_is_off() {
        let mut r = report(base());
        r.links = vec![link("nic", 0.1638432, 3.84)];
        assert!(lines(&r)[0].ends_with(
            "busiest link nic, 384.0 % used (over 100 %: contention is off, flows do not share bandwidth)"
        ));
    }

    #[test]
    fn a_task_graph_or_flows_alone_have_no_separate_bound_line() {
        assert_eq!(lines(&report(base())).len(), 2);
    }

    #[test]
    fn a_set_that_missed_the_busiest_link_says_so() {
        let mut r = report(base());
        r.links = vec![link("pcie", 1.0, 0.9), link("nic", 1.0, 0.5)];
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            set_note(&r, &names(&["nic", "a", "b", "c"])).as_deref(),
            Some(
                "s: --set changed 4 links (nic, a, b and 1 more); none of them is the busiest link, pcie"
            )
        );
        assert_eq!(set_note(&r, &names(&["nic", "pcie"])), None);
        assert_eq!(set_note(&r, &[]), None);
    }
}
