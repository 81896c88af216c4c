//! StarPU codelet performance models, format version 45 (`src/core/perfmodel/perfmodel_history.c`
//! writes them): comment lines start with `#`; the numbers come in a fixed order.

use super::number;

/// A device kind as StarPU numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceKind {
    Cpu,
    Cuda,
    OpenCl,
    Other(u32),
}

impl DeviceKind {
    fn from_code(c: u32) -> DeviceKind {
        match c {
            0 => DeviceKind::Cpu,
            1 => DeviceKind::Cuda,
            2 => DeviceKind::OpenCl,
            n => DeviceKind::Other(n),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Device {
    pub kind: DeviceKind,
    pub id: u32,
    pub ncores: u32,
}

/// The linear regression of ln(time) on ln(size): time = alpha * size^beta (us).
#[derive(Debug, Clone, PartialEq)]
pub struct Regression {
    pub sumlnx: f64,
    pub sumlnx2: f64,
    pub sumlny: f64,
    pub sumlnxlny: f64,
    pub alpha: f64,
    pub beta: f64,
    pub n: u64,
    pub minx: f64,
    pub maxx: f64,
}

/// One measured footprint: mean and deviation in microseconds over `n` samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub hash: u32,
    pub size: f64,
    pub flops: f64,
    pub mean_us: f64,
    pub dev_us: f64,
    pub sum: f64,
    pub sum2: f64,
    pub n: u64,
}

/// The model of one implementation on one device combination.
#[derive(Debug, Clone, PartialEq)]
pub struct ImplModel {
    pub regression: Regression,
    /// Non-linear regression: time = a * size^b + c (us).
    pub nl: [f64; 3],
    /// Multiple-regression coefficients (intercept first), if the model has them.
    pub multiple: Option<Vec<f64>>,
    pub history: Vec<Entry>,
}

/// The devices of a combination and its implementations' models.
#[derive(Debug, Clone, PartialEq)]
pub struct Comb {
    pub devices: Vec<Device>,
    pub impls: Vec<ImplModel>,
}

/// A whole model file.
#[derive(Debug, Clone, PartialEq)]
pub struct PerfModel {
    pub version: u32,
    pub combs: Vec<Comb>,
}

impl PerfModel {
    /// The history entry of the first implementation on the first combination whose devices
    /// are all of `kind`, nearest in size to `size`.
    pub fn nearest(&self, kind: DeviceKind, size: f64) -> Option<&Entry> {
        self.combs
            .iter()
            .filter(|c| c.devices.iter().all(|d| d.kind == kind))
            .flat_map(|c| c.impls.first())
            .flat_map(|i| i.history.iter())
            .filter(|e| e.n > 0 && e.mean_us.is_finite())
            .min_by(|a, b| {
                (a.size - size)
                    .abs()
                    .total_cmp(&(b.size - size).abs())
                    .then(a.hash.cmp(&b.hash))
            })
    }
}

impl PerfModel {
    /// The history entry for `footprint` on the combination of one device of `kind` with id
    /// `devid` (StarPU's per-device combs: `cuda0`, `cuda1`; CPUs share `cpu0`), first
    /// implementation; `None` when the footprint was never measured there.
    pub fn history(&self, kind: DeviceKind, devid: u32, footprint: u32) -> Option<&Entry> {
        self.combs
            .iter()
            .filter(|c| {
                c.devices.len() == 1 && c.devices[0].kind == kind && c.devices[0].id == devid
            })
            .flat_map(|c| c.impls.first())
            .flat_map(|i| i.history.iter())
            .find(|e| e.hash == footprint)
    }
}

/// What a comment line announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Heading {
    Version,
    Combs,
    Devices,
    DeviceType,
    DeviceId,
    Cores,
    Impls,
    Entries,
    Regression,
    NonLinear,
    Multiple,
    History,
}

impl Heading {
    /// Reads a comment line (`#`-stripped words, tabs or spaces).
    fn of(comment: &str) -> Option<Heading> {
        let words: Vec<String> = comment
            .trim_start_matches('#')
            .split_whitespace()
            .map(str::to_ascii_lowercase)
            .collect();
        let text = words.join(" ");
        Some(match text.as_str() {
            t if t.starts_with("performance model version") => Heading::Version,
            "number of combinations" => Heading::Combs,
            "number of types devices" => Heading::Devices,
            t if t.starts_with("device type") => Heading::DeviceType,
            "device id" => Heading::DeviceId,
            "number of cores" => Heading::Cores,
            "number of implementations" => Heading::Impls,
            "number of entries" => Heading::Entries,
            t if t.starts_with("sumlnx") => Heading::Regression,
            "a b c" => Heading::NonLinear,
            "not multiple-regression-base" => Heading::Multiple,
            t if t.starts_with("n intercept") => Heading::Multiple,
            t if t.starts_with("hash") => Heading::History,
            _ => return None,
        })
    }

    /// Whether a value line of `tokens` can be this heading's value.
    fn fits(self, tokens: &[&str]) -> bool {
        match self {
            Heading::Regression => tokens.len() == 9,
            Heading::NonLinear => tokens.len() == 3,
            Heading::History => tokens.len() == 8,
            Heading::Multiple => tokens
                .first()
                .and_then(|t| t.parse::<usize>().ok())
                .is_some_and(|n| tokens.len() == if n == 0 { 1 } else { n + 1 }),
            _ => tokens.len() == 1,
        }
    }
}

fn f(line: usize, what: &str, t: &str) -> Result<f64, String> {
    number(t).ok_or_else(|| format!("line {line}: {what}: `{t}` is not a number"))
}

fn count(line: usize, what: &str, t: &str) -> Result<u64, String> {
    t.parse()
        .map_err(|_| format!("line {line}: {what}: `{t}` is not a count"))
}

/// The implementation model values are for: the last one of the last combination.
fn impl_of(combs: &mut [Comb], line: usize) -> Result<&mut ImplModel, String> {
    let comb = combs
        .last_mut()
        .ok_or_else(|| format!("line {line}: a model before any combination"))?;
    if comb.impls.is_empty() {
        comb.impls.push(empty_impl());
    }
    Ok(comb.impls.last_mut().expect("pushed above"))
}

fn empty_impl() -> ImplModel {
    ImplModel {
        regression: Regression {
            sumlnx: 0.0,
            sumlnx2: 0.0,
            sumlny: 0.0,
            sumlnxlny: 0.0,
            alpha: f64::NAN,
            beta: f64::NAN,
            n: 0,
            minx: 0.0,
            maxx: 0.0,
        },
        nl: [f64::NAN; 3],
        multiple: None,
        history: Vec::new(),
    }
}

/// Parses a model file's text.
///
/// The reader follows the comment headings rather than a fixed order of numbers: files
/// written by concurrent StarPU processes sometimes interleave sections (a `# a b c` heading
/// whose values come after the next section's, as in starpu_dlu_lu_model_gemm.idgraf) or hold
/// more combinations than their count (overlap_sleep_1024_24.sirocco). A value line goes to
/// the oldest pending heading whose shape it fits.
pub fn parse(text: &str) -> Result<PerfModel, String> {
    let mut version = None;
    let mut combs: Vec<Comb> = Vec::new();
    let mut pending: std::collections::VecDeque<Heading> = Default::default();
    for (n, raw) in text.lines().enumerate() {
        let line = n + 1;
        let l = raw.trim();
        if l.is_empty() {
            continue;
        }
        if l.starts_with('#') {
            if let Some(h) = Heading::of(l) {
                match h {
                    Heading::Devices => combs.push(Comb {
                        devices: Vec::new(),
                        impls: Vec::new(),
                    }),
                    Heading::Entries => {
                        // A new implementation model starts with its entry count.
                        if let Some(c) = combs.last_mut() {
                            c.impls.push(empty_impl());
                        }
                    }
                    _ => {}
                }
                if h == Heading::History || !pending.contains(&h) {
                    pending.retain(|&p| p != Heading::History);
                    pending.push_back(h);
                }
            }
            continue;
        }
        let tokens: Vec<&str> = l.split_whitespace().collect();
        let Some(pos) = pending.iter().position(|h| h.fits(&tokens)) else {
            return Err(format!("line {line}: `{l}` answers no heading"));
        };
        let h = pending[pos];
        if h != Heading::History {
            pending.remove(pos);
        }
        match h {
            Heading::Version => {
                version = Some(count(line, "the format version", tokens[0])? as u32)
            }
            Heading::Combs | Heading::Impls | Heading::Entries => {
                count(line, "a count", tokens[0])?;
            }
            Heading::DeviceType => {
                let kind = DeviceKind::from_code(count(line, "a device type", tokens[0])? as u32);
                let comb = combs
                    .last_mut()
                    .ok_or_else(|| format!("line {line}: a device before any combination"))?;
                comb.devices.push(Device {
                    kind,
                    id: 0,
                    ncores: 1,
                });
            }
            Heading::DeviceId | Heading::Cores => {
                let v = count(line, "a device id or core count", tokens[0])? as u32;
                let dev = combs
                    .last_mut()
                    .and_then(|c| c.devices.last_mut())
                    .ok_or_else(|| format!("line {line}: a device field before its type"))?;
                if h == Heading::DeviceId {
                    dev.id = v;
                } else {
                    dev.ncores = v;
                }
            }
            Heading::Devices => {
                count(line, "a device count", tokens[0])?;
            }
            Heading::Regression => {
                let v: Vec<f64> = tokens
                    .iter()
                    .map(|t| f(line, "a regression sum", t))
                    .collect::<Result<_, _>>()?;
                let m = impl_of(&mut combs, line)?;
                m.regression = Regression {
                    sumlnx: v[0],
                    sumlnx2: v[1],
                    sumlny: v[2],
                    sumlnxlny: v[3],
                    alpha: v[4],
                    beta: v[5],
                    n: v[6].max(0.0) as u64,
                    minx: v[7],
                    maxx: v[8],
                };
            }
            Heading::NonLinear => {
                let m = impl_of(&mut combs, line)?;
                for (k, t) in tokens.iter().enumerate() {
                    m.nl[k] = f(line, "a non-linear coefficient", t)?;
                }
            }
            Heading::Multiple => {
                let m = impl_of(&mut combs, line)?;
                if tokens.len() > 1 {
                    m.multiple = Some(
                        tokens[1..]
                            .iter()
                            .map(|t| f(line, "a multiple-regression coefficient", t))
                            .collect::<Result<_, _>>()?,
                    );
                }
            }
            Heading::History => {
                let m = impl_of(&mut combs, line)?;
                let hash = u32::from_str_radix(tokens[0], 16)
                    .map_err(|_| format!("line {line}: hash `{}` is not hexadecimal", tokens[0]))?;
                m.history.push(Entry {
                    hash,
                    size: f(line, "size", tokens[1])?,
                    flops: f(line, "flops", tokens[2])?,
                    mean_us: f(line, "mean", tokens[3])?,
                    dev_us: f(line, "deviation", tokens[4])?,
                    sum: f(line, "sum", tokens[5])?,
                    sum2: f(line, "sum2", tokens[6])?,
                    n: count(line, "n", tokens[7])?,
                });
            }
        }
    }
    let version = version.ok_or("no `Performance Model Version` heading")?;
    if version != 45 {
        return Err(format!(
            "format version {version}; this reader knows version 45"
        ));
    }
    Ok(PerfModel { version, combs })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &str = "##\n# Performance Model Version\n45\n\n# COMBs\n# number of combinations\n1\n# COMB_0\n# number of types devices\n1\n# DEV_0\n# device type (CPU - 0, CUDA - 1)\n1\n# DEV_0\n# device id \n0\n# DEV_0\n# number of cores \n1\n# number of implementations\n1\n# Model for cuda0_impl0 (Comb0)\n# number of entries\n2\n# sumlnx\tsumlnx2\t\tsumlny\t\tsumlnxlny\talpha\t\tbeta\t\tn\tminx\t\tmaxx\n0 0 0 0 nan nan 0 0 0\n# a\t\tb\t\tc\nnan nan nan\n# not multiple-regression-base\n0\n# hash\t\tsize\t\tflops\t\tmean (us)\tdev (us)\tsum\t\tsum2\t\tn\n0b0b0ce8 7372800 2.6e8 27833.76 1016.2 2.25e6 6.28e10 81\n492beed5 66355200 7.0e9 706887.0 15821.1 5.7e7 4.0e13 81\n";

    #[test]
    fn a_small_model_reads_field_by_field() {
        let m = parse(ONE).unwrap();
        assert_eq!(m.version, 45);
        assert_eq!(m.combs[0].devices[0].kind, DeviceKind::Cuda);
        let h = &m.combs[0].impls[0].history;
        assert_eq!(h.len(), 2);
        assert_eq!(h[0].hash, 0x0b0b0ce8);
        assert_eq!(h[1].mean_us, 706887.0);
        assert!(m.combs[0].impls[0].regression.alpha.is_nan());
        assert_eq!(m.nearest(DeviceKind::Cuda, 7e6).unwrap().hash, 0x0b0b0ce8);
    }

    #[test]
    fn wrong_files_say_where() {
        let e = parse("# Performance Model Version\n44\n").unwrap_err();
        assert!(e.contains("version 44"), "{e}");
        let e = parse(&ONE.replace("nan nan nan", "nan nan")).unwrap_err();
        assert!(e.contains("answers no heading"), "{e}");
        assert!(
            parse("# nothing\n")
                .unwrap_err()
                .contains("Performance Model Version")
        );
        let e = parse(&ONE.replace("0b0b0ce8", "zz")).unwrap_err();
        assert!(e.contains("hash `zz` is not hexadecimal"), "{e}");
    }
}

/// The samples StarPU dumps for multiple-regression models (`codelets/tmp/*.out`): a header of
/// column names (`Duration, M, N, K`), then one row of numbers per measured task.
#[derive(Debug, Clone, PartialEq)]
pub struct Samples {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<f64>>,
}

/// Reads a sample dump.
pub fn parse_samples(text: &str) -> Result<Samples, String> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, header) = lines.next().ok_or("an empty sample file")?;
    let columns: Vec<String> = header.split(',').map(|c| c.trim().to_string()).collect();
    let rows = lines
        .map(|(n, l)| {
            let row: Vec<f64> = l
                .split(',')
                .map(|t| {
                    number(t.trim())
                        .ok_or_else(|| format!("line {}: `{}` is not a number", n + 1, t.trim()))
                })
                .collect::<Result<_, _>>()?;
            if row.len() != columns.len() {
                return Err(format!(
                    "line {}: {} values for {} columns",
                    n + 1,
                    row.len(),
                    columns.len()
                ));
            }
            Ok(row)
        })
        .collect::<Result<_, _>>()?;
    Ok(Samples { columns, rows })
}
