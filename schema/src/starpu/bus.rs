//! StarPU bus calibration files (written by `starpu_calibrate_bus`): matrices of bandwidth
//! (MB/s) and latency (us) between memory nodes (row = from, column = to; `nan` where there is
//! no such node), the affinity of GPUs to CPUs, and the device counts.

use super::number;

/// A square matrix between memory nodes, trimmed to the nodes that have figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    pub values: Vec<Vec<f64>>,
}

impl Matrix {
    /// Number of memory nodes with figures (rows whose off-diagonal values are not all NaN).
    pub fn nodes(&self) -> usize {
        self.values.len()
    }

    pub fn get(&self, from: usize, to: usize) -> Option<f64> {
        self.values.get(from)?.get(to).copied()
    }
}

/// Reads a `.bandwidth` or `.latency` file.
pub fn parse_matrix(text: &str) -> Result<Matrix, String> {
    let mut rows: Vec<Vec<f64>> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let row = line
            .split_whitespace()
            .map(|t| number(t).ok_or_else(|| format!("line {}: `{t}` is not a number", n + 1)))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(first) = rows.first()
            && first.len() != row.len()
        {
            return Err(format!(
                "line {}: {} values where the first row has {}",
                n + 1,
                row.len(),
                first.len()
            ));
        }
        rows.push(row);
    }
    // Memory nodes that exist: a row with at least one finite value.
    let used = rows
        .iter()
        .take_while(|r| r.iter().any(|v| v.is_finite()))
        .count();
    let values = rows
        .into_iter()
        .take(used)
        .map(|r| r.into_iter().take(used).collect())
        .collect();
    Ok(Matrix { values })
}

/// The CPUs nearest each GPU (`.affinity`): one line per GPU, GPU id first.
pub fn parse_affinity(text: &str) -> Result<Vec<(u32, Vec<u32>)>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|(n, l)| {
            let ids = l
                .split_whitespace()
                .map(|t| {
                    t.parse::<u32>()
                        .map_err(|_| format!("line {}: `{t}` is not an id", n + 1))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let (gpu, cpus) = ids
                .split_first()
                .ok_or_else(|| format!("line {}: empty", n + 1))?;
            Ok((*gpu, cpus.to_vec()))
        })
        .collect()
}

/// Device counts (`.config`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    pub cpus: u32,
    pub cuda: u32,
    pub opencl: u32,
    pub mic: u32,
}

/// Reads `.config`: `N # Number of CPUs`, `N # Number of CUDA devices`, ...
pub fn parse_config(text: &str) -> Result<Config, String> {
    let mut c = Config::default();
    for (n, line) in text.lines().enumerate() {
        let Some((value, what)) = line.split_once('#') else {
            continue;
        };
        let value = value.trim();
        if value.is_empty() {
            continue;
        }
        let v: u32 = value
            .parse()
            .map_err(|_| format!("line {}: `{value}` is not a count", n + 1))?;
        let what = what.to_ascii_lowercase();
        if what.contains("cpu") {
            c.cpus = v;
        } else if what.contains("cuda") {
            c.cuda = v;
        } else if what.contains("opencl") {
            c.opencl = v;
        } else if what.contains("mic") {
            c.mic = v;
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_matrix_keeps_the_nodes_with_figures() {
        let m = parse_matrix("# to 0 to 1 to 2\n0.0 6008.9 nan\n6526.6 0.0 nan\nnan nan nan\n")
            .unwrap();
        assert_eq!(m.nodes(), 2);
        assert_eq!(m.get(0, 1), Some(6008.9));
        assert!(parse_matrix("1 2\n3\n").unwrap_err().contains("line 2"));
    }

    #[test]
    fn config_and_affinity() {
        let c = parse_config(
            "# Current configuration\n12 # Number of CPUs\n3 # Number of CUDA devices\n",
        )
        .unwrap();
        assert_eq!((c.cpus, c.cuda), (12, 3));
        let a = parse_affinity("# GPU CPU0 CPU1\n0 0 1\n1 1 0\n").unwrap();
        assert_eq!(a[1], (1, vec![1, 0]));
    }
}
