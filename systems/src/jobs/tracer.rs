//! TraceR's job files (hpcgroup/TraceR, read through the search tool; written fresh): how
//! TraceR runs several traces as jobs sharing one network.
//!
//! - The config (`tracer_config`): the global map's file name, the number of jobs, then one
//!   line per job: `TRACE MAP RANKS ITERATIONS` (the trace, its job file, its ranks, how many
//!   times it runs).
//! - A job file: one little-endian 32-bit integer per rank of the job, the rank's global slot.
//! - The global map: per global slot three such integers, (slot, the rank in its job, the job).

/// One job of a TraceR config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigJob {
    pub trace: String,
    pub map: String,
    pub ranks: u32,
    pub iterations: u32,
}

/// A TraceR config: the global map's file and the jobs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub global_map: String,
    pub jobs: Vec<ConfigJob>,
}

/// One entry of the global map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub slot: u32,
    pub rank: u32,
    pub job: u32,
}

/// Reads a config's text; errors say the line and what was expected.
pub fn config(text: &str) -> Result<Config, String> {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let global_map = lines
        .next()
        .ok_or("line 1: expected the global map's file name")?
        .to_string();
    let count: usize = lines
        .next()
        .and_then(|l| l.parse().ok())
        .ok_or("line 2: expected the number of jobs")?;
    let mut jobs = Vec::with_capacity(count);
    for i in 0..count {
        let line = lines.next().ok_or_else(|| {
            format!(
                "line {}: expected job {i}: TRACE MAP RANKS ITERATIONS",
                i + 3
            )
        })?;
        let f: Vec<&str> = line.split_whitespace().collect();
        let num = |k: usize, what: &str| {
            f.get(k).and_then(|v| v.parse::<u32>().ok()).ok_or_else(|| {
                format!(
                    "line {}: expected {what} as a whole number in `{line}`",
                    i + 3
                )
            })
        };
        if f.len() != 4 {
            return Err(format!(
                "line {}: expected TRACE MAP RANKS ITERATIONS, got `{line}`",
                i + 3
            ));
        }
        jobs.push(ConfigJob {
            trace: f[0].into(),
            map: f[1].into(),
            ranks: num(2, "the ranks")?,
            iterations: num(3, "the iterations")?,
        });
    }
    Ok(Config { global_map, jobs })
}

/// Reads a job file: one slot per rank.
pub fn job_file(bytes: &[u8]) -> Result<Vec<u32>, String> {
    words(bytes, 1)?
        .map(|w| non_negative(w[0]))
        .collect::<Result<Vec<_>, _>>()
}

/// Reads the global map: (slot, rank, job) per entry.
pub fn global_map(bytes: &[u8]) -> Result<Vec<Slot>, String> {
    words(bytes, 3)?
        .map(|w| {
            Ok(Slot {
                slot: non_negative(w[0])?,
                rank: non_negative(w[1])?,
                job: non_negative(w[2])?,
            })
        })
        .collect()
}

/// The file as records of `per` little-endian i32s, or why not.
fn words(bytes: &[u8], per: usize) -> Result<impl Iterator<Item = Vec<i32>> + '_, String> {
    let record = 4 * per;
    if !bytes.len().is_multiple_of(record) {
        return Err(format!(
            "{} bytes is not a whole number of {record}-byte records",
            bytes.len()
        ));
    }
    Ok(bytes.chunks_exact(record).map(|r| {
        r.chunks_exact(4)
            .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()
    }))
}

fn non_negative(v: i32) -> Result<u32, String> {
    u32::try_from(v).map_err(|_| format!("a slot, rank or job of {v}: expected 0 or more"))
}

/// Checks a job file against the global map: rank r of job `job` sits in slot `slots[r]`.
pub fn check_against_map(job: u32, slots: &[u32], map: &[Slot]) -> Result<(), String> {
    for (r, &s) in slots.iter().enumerate() {
        let entry = map.iter().find(|e| e.slot == s);
        match entry {
            Some(e) if e.job == job && e.rank == r as u32 => {}
            Some(e) => {
                return Err(format!(
                    "job {job} rank {r}: slot {s} belongs to job {} rank {} in the global map",
                    e.job, e.rank
                ));
            }
            None => {
                return Err(format!(
                    "job {job} rank {r}: slot {s} is not in the global map"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn le(words: &[i32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn a_config_lists_the_map_and_one_line_per_job() {
        let c = config("global_map.bin\n2\na/traces.otf2 job0 64 1\nb/traces.otf2 job1 32 3\n")
            .unwrap();
        assert_eq!(c.global_map, "global_map.bin");
        assert_eq!(c.jobs.len(), 2);
        assert_eq!(
            c.jobs[1],
            ConfigJob {
                trace: "b/traces.otf2".into(),
                map: "job1".into(),
                ranks: 32,
                iterations: 3
            }
        );
        let e = config("m\n2\na job0 64 1\n").unwrap_err();
        assert!(e.starts_with("line 4: expected job 1"), "{e}");
        let e = config("m\n1\na job0 many 1\n").unwrap_err();
        assert!(e.contains("expected the ranks as a whole number"), "{e}");
    }

    #[test]
    fn job_files_and_the_global_map_are_little_endian_i32_records() {
        assert_eq!(job_file(&le(&[64, 65, 66])).unwrap(), vec![64, 65, 66]);
        assert!(job_file(&[0, 0, 0]).unwrap_err().contains("3 bytes"));
        assert!(
            job_file(&le(&[-1]))
                .unwrap_err()
                .contains("expected 0 or more")
        );
        let map = global_map(&le(&[0, 0, 0, 1, 0, 1])).unwrap();
        assert_eq!(
            map[1],
            Slot {
                slot: 1,
                rank: 0,
                job: 1
            }
        );
        check_against_map(1, &[1], &map).unwrap();
        let e = check_against_map(0, &[1], &map).unwrap_err();
        assert_eq!(
            e,
            "job 0 rank 0: slot 1 belongs to job 1 rank 0 in the global map"
        );
    }
}
