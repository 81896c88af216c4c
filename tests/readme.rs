//! The README's commands run, and the figures it quotes are what the program prints: the
//! what-if answers, the sides of each "one run" command, and the quantum's trade.

mod common;

use common::{hetsim, ok, repo, stderr};
use hetsim::output::headline::seconds;
use std::path::Path;

fn readme() -> String {
    std::fs::read_to_string(repo().join("README.md")).unwrap()
}

/// Splits a command line as a shell would for the README's commands: words, with single
/// quotes kept together (`'node[0].gpu[0]'`).
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut any = false;
    for c in line.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any {
                    out.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            c => {
                word.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(word);
    }
    out
}

/// The commands in the README's `sh` blocks (continuation lines joined, comments dropped) and
/// in its what-if table, as they are written.
fn commands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            in_sh = t == "```sh";
            continue;
        }
        if in_sh {
            pending.push_str(t.trim_end_matches('\\').trim_end());
            pending.push(' ');
            if t.ends_with('\\') {
                continue;
            }
            let cmd = pending.split(" # ").next().unwrap().trim().to_string();
            pending.clear();
            if cmd.starts_with("hetsim ") || cmd.starts_with("cargo run") {
                out.push(cmd);
            }
        } else if t.starts_with('|') {
            for (i, span) in t.split('`').enumerate() {
                if i % 2 == 1 && span.starts_with("hetsim ") {
                    out.push(span.to_string());
                }
            }
        }
    }
    out
}

/// The arguments to run a README command with from a scratch folder that sees the
/// repository's `scenarios/`: `cargo run --release --` is the binary; `[--long]` is optional.
fn argv(cmd: &str) -> Vec<String> {
    let cmd = cmd
        .strip_prefix("cargo run --release -- ")
        .map(|rest| format!("hetsim {rest}"))
        .unwrap_or_else(|| cmd.to_string());
    words(&cmd)
        .into_iter()
        .skip(1)
        .map(
            |w| match w.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
                Some(optional) => optional.to_string(),
                None => w,
            },
        )
        .collect()
}

fn scratch() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(repo().join("scenarios"), tmp.path().join("scenarios")).unwrap();
    tmp
}

/// Runs one README command in `dir`; a shard command runs for every shard, and `shards/*`
/// is the shards written.
fn run_command(cmd: &str, dir: &Path) {
    if cmd.contains("$SLURM_ARRAY_TASK_ID") {
        for i in 1..=8 {
            let one = cmd.replace("$SLURM_ARRAY_TASK_ID", &i.to_string());
            run_command(&one, dir);
        }
        return;
    }
    let mut args = argv(cmd);
    if let Some(at) = args.iter().position(|a| a == "shards/*") {
        let mut shards: Vec<String> = std::fs::read_dir(dir.join("shards"))
            .unwrap()
            .map(|e| format!("shards/{}", e.unwrap().file_name().to_string_lossy()))
            .collect();
        shards.sort();
        args.splice(at..=at, shards);
    }
    args.push("-q".into());
    if [
        "systems",
        "validate",
        "trace-stats",
        "convert",
        "merge",
        "flows",
        "p2p",
        "nccl-tests",
    ]
    .contains(&args[0].as_str())
    {
        args.pop();
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = hetsim(&refs, dir);
    assert!(o.status.success(), "`{cmd}` failed: {}", stderr(&o));
}

#[test]
fn every_command_the_readme_shows_runs() {
    let text = readme();
    let cmds = commands(&text);
    // The two opening commands, the table's eight and the tour's.
    assert!(cmds.len() >= 25, "{cmds:#?}");
    assert_eq!(cmds[0], "cargo run --release -- run");
    let tmp = scratch();
    let mut seen = std::collections::HashSet::new();
    for cmd in cmds.iter().filter(|c| seen.insert(c.as_str())) {
        run_command(cmd, tmp.path());
    }
    // The optional flag as well.
    ok(&hetsim(&["systems", "--long"], tmp.path()));
}

/// The four answers the README quotes, as `hetsim run` prints them (`(...)` elides).
#[test]
fn the_readme_quotes_the_what_if_answers_as_printed() {
    let text = readme();
    let block: Vec<&str> = text
        .split("```text\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap()
        .lines()
        .collect();
    assert_eq!(block.len(), 4, "{block:?}");
    let tmp = scratch();
    let printed = ok(&hetsim(&["run"], tmp.path()));
    let lines: Vec<&str> = printed.lines().collect();
    for (quote, line) in block.iter().zip(&lines) {
        let mut rest = *line;
        for (i, piece) in quote.split("...").enumerate() {
            let at = rest.find(piece).unwrap_or_else(|| {
                panic!("the README quotes\n  {quote}\nbut hetsim run prints\n  {line}")
            });
            assert!(i > 0 || at == 0, "{quote} / {line}");
            rest = &rest[at + piece.len()..];
        }
    }
}

/// The metric a what-if question compares, read from a run's summary.
fn metric(summary: &serde_json::Value) -> f64 {
    [
        &summary["mpi"]["comm_time_s"]["mean"],
        &summary["cuda"]["nccl"][0]["mean_time_s"],
        &summary["runtime"]["makespan_s"],
    ]
    .iter()
    .find_map(|v| v.as_f64())
    .unwrap()
}

/// Each "one run" of the table gives both sides of its what-if answer: run alone, its file
/// as it is is the other side; run in pairs, the pair.
#[test]
fn each_one_run_command_reproduces_both_sides_of_its_answer() {
    let text = readme();
    let tmp = scratch();
    let printed = ok(&hetsim(&["run", "--out", "whatif", "-q"], tmp.path()));
    assert!(printed.is_empty());
    let answers = hetsim(&["run", "--out", "whatif"], tmp.path());
    let answers = String::from_utf8_lossy(&answers.stdout).into_owned();
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains("`hetsim run scenarios/whatif/"))
        .collect();
    assert_eq!(rows.len(), 4);
    for (k, row) in rows.iter().enumerate() {
        let cell = row.split(" | ").nth(1).unwrap();
        let runs: Vec<&str> = cell
            .split('`')
            .enumerate()
            .filter(|(i, s)| i % 2 == 1 && s.starts_with("hetsim run"))
            .map(|(_, s)| s)
            .collect();
        let mut sides: Vec<Vec<String>> = runs.iter().map(|c| argv(c)).collect();
        if sides.len() == 1 {
            sides.insert(0, sides[0][..2].to_vec());
        }
        let values: Vec<String> = sides
            .iter()
            .enumerate()
            .map(|(i, args)| {
                let out = format!("side{k}-{i}");
                let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
                a.extend(["--out", &out, "-q", "--disable", "record"]);
                ok(&hetsim(&a, tmp.path()));
                let summary: serde_json::Value = serde_json::from_str(
                    &std::fs::read_to_string(tmp.path().join(&out).join("summary.json")).unwrap(),
                )
                .unwrap();
                seconds(metric(&summary))
            })
            .collect();
        let answer = answers.lines().nth(k).unwrap();
        assert_ne!(values[0], values[1], "{row}");
        for v in &values {
            assert!(
                answer.contains(&format!(" {v}")),
                "row {k}: one run gives {v}, the what-if answer is\n  {answer}"
            );
        }
    }
}

/// The quantum's trade at 480 ranks, as the README states it, from the shipped study.
#[test]
fn the_readme_quotes_the_quantum_study() {
    let tmp = scratch();
    ok(&hetsim(
        &[
            "study",
            "scenarios/studies/network-quantum.ron",
            "--out",
            "q",
            "-q",
        ],
        tmp.path(),
    ));
    let csv = std::fs::read_to_string(tmp.path().join("q/results.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (q, comm, events) = (col("quantum"), col("mpi.comm_time_s.mean"), col("events"));
    let row = |quantum: &str| -> Vec<f64> {
        let r: Vec<&str> = csv
            .lines()
            .map(|l| l.split(',').collect::<Vec<_>>())
            .find(|r| r[q] == quantum)
            .unwrap()
            .into_iter()
            .collect();
        vec![r[comm].parse().unwrap(), r[events].parse().unwrap()]
    };
    let (exact, coarse) = (row("0"), row("300ns"));
    let comm_pct = 100.0 * (coarse[0] / exact[0] - 1.0);
    let events_pct = 100.0 * (1.0 - coarse[1] / exact[1]);
    let text = readme().split_whitespace().collect::<Vec<_>>().join(" ");
    for claim in [
        format!("raises communication time by {comm_pct:.2} %"),
        format!("cuts the events by {events_pct:.1} %"),
    ] {
        assert!(text.contains(&claim), "the README should say: {claim}");
    }
}

#[test]
fn the_command_splitter_reads_quotes_and_continuations() {
    assert_eq!(
        words("hetsim p2p --from 'node[0].gpu[0]'  -b 1"),
        ["hetsim", "p2p", "--from", "node[0].gpu[0]", "-b", "1"]
    );
    let cmds = commands(
        "```sh\nhetsim run a \\\n    --set b=1   # note\n```\n| q | `hetsim run c` | x |\n",
    );
    assert_eq!(cmds, ["hetsim run a --set b=1", "hetsim run c"]);
}
