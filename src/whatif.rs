//! The built-in what-if of `hetsim run` without a file: the four questions hetsim is for, each
//! answered by running one embedded scenario (`scenarios/whatif/`) as it is and changed.
//!
//! - GPUDirect instead of HostCopy: an MPI halo exchange between GPU buffers on two nodes.
//! - Six GPUs per node instead of four: the same exchange on 24 ranks, six nodes of four GPUs
//!   against four nodes of six, one NIC per node either way.
//! - A tree instead of a ring: one NCCL allreduce, both algorithms forced, and the one NCCL's
//!   own tuner picks.
//! - dmdas instead of dmda: a tiled Cholesky on a StarPU-calibrated machine.
//!
//! Every number is simulated here; nothing is stored. The runs are independent and run in
//! parallel, and their results are put together in question order (deterministic).

use rayon::prelude::*;
use serde_json::{Value, json};

use crate::{Error, RunOptions};

/// A configuration: the scenario file as it is, changed by these overrides and switches.
#[derive(Debug, Clone, Copy)]
pub struct Variant {
    pub label: &'static str,
    pub set: &'static [&'static str],
    pub disable: &'static [&'static str],
}

/// What a question compares, read from a run's summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Mean MPI communication time per rank.
    MpiComm,
    /// Mean time of the NCCL operations.
    NcclTime,
    /// The task graph's makespan.
    Makespan,
}

impl Metric {
    fn read(self, summary: &Value) -> Option<f64> {
        match self {
            Metric::MpiComm => summary["mpi"]["comm_time_s"]["mean"].as_f64(),
            Metric::NcclTime => summary["cuda"]["nccl"][0]["mean_time_s"].as_f64(),
            Metric::Makespan => summary["runtime"]["makespan_s"].as_f64(),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Metric::MpiComm => "mpi.comm_time_s.mean",
            Metric::NcclTime => "cuda.nccl[0].mean_time_s",
            Metric::Makespan => "runtime.makespan_s",
        }
    }
}

/// One what-if: `before` is how it is done today, `after` the alternative asked about.
#[derive(Debug, Clone, Copy)]
pub struct Question {
    pub id: &'static str,
    /// "GPUDirect instead of HostCopy" (it starts the answer, so it starts as a sentence).
    pub ask: &'static str,
    /// What the metric measures, as the answer says it ("the halo exchange's communication").
    pub what: &'static str,
    /// Where, said after the numbers ("2 nodes x 4 V100").
    pub context: &'static str,
    /// The embedded scenario file (its path in the repository).
    pub file: &'static str,
    pub metric: Metric,
    pub before: Variant,
    pub after: Variant,
    /// Also run the file as it is and say what it chose (NCCL's own pick).
    pub aside: bool,
    /// The command that asks the question at scale.
    pub further: &'static str,
}

const HALO: &str = "scenarios/whatif/halo.ron";

/// The questions, in the order they are answered.
pub const QUESTIONS: [Question; 4] = [
    Question {
        id: "gpudirect",
        ask: "GPUDirect instead of HostCopy",
        what: "the halo exchange's communication per rank",
        context: "2 nodes x 4 V100, one 100 Gb/s NIC each",
        file: HALO,
        metric: Metric::MpiComm,
        before: Variant {
            label: "HostCopy",
            set: &[],
            disable: &["gpudirect"],
        },
        after: Variant {
            label: "GPUDirect",
            set: &[],
            disable: &[],
        },
        aside: false,
        further: "hetsim study scenarios/studies/gpudirect-vs-hostcopy.ron",
    },
    Question {
        id: "gpus-per-node",
        ask: "Six GPUs per node instead of four",
        what: "the halo exchange's communication per rank",
        context: "24 ranks, one NIC per node",
        file: HALO,
        metric: Metric::MpiComm,
        before: Variant {
            label: "6 nodes x 4 GPUs",
            set: &["workload.Mpi.ranks=24", "platform.nodes=6"],
            disable: &[],
        },
        after: Variant {
            label: "4 nodes x 6 GPUs",
            set: &[
                "workload.Mpi.ranks=24",
                "platform.nodes=4",
                "platform.node.gpus=6",
                "workload.Mpi.gpus_per_node=6",
            ],
            disable: &[],
        },
        aside: false,
        further: "hetsim study scenarios/studies/gpus-per-node.ron",
    },
    Question {
        id: "tree",
        ask: "A tree instead of a ring",
        what: "the time of a 64 MiB NCCL allreduce",
        context: "8 GPUs on 2 nodes",
        file: "scenarios/whatif/allreduce.ron",
        metric: Metric::NcclTime,
        before: Variant {
            label: "Ring",
            set: &["workload.nccl.algo=Ring"],
            disable: &[],
        },
        after: Variant {
            label: "Tree",
            set: &["workload.nccl.algo=Tree"],
            disable: &[],
        },
        aside: true,
        further: "hetsim study scenarios/studies/nccl-scaling.ron",
    },
    Question {
        id: "dmdas",
        ask: "dmdas instead of dmda",
        what: "the makespan of a 20 x 20-tile Cholesky",
        context: "attila: 3 GPUs + 8 CPUs, StarPU's calibration",
        file: "scenarios/whatif/cholesky.ron",
        metric: Metric::Makespan,
        before: Variant {
            label: "dmda",
            set: &["runtime.scheduler=dmda"],
            disable: &[],
        },
        after: Variant {
            label: "dmdas",
            set: &["runtime.scheduler=dmdas"],
            disable: &[],
        },
        aside: false,
        further: "hetsim study scenarios/studies/cholesky-schedulers.ron",
    },
];

/// A question's answer: the metric before and after, the summaries of the runs.
#[derive(Debug, Clone)]
pub struct Answer {
    pub question: Question,
    pub before: f64,
    pub after: f64,
    pub before_summary: Value,
    pub after_summary: Value,
    /// The summary of the file run as it is, when the question asks for it.
    pub aside: Option<Value>,
}

impl Answer {
    /// after / before - 1, in %.
    pub fn change_pct(&self) -> f64 {
        100.0 * (self.after / self.before - 1.0)
    }
}

/// Runs every question; `disable` switches model components off in every run.
pub fn run(disable: &[String]) -> Result<Vec<Answer>, Error> {
    check_disable(disable)?;
    let mut jobs: Vec<(usize, Option<Variant>)> = Vec::new();
    for (q, question) in QUESTIONS.iter().enumerate() {
        jobs.push((q, Some(question.before)));
        jobs.push((q, Some(question.after)));
        if question.aside {
            jobs.push((q, None));
        }
    }
    let results: Vec<Result<Value, Error>> = jobs
        .par_iter()
        .map(|&(q, variant)| simulate(&QUESTIONS[q], variant, disable))
        .collect();
    let mut results = results.into_iter();
    let mut answers = Vec::new();
    for question in QUESTIONS {
        let before_summary = results.next().expect("one result per job")?;
        let after_summary = results.next().expect("one result per job")?;
        let aside = if question.aside {
            Some(results.next().expect("one result per job")?)
        } else {
            None
        };
        let value = |summary: &Value, label: &str| {
            question.metric.read(summary).ok_or_else(|| {
                Error::Run(format!(
                    "what-if `{}` ({label}): the run has no {}",
                    question.id,
                    question.metric.name()
                ))
            })
        };
        answers.push(Answer {
            before: value(&before_summary, question.before.label)?,
            after: value(&after_summary, question.after.label)?,
            question,
            before_summary,
            after_summary,
            aside,
        });
    }
    Ok(answers)
}

/// A switch a question turns off in one of its two runs would be off in both, and the
/// question would answer "unchanged": refused, as `--set` is.
fn check_disable(disable: &[String]) -> Result<(), Error> {
    for s in disable {
        if let Some(q) = QUESTIONS.iter().find(|q| {
            q.before.disable.contains(&s.as_str()) || q.after.disable.contains(&s.as_str())
        }) {
            return Err(Error::Input(format!(
                "--disable {s}: the what-if question `{}` compares runs with {s} on and off; \
                 run its file instead: hetsim run {} --disable {s}",
                q.id, q.file
            )));
        }
    }
    Ok(())
}

/// One run of a question's file, as it is (`None`) or as a variant; its summary.
fn simulate(q: &Question, variant: Option<Variant>, disable: &[String]) -> Result<Value, Error> {
    let set: Vec<String> = variant
        .map(|v| v.set.iter().map(|s| s.to_string()).collect())
        .unwrap_or_default();
    let scenario =
        crate::embedded::scenario(q.file, &set).map_err(|e| Error::Input(e.to_string()))?;
    let mut off: Vec<String> = variant
        .map(|v| v.disable.iter().map(|s| s.to_string()).collect())
        .unwrap_or_default();
    off.extend(disable.iter().cloned());
    // Only the summary is kept: recording the timelines of nine runs would cost most of the
    // run; each file's own run draws them.
    off.push("record".into());
    let opts = RunOptions {
        disable: off,
        progress: false,
        ..Default::default()
    };
    let label = variant.map_or("as given", |v| v.label);
    crate::simulate_report(&scenario, &opts)
        .map(|r| {
            // What the model says, without the wall-clock time: the what-if's files are then
            // byte-identical from run to run.
            let mut summary = r.summary;
            if let Some(m) = summary.as_object_mut() {
                m.remove("wall_s");
            }
            summary
        })
        .map_err(|e| e.within(&format!("what-if `{}` ({label})", q.id)))
}

/// The answer in one line, the result first: `GPUDirect instead of HostCopy cuts the halo
/// exchange's communication per rank by 23.0 % (HostCopy 2.438 ms -> GPUDirect 1.878 ms; ...)`.
pub fn sentence(a: &Answer) -> String {
    let q = &a.question;
    let change = a.change_pct();
    let verb = if change.abs() < 0.05 {
        format!("leaves {} unchanged", q.what)
    } else if change < 0.0 {
        format!("cuts {} by {:.1} %", q.what, -change)
    } else {
        format!("raises {} by {:.1} %", q.what, change)
    };
    let mut context = q.context.to_string();
    if let Some(s) = &a.aside {
        let pick = s["cuda"]["nccl"][0]["algorithm_protocol"]
            .as_str()
            .unwrap_or("?");
        context.push_str(&format!("; NCCL's own tuner picks {pick} here"));
    }
    if q.metric == Metric::Makespan {
        let gflops = |s: &Value| s["runtime"]["gflops"].as_f64().unwrap_or(0.0);
        context.push_str(&format!(
            "; {:.0} -> {:.0} GFlop/s",
            gflops(&a.before_summary),
            gflops(&a.after_summary)
        ));
    }
    format!(
        "{} {verb} ({} {} -> {} {}; {context})",
        q.ask,
        q.before.label,
        hetsim_output::headline::seconds(a.before),
        q.after.label,
        hetsim_output::headline::seconds(a.after),
    )
}

/// `whatif.csv`: question, variant, metric, value (s).
pub fn csv(answers: &[Answer]) -> Vec<u8> {
    let mut out = String::from("question,variant,metric,value_s,scenario\n");
    for a in answers {
        let q = &a.question;
        for (label, v) in [(q.before.label, a.before), (q.after.label, a.after)] {
            out.push_str(&format!(
                "{},{label},{},{v},{}\n",
                q.id,
                q.metric.name(),
                q.file
            ));
        }
    }
    out.into_bytes()
}

/// `summary.json`: each question with its answer, its variants and the runs' summaries, and
/// the switches turned off in every run (`--disable`), if any.
pub fn summary(answers: &[Answer], disabled: &[String]) -> Value {
    let questions: Vec<Value> = answers
        .iter()
        .map(|a| {
            let q = &a.question;
            let variant = |v: &Variant, value: f64, summary: &Value| {
                json!({
                    "label": v.label, "set": v.set, "disable": v.disable,
                    "value_s": value, "summary": summary,
                })
            };
            json!({
                "id": q.id,
                "question": q.ask,
                "answer": sentence(a),
                "scenario": q.file,
                "metric": q.metric.name(),
                "change_pct": a.change_pct(),
                "before": variant(&q.before, a.before, &a.before_summary),
                "after": variant(&q.after, a.after, &a.after_summary),
                "as_given": a.aside,
                "further": q.further,
            })
        })
        .collect();
    let mut summary = json!({ "scenario": "whatif", "questions": questions });
    if !disabled.is_empty() {
        summary["disabled"] = json!(disabled);
    }
    summary
}

/// What each side of a question changed in its scenario file, as the command line says it:
/// `HostCopy: --disable gpudirect`, `GPUDirect: the file as it is`.
fn changes(q: &Question) -> Vec<String> {
    let side = |v: &Variant| {
        let flags: Vec<String> = v
            .set
            .iter()
            .map(|s| format!("--set {s}"))
            .chain(v.disable.iter().map(|d| format!("--disable {d}")))
            .collect();
        if flags.is_empty() {
            format!("{}: the file as it is", v.label)
        } else {
            format!("{}: {}", v.label, flags.join(" "))
        }
    };
    vec![side(&q.before), side(&q.after)]
}

/// The comparison picture: one panel per question, the two configurations side by side; the
/// switches turned off in every run, if any, in its notes.
pub fn chart(answers: &[Answer], disabled: &[String]) -> hetsim_output::plot::compare::Comparison {
    use hetsim_output::plot::compare::{Comparison, Panel};
    let panels = answers
        .iter()
        .map(|a| {
            let q = &a.question;
            // The unit the bars' own labels use, so that axis and labels agree.
            let (scale, unit) = hetsim_output::headline::seconds_unit(a.before.max(a.after));
            let bar = |label: &str, v: f64| {
                (
                    label.to_string(),
                    v / scale,
                    hetsim_output::headline::seconds(v),
                )
            };
            let quantity = match q.metric {
                Metric::MpiComm => "communication per rank",
                Metric::NcclTime => "allreduce time",
                Metric::Makespan => "makespan",
            };
            Panel {
                title: format!("{}: {:+.1} %", q.ask, a.change_pct()),
                y_desc: format!("{quantity} ({unit})"),
                bars: vec![bar(q.before.label, a.before), bar(q.after.label, a.after)],
                changes: changes(q),
            }
        })
        .collect();
    let mut notes = vec![
        "lower is better; the change is the right bar against the left one".to_string(),
        "scenarios/whatif/: halo.ron (GPUDirect, GPUs per node), allreduce.ron (tree), cholesky.ron (dmdas)".into(),
    ];
    if !disabled.is_empty() {
        notes.push(format!(
            "switched off in every run: {}",
            disabled.join(", ")
        ));
    }
    Comparison {
        title: "What if ...? Four questions, each one simulated scenario as it is and changed"
            .into(),
        notes,
        panels,
        width: 1200,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(before: f64, after: f64) -> Answer {
        Answer {
            question: QUESTIONS[0],
            before,
            after,
            before_summary: Value::Null,
            after_summary: Value::Null,
            aside: None,
        }
    }

    #[test]
    fn the_sentence_leads_with_the_change() {
        let s = sentence(&answer(2.438e-3, 1.878e-3));
        assert_eq!(
            s,
            "GPUDirect instead of HostCopy cuts the halo exchange's communication per rank by \
             23.0 % (HostCopy 2.438 ms -> GPUDirect 1.878 ms; 2 nodes x 4 V100, one 100 Gb/s \
             NIC each)"
        );
        assert!(
            sentence(&answer(1.0, 1.5))
                .contains("raises the halo exchange's communication per rank by 50.0 %")
        );
        assert!(
            sentence(&answer(1.0, 1.0))
                .contains("leaves the halo exchange's communication per rank unchanged")
        );
    }

    #[test]
    fn every_question_reads_a_metric_its_scenario_reports() {
        for q in QUESTIONS {
            let scenario = crate::embedded::scenario(q.file, &[]).unwrap();
            let kind = scenario.workload.kind();
            let expected = match q.metric {
                Metric::MpiComm => "Mpi",
                Metric::NcclTime => "Cuda",
                Metric::Makespan => "Cholesky",
            };
            assert_eq!(kind, expected, "{}", q.id);
        }
    }
}
