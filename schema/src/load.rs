//! Reading scenarios: RON text to a typed [`Scenario`], with platform includes and `--set`
//! overrides, and errors that name the file, the field path and what was expected.
//!
//! Overrides work on a JSON image of the parsed scenario: the typed scenario is serialised,
//! each `path=value` replaces one node (enum variants are stepped through transparently, so
//! `platform.network.taper` reaches into `Cluster(network: FatTree(taper: ...))`), and the
//! result is deserialised again, so an override is checked exactly like the file itself.

use serde::de::DeserializeOwned;
use serde_json::Value;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::scenario::{PlatformSpec, Scenario, Workload};

/// A scenario that cannot be used, and where the problem is.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadError {
    /// The file (or `--set ...` for an override).
    pub file: String,
    /// The field path, e.g. `platform.network.bandwidth` (empty when not known).
    pub path: String,
    /// Line and column in the file, when known.
    pub position: Option<(usize, usize)>,
    /// What was wrong and what was expected.
    pub message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some((line, col)) = self.position {
            write!(f, ":{line}:{col}")?;
        }
        if !self.path.is_empty() {
            write!(f, ": field `{}`", self.path)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for LoadError {}

impl LoadError {
    pub fn new(
        file: impl Into<String>,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        LoadError {
            file: file.into(),
            path: path.into(),
            position: None,
            message: message.into(),
        }
    }
}

/// Reads an included file by name: `Ok((label for errors, text))` or why it cannot be read.
pub type ReadInclude<'a> = dyn Fn(&str) -> Result<(String, String), String> + 'a;

/// Input files (scenarios, platforms, traces, calibration files) larger than this are refused:
/// no text input of hetsim is near it, and a path to a device or a huge file is a mistake.
pub const MAX_INPUT_FILE: u64 = 1 << 30;

/// Reads an input file: a regular file of at most [`MAX_INPUT_FILE`] bytes, as UTF-8.
pub fn read_input(file: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(file).map_err(|e| format!("cannot read the file: {e}"))?;
    if !meta.is_file() {
        return Err(
            "not a regular file (a device, a pipe or a folder cannot be read as input)".into(),
        );
    }
    if meta.len() > MAX_INPUT_FILE {
        return Err(format!(
            "{} bytes; input files are at most {MAX_INPUT_FILE} bytes",
            meta.len()
        ));
    }
    std::fs::read_to_string(file).map_err(|e| format!("cannot read the file: {e}"))
}

/// Reads, includes and overrides a scenario file.
pub fn load_scenario(file: &Path, overrides: &[String]) -> Result<Scenario, LoadError> {
    let label = file.display().to_string();
    let text = read_input(file).map_err(|e| LoadError::new(&label, "", e))?;
    let base = file.parent().map(Path::to_path_buf).unwrap_or_default();
    parse_scenario(&text, &label, &base, overrides)
}

/// Parses scenario text; `base` is the folder platform includes are relative to.
pub fn parse_scenario(
    text: &str,
    label: &str,
    base: &Path,
    overrides: &[String],
) -> Result<Scenario, LoadError> {
    let read = |name: &str| {
        let file: PathBuf = base.join(name);
        read_input(&file)
            .map(|text| (file.display().to_string(), text))
            .map_err(|e| format!("`{}`: {e}", file.display()))
    };
    let mut scenario = parse_scenario_with(text, label, &read, overrides)?;
    resolve_archives(&mut scenario, label, base)?;
    Ok(scenario)
}

/// Makes OTF2 archive and Chakra trace paths relative to the scenario's folder, and checks
/// they are there.
fn resolve_archives(scenario: &mut Scenario, label: &str, base: &Path) -> Result<(), LoadError> {
    for (i, job) in scenario.jobs.iter_mut().enumerate() {
        if let crate::jobs::JobPlacement::TraceR { file, .. } = &mut job.placement {
            let path = base.join(&*file);
            if !path.is_file() {
                return Err(LoadError::new(
                    label,
                    format!("jobs[{i}].placement.TraceR.file"),
                    format!("`{}`: no such TraceR job file", path.display()),
                ));
            }
            *file = path.display().to_string();
        }
    }
    for (path, part) in scenario.parts_mut() {
        if let crate::scenario::Workload::Chakra(spec) = part {
            resolve_chakra(spec, label, &path, base)?;
            continue;
        }
        let crate::scenario::Workload::Mpi(mpi) = part else {
            continue;
        };
        if let crate::mpi::ProgramSpec::Otf2(p) = &mut mpi.program {
            let file = base.join(&p.path);
            if !file.is_file() {
                return Err(LoadError::new(
                    label,
                    format!("{path}.program.Otf2.path"),
                    format!(
                        "`{}`: no such OTF2 anchor file (expected the archive's traces.otf2)",
                        file.display()
                    ),
                ));
            }
            p.path = file.display().to_string();
        }
    }
    Ok(())
}

/// Makes a Chakra workload's paths relative to the scenario's folder and checks that rank 0's
/// trace (or the replicated one) and the group file are there, and the spec's numbers.
fn resolve_chakra(
    spec: &mut crate::chakra::ChakraSpec,
    label: &str,
    path: &str,
    base: &Path,
) -> Result<(), LoadError> {
    spec.check()
        .map_err(|(field, why)| LoadError::new(label, format!("{path}.{field}"), why))?;
    spec.files = base.join(&spec.files).display().to_string();
    let first = spec.file_of(0);
    if !Path::new(&first).is_file() {
        return Err(LoadError::new(
            label,
            format!("{path}.files"),
            format!("`{first}`: no such Chakra trace (expected NAME.{{rank}}.et or one file)"),
        ));
    }
    if let Some(groups) = &mut spec.comm_groups {
        let file = base.join(&*groups);
        if !file.is_file() {
            return Err(LoadError::new(
                label,
                format!("{path}.comm_groups"),
                format!("`{}`: no such communicator-group file", file.display()),
            ));
        }
        *groups = file.display().to_string();
    }
    Ok(())
}

/// Parses scenario text, reading platform includes through `read` (name -> (label, text)),
/// so that embedded scenarios can include embedded platforms.
pub fn parse_scenario_with(
    text: &str,
    label: &str,
    read: &ReadInclude<'_>,
    overrides: &[String],
) -> Result<Scenario, LoadError> {
    let mut scenario: Scenario = from_ron(text, label, "")?;
    resolve_platform(&mut scenario, label, read)?;
    resolve_traces(&mut scenario, label, read)?;
    let mut scenario = apply_overrides(scenario, overrides)?;
    check_gpus_followed(&scenario, overrides)?;
    check_name(&scenario.name).map_err(|e| LoadError::new(label, "name", e))?;
    let limit = match scenario.limits.max_memory {
        Some(b) if b.0 > 0.0 => b.0,
        Some(_) => {
            return Err(LoadError::new(
                label,
                "limits.max_memory",
                "expected a positive size",
            ));
        }
        None => crate::budget::default_max_memory(),
    };
    crate::budget::check(&scenario, limit)
        .map_err(|(field, why)| LoadError::new(label, field, why))?;
    let width = scenario.output.width;
    if !(MIN_WIDTH..=MAX_WIDTH).contains(&width) {
        return Err(LoadError::new(
            label,
            "output.width",
            format!("expected {MIN_WIDTH} to {MAX_WIDTH} pixels, got {width}"),
        ));
    }
    if let Some(dir) = &scenario.output.dir {
        check_relative_dir(dir).map_err(|e| LoadError::new(label, "output.dir", e))?;
    }
    // After the overrides (they may change the host name; the files are not serialised).
    resolve_starpu_machine(&mut scenario, label, read)?;
    Ok(scenario)
}

/// Picture widths the timeline writers accept (pixels): narrower leaves no room for labels,
/// wider would take gigabytes of image.
pub const MIN_WIDTH: u32 = 200;
pub const MAX_WIDTH: u32 = 16_384;

/// A scenario or study name names its results folder (`results/<name>/`): a plain name, so
/// that a shared file cannot make a run write outside `results/`.
pub fn check_name(name: &str) -> Result<(), String> {
    let plain = !name.is_empty()
        && name.len() <= 200
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '+' | '='));
    if plain {
        Ok(())
    } else {
        Err(format!(
            "expected a plain name (letters, digits, `-`, `_`, `.`, `+`, `=`; not starting with \
             `.`; at most 200 characters): it names the results folder, got `{name}`"
        ))
    }
}

/// An output folder named in a scenario file: relative, and never above where hetsim runs.
pub fn check_relative_dir(dir: &str) -> Result<(), String> {
    let path = Path::new(dir);
    let climbs = path.components().any(|c| {
        !matches!(
            c,
            std::path::Component::Normal(_) | std::path::Component::CurDir
        )
    });
    if dir.is_empty() || climbs {
        Err(format!(
            "expected a relative folder without `..` (a scenario file must not write              elsewhere; use --out for that), got `{dir}`"
        ))
    } else {
        Ok(())
    }
}

/// Reads a StarPU machine's files: its SimGrid platform, bus matrices, and the performance
/// models of the workload's codelets (missing models are left to `runtime.models`).
fn resolve_starpu_machine(
    scenario: &mut Scenario,
    label: &str,
    read: &ReadInclude<'_>,
) -> Result<(), LoadError> {
    use crate::scenario::Workload;
    let PlatformSpec::StarpuMachine(m) = &mut scenario.platform else {
        return Ok(());
    };
    let host = m.hostname.clone();
    let at = |name: &str| format!("{}/{name}", m.dir.trim_end_matches('/'));
    for name in [
        format!("bus/{host}.platform.xml"),
        format!("bus/{host}.bandwidth"),
        format!("bus/{host}.latency"),
    ] {
        let got = read(&at(&name)).map_err(|e| {
            LoadError::new(
                label,
                "platform.StarpuMachine",
                format!("{e} (hostname `{host}`)"),
            )
        })?;
        m.files.insert(name, got);
    }
    let codelets: Vec<String> = scenario
        .workload
        .parts()
        .into_iter()
        .flat_map(|(_, w)| match w {
            Workload::Cholesky(_) => crate::tasks::CHOLESKY_CODELETS.map(String::from).to_vec(),
            Workload::Lu(t) => crate::tasks::lu_codelets(t.precision).to_vec(),
            Workload::Qr(_) => crate::tasks::QR_CODELETS.map(String::from).to_vec(),
            Workload::Dag(d) => d.tasks.iter().map(|t| t.codelet.clone()).collect(),
            _ => Vec::new(),
        })
        .collect();
    for c in codelets {
        let name = format!("codelets/45/{c}.{host}");
        if m.files.contains_key(&name) {
            continue;
        }
        if let Ok((file, mut text)) = read(&at(&name)) {
            // A git symbolic link checked out as a file holds its target's name.
            let t = text.trim();
            if !t.is_empty()
                && t.len() < 256
                && !t.contains(char::is_whitespace)
                && let Ok((_, target)) = read(&at(&format!("codelets/45/{t}")))
            {
                text = target;
            }
            m.files.insert(name, (file, text));
        }
    }
    Ok(())
}

/// Reads MPI trace files named by the scenario into its program, so that a scenario is whole
/// once loaded.
fn resolve_traces(
    scenario: &mut Scenario,
    label: &str,
    read: &ReadInclude<'_>,
) -> Result<(), LoadError> {
    use crate::mpi::ProgramSpec;
    for (path, part) in scenario.parts_mut() {
        let crate::scenario::Workload::Mpi(mpi) = part else {
            continue;
        };
        if let ProgramSpec::Trace(files) = &mpi.program {
            if files.is_empty() {
                return Err(LoadError::new(
                    label,
                    format!("{path}.program.Trace"),
                    "expected at least one trace file",
                ));
            }
            let texts = read_traces(files, read)
                .map_err(|(i, e)| LoadError::new(label, format!("{path}.program.Trace[{i}]"), e))?;
            mpi.program = ProgramSpec::TraceText(texts);
        }
    }
    Ok(())
}

/// The texts of trace files read through `read`: one file that is an SMPI `-trace-ti` index
/// stands for the per-rank files it lists, relative to it. An error gives the index in
/// `files` of the file it comes from.
pub fn read_traces(
    files: &[String],
    read: &ReadInclude<'_>,
) -> Result<Vec<(String, String)>, (usize, String)> {
    let texts = files
        .iter()
        .enumerate()
        .map(|(i, f)| read(f).map_err(|e| (i, e)))
        .collect::<Result<Vec<_>, _>>()?;
    let [(_, text)] = texts.as_slice() else {
        return Ok(texts);
    };
    let Some(listed) = index_entries(text) else {
        return Ok(texts);
    };
    let dir = Path::new(&files[0]).parent().unwrap_or(Path::new(""));
    listed
        .iter()
        .map(|entry| {
            read(&dir.join(entry).display().to_string())
                .map_err(|e| (0, format!("a file the index lists: {e}")))
        })
        .collect()
}

/// The files an SMPI trace index lists (one path per line, as `smpirun -trace-ti` writes
/// it), or None when the text is a trace itself (its lines start with a rank).
fn index_entries(text: &str) -> Option<Vec<&str>> {
    let entries: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let is_path = |l: &&str| {
        let mut words = l.split_whitespace();
        let first = words.next().unwrap_or("");
        words.next().is_none()
            && first
                .trim_start_matches("rank")
                .trim_start_matches('p')
                .parse::<i64>()
                .is_err()
    };
    (!entries.is_empty() && entries.iter().all(is_path)).then_some(entries)
}

/// Deserialises RON text, reporting the field path and position of the first error.
pub fn from_ron<T: DeserializeOwned>(
    text: &str,
    label: &str,
    prefix: &str,
) -> Result<T, LoadError> {
    // Newtype variants unwrap (`Cluster(nodes: 2, ...)`, not `Cluster(Cluster(...))`) and
    // options need no `Some(...)`: scenario files are written by hand.
    let options = ron::Options::default().with_default_extension(
        ron::extensions::Extensions::UNWRAP_VARIANT_NEWTYPES
            | ron::extensions::Extensions::IMPLICIT_SOME,
    );
    // Editors on Windows may start a UTF-8 file with a byte-order mark.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut de = ron::Deserializer::from_str_with_options(text, &options)
        .map_err(|e| spanned(label, prefix, e))?;
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = join_path(prefix, &e.path().to_string());
        let spanned = de.span_error(e.into_inner());
        LoadError {
            file: label.to_string(),
            path,
            position: Some((spanned.span.start.line, spanned.span.start.col)),
            message: spanned.code.to_string(),
        }
    })?;
    de.end()
        .map_err(|e| spanned(label, prefix, de.span_error(e)))?;
    Ok(value)
}

fn spanned(label: &str, prefix: &str, e: ron::error::SpannedError) -> LoadError {
    LoadError {
        file: label.to_string(),
        path: prefix.to_string(),
        position: Some((e.span.start.line, e.span.start.col)),
        message: e.code.to_string(),
    }
}

fn join_path(prefix: &str, path: &str) -> String {
    match (prefix.is_empty(), path == "." || path.is_empty()) {
        (_, true) => prefix.to_string(),
        (true, false) => path.to_string(),
        (false, false) => format!("{prefix}.{path}"),
    }
}

/// Replaces `platform: File("...")` or `Named("...")` by the platform it describes.
fn resolve_platform(
    scenario: &mut Scenario,
    label: &str,
    read: &ReadInclude<'_>,
) -> Result<(), LoadError> {
    let (file, text) = match &scenario.platform {
        PlatformSpec::File(name) => read(name).map_err(|e| {
            // A scenario copied away from its platform: say how to name a shipped one.
            let hint = crate::shipped::by_file_name(name).map_or(String::new(), |n| {
                format!(
                    "; `{n}` is a shipped platform: write platform: Named(\"{n}\") to use it from any folder"
                )
            });
            LoadError::new(label, "platform", format!("{e}{hint}"))
        })?,
        PlatformSpec::Named(name) => {
            let text = crate::shipped::platform(name).ok_or_else(|| {
                LoadError::new(
                    label,
                    "platform",
                    format!(
                        "no shipped platform `{name}`; expected one of {}",
                        crate::shipped::names()
                    ),
                )
            })?;
            (format!("<shipped platform {name}>"), text.to_string())
        }
        _ => return Ok(()),
    };
    let platform: PlatformSpec = from_ron(&text, &file, "platform")?;
    if matches!(platform, PlatformSpec::File(_) | PlatformSpec::Named(_)) {
        return Err(LoadError::new(
            file,
            "platform",
            "a platform file must describe a platform (Cluster or Explicit), not include another",
        ));
    }
    scenario.platform = platform;
    Ok(())
}

/// Applies `path=value` overrides in order.
pub fn apply_overrides(scenario: Scenario, overrides: &[String]) -> Result<Scenario, LoadError> {
    if overrides.is_empty() {
        return Ok(scenario);
    }
    let mut image = serde_json::to_value(&scenario).expect("a scenario always serialises");
    for text in overrides {
        let label = format!("--set {text}");
        let (path, value) = text
            .split_once('=')
            .ok_or_else(|| LoadError::new(&label, "", "expected PATH=VALUE, e.g. seed=7"))?;
        set_path(&mut image, path.trim(), parse_override_value(value.trim()))
            .map_err(|message| LoadError::new(&label, path.trim(), message))?;
    }
    let joined = format!("--set {}", overrides.join(" --set "));
    serde_path_to_error::deserialize(image)
        .map_err(|e| LoadError::new(joined, e.path().to_string(), e.into_inner().to_string()))
}

/// An override's field path without enum variant names (`platform.Cluster.node.gpus` is
/// `platform.node.gpus`), as [`step_through_variant`] reads either.
fn plain_path(override_text: &str) -> String {
    let path = override_text
        .split_once('=')
        .map_or(override_text, |(p, _)| p);
    path.trim()
        .split('.')
        .filter(|seg| !seg.starts_with(|c: char| c.is_ascii_uppercase()))
        .collect::<Vec<_>>()
        .join(".")
}

/// `--set platform.node.gpus=G` on a scenario whose MPI job fixes its GPUs per node in the
/// file would change nothing the job uses: refused, naming the fields that must follow (issue
/// 56). A node with more GPUs than the job uses is fine when the file or the command says so.
fn check_gpus_followed(scenario: &Scenario, overrides: &[String]) -> Result<(), LoadError> {
    let set: Vec<String> = overrides.iter().map(|o| plain_path(o)).collect();
    let Some(gpus_set) = overrides
        .iter()
        .find(|o| plain_path(o) == "platform.node.gpus")
    else {
        return Ok(());
    };
    let PlatformSpec::Cluster(c) = &scenario.platform else {
        return Ok(());
    };
    // In a mix, the other workloads may be the ones that use the new GPUs.
    let Workload::Mpi(m) = &scenario.workload else {
        return Ok(());
    };
    let gpus = c.node.gpus;
    let followed = set.iter().any(|p| p == "workload.gpus_per_node");
    let Some(per_node) = m.gpus_per_node.filter(|&p| p != gpus && !followed) else {
        return Ok(());
    };
    let nodes = m.ranks.div_ceil(per_node.max(1));
    Err(LoadError::new(
        format!("--set {gpus_set}"),
        "platform.node.gpus",
        format!(
            "the MPI job keeps workload.Mpi.gpus_per_node = {per_node} and workload.Mpi.ranks = {}, so it would run as before; set them too (e.g. --set workload.Mpi.gpus_per_node={gpus} --set workload.Mpi.ranks={})",
            m.ranks,
            nodes * gpus
        ),
    ))
}

/// An override value: JSON if it parses (numbers, booleans, lists, quoted strings), else text.
fn parse_override_value(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

/// Sets `path` (dot-separated; list indices as numbers, `Flows.0` or `Flows[0]`) in a JSON
/// image of the scenario.
fn set_path(root: &mut Value, path: &str, value: Value) -> Result<(), String> {
    if path.is_empty() {
        return Err("empty field path".into());
    }
    let mut node = root;
    let dotted = path.replace('[', ".").replace(']', "");
    let segments: Vec<&str> = dotted.split('.').collect();
    for (i, seg) in segments.iter().enumerate() {
        node = step_through_variant(node, seg);
        let last = i + 1 == segments.len();
        node = match node {
            Value::Object(map) => {
                if last {
                    map.insert(seg.to_string(), value);
                    return Ok(());
                }
                map.entry(seg.to_string()).or_insert(Value::Null)
            }
            Value::Array(items) => {
                let idx: usize = seg
                    .parse()
                    .map_err(|_| format!("`{seg}` is not a list index (the field is a list)"))?;
                let len = items.len();
                let slot = items
                    .get_mut(idx)
                    .ok_or_else(|| format!("index {idx} is past the end of a list of {len}"))?;
                if last {
                    *slot = value;
                    return Ok(());
                }
                slot
            }
            Value::Null => {
                *node = Value::Object(Default::default());
                let Value::Object(map) = node else {
                    unreachable!()
                };
                if last {
                    map.insert(seg.to_string(), value);
                    return Ok(());
                }
                map.entry(seg.to_string()).or_insert(Value::Null)
            }
            _ => {
                let parent = segments[..i].join(".");
                return Err(format!("`{parent}` is a value, it has no field `{seg}`"));
            }
        };
    }
    unreachable!("the loop returns on the last segment")
}

/// An externally tagged enum is `{"Variant": content}`: step into the content unless the
/// segment names the variant itself.
fn step_through_variant<'a>(node: &'a mut Value, seg: &str) -> &'a mut Value {
    let is_variant = matches!(node, Value::Object(map) if map.len() == 1
        && !map.contains_key(seg)
        && map.keys().next().is_some_and(|k| k.starts_with(|c: char| c.is_ascii_uppercase())));
    if is_variant {
        let Value::Object(map) = node else {
            unreachable!()
        };
        return map.values_mut().next().expect("one entry");
    }
    node
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Workload;

    const TINY: &str = r#"Scenario(
        name: "tiny",
        platform: Explicit(links: [NamedLink(name: "l0", bandwidth: "1GB/s", latency: "1ms")]),
        workload: Flows([FlowSpec(route: ["l0"], size: "500MB")]),
    )"#;

    fn parse(text: &str, overrides: &[&str]) -> Result<Scenario, LoadError> {
        let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        parse_scenario(text, "tiny.ron", Path::new("."), &o)
    }

    #[test]
    fn reads_units() {
        let s = parse(TINY, &[]).unwrap();
        let PlatformSpec::Explicit(p) = &s.platform else {
            panic!()
        };
        assert_eq!(p.links[0].bandwidth.0, 1e9);
        let Workload::Flows(f) = &s.workload else {
            panic!("a Flows workload")
        };
        assert_eq!(f[0].size.0, 5e8);
    }

    #[test]
    fn unknown_field_names_file_path_and_position() {
        let bad = TINY.replace("latency:", "latncy:");
        let e = parse(&bad, &[]).unwrap_err();
        assert_eq!(e.file, "tiny.ron");
        assert!(e.path.starts_with("platform"), "{e}");
        assert!(e.message.contains("latncy"), "{e}");
        assert_eq!(e.position.unwrap().0, 3);
    }

    #[test]
    fn bad_unit_names_the_field() {
        let bad = TINY.replace("\"1GB/s\"", "\"1 parsec\"");
        let e = parse(&bad, &[]).unwrap_err();
        assert_eq!(e.path, "platform.Explicit.links[0].bandwidth", "{e}");
        assert!(e.message.contains("bandwidth"), "{e}");
    }

    #[test]
    fn overrides_reach_through_variants_and_lists() {
        let s = parse(
            TINY,
            &[
                "seed=7",
                "platform.links.0.bandwidth=2GB/s",
                "workload.0.size=10",
            ],
        )
        .unwrap();
        assert_eq!(s.seed, 7);
        let PlatformSpec::Explicit(p) = &s.platform else {
            panic!()
        };
        assert_eq!(p.links[0].bandwidth.0, 2e9);
        let Workload::Flows(f) = &s.workload else {
            panic!("a Flows workload")
        };
        assert_eq!(f[0].size.0, 10.0);
    }

    #[test]
    fn override_of_unknown_field_is_an_error_with_its_path() {
        let e = parse(TINY, &["platform.links.0.colour=red"]).unwrap_err();
        assert!(e.file.starts_with("--set"), "{e}");
        assert!(e.message.contains("colour"), "{e}");
        let e = parse(TINY, &["seed"]).unwrap_err();
        assert!(e.message.contains("PATH=VALUE"), "{e}");
        let e = parse(TINY, &["seed=-3"]).unwrap_err();
        assert_eq!(e.path, "seed", "{e}");
    }
}
