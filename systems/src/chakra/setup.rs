//! Reading a Chakra workload: each rank's trace (one read shared by every rank when the
//! traces are replicated), the process groups its collectives name and their members.

use std::collections::BTreeMap;
use std::sync::Arc;

use hetsim_schema::chakra::ChakraSpec;
use hetsim_schema::scenario::Cluster;

use super::graph::{Graph, Peaks, Work};

/// A process group: its name (`pg_name`; "" for collectives without one) and its ranks, in
/// the group's rank order.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupSpec {
    pub name: String,
    pub members: Vec<u32>,
}

/// The workload read: a graph per rank, the groups, and each rank's graph-local group
/// numbers mapped to the job's.
#[derive(Debug)]
pub struct Loaded {
    pub graphs: Vec<Arc<Graph>>,
    pub group_of: Vec<Arc<Vec<u32>>>,
    pub groups: Vec<GroupSpec>,
    /// Whether any rank sends or receives (the job then needs a world communicator).
    pub p2p: bool,
}

/// How many ranks run: `ranks`, or every GPU of the platform.
pub fn ranks(spec: &ChakraSpec, cluster: &Cluster) -> Result<u32, String> {
    let total = cluster.nodes * cluster.node.gpus;
    let n = spec.ranks.unwrap_or(total);
    if n == 0 || n > total {
        return Err(format!(
            "workload.Chakra.ranks: expected 1 to {total} (the platform's GPUs), got {n}"
        ));
    }
    Ok(n)
}

/// Reads every rank's trace and the groups.
pub fn load(spec: &ChakraSpec, n: u32, peaks: Peaks) -> Result<Loaded, String> {
    let read = |file: String| -> Result<Arc<Graph>, String> {
        let et = chakra::EtFile::read(&file).map_err(|e| e.to_string())?;
        Graph::build(&et, n, peaks).map(Arc::new)
    };
    let graphs: Vec<Arc<Graph>> = if spec.replicated() {
        let g = read(spec.files.clone())?;
        vec![g; n as usize]
    } else {
        (0..n)
            .map(|r| read(spec.file_of(r)))
            .collect::<Result<_, _>>()?
    };
    let file_groups = match &spec.comm_groups {
        Some(path) => Some(read_groups(path, n)?),
        None => None,
    };
    let mut groups: Vec<GroupSpec> = Vec::new();
    let mut group_of = Vec::with_capacity(n as usize);
    // Replicated ranks share one graph: its groups are mapped, and its sends looked for, once.
    let mut last: Option<(&Arc<Graph>, Arc<Vec<u32>>)> = None;
    let mut p2p = false;
    for g in &graphs {
        if let Some((prev, map)) = &last
            && Arc::ptr_eq(prev, g)
        {
            group_of.push(Arc::clone(map));
            continue;
        }
        let map = g
            .groups
            .iter()
            .map(|name| job_group(name, &mut groups, file_groups.as_ref(), n, spec))
            .collect::<Result<Vec<u32>, String>>()?;
        let map = Arc::new(map);
        p2p |= g
            .work
            .iter()
            .any(|w| matches!(w, Work::Send { .. } | Work::Recv { .. }));
        last = Some((g, Arc::clone(&map)));
        group_of.push(map);
    }
    Ok(Loaded {
        graphs,
        group_of,
        groups,
        p2p,
    })
}

/// The job's number of the group `name`, added on first use.
fn job_group(
    name: &str,
    groups: &mut Vec<GroupSpec>,
    file: Option<&BTreeMap<String, Vec<u32>>>,
    n: u32,
    spec: &ChakraSpec,
) -> Result<u32, String> {
    if let Some(i) = groups.iter().position(|g| g.name == name) {
        return Ok(i as u32);
    }
    let members = match file {
        Some(f) if !name.is_empty() => f.get(name).cloned().ok_or_else(|| {
            format!(
                "workload.Chakra.comm_groups: a collective names process group {name:?}, which `{}` does not define",
                spec.comm_groups.as_deref().unwrap_or("")
            )
        })?,
        _ => (0..n).collect(),
    };
    groups.push(GroupSpec {
        name: name.to_string(),
        members,
    });
    Ok(groups.len() as u32 - 1)
}

/// ASTRA-sim's communicator-group file: a JSON object of group name -> list of ranks.
pub fn read_groups(path: &str, n: u32) -> Result<BTreeMap<String, Vec<u32>>, String> {
    let at = format!("workload.Chakra.comm_groups: `{path}`");
    let text = hetsim_schema::load::read_input(std::path::Path::new(path))
        .map_err(|e| format!("{at}: {e}"))?;
    parse_groups(&text, n).map_err(|e| format!("{at}: {e}"))
}

/// The groups of a communicator-group file's text; each a non-empty list of distinct ranks
/// below `n`.
pub fn parse_groups(text: &str, n: u32) -> Result<BTreeMap<String, Vec<u32>>, String> {
    let groups: BTreeMap<String, Vec<i64>> = serde_json::from_str(text)
        .map_err(|e| format!("expected a JSON object of group name -> list of ranks ({e})"))?;
    let mut out = BTreeMap::new();
    for (name, ranks) in groups {
        if ranks.is_empty() {
            return Err(format!("group {name:?}: no ranks"));
        }
        let mut seen = std::collections::BTreeSet::new();
        let mut members = Vec::with_capacity(ranks.len());
        for r in ranks {
            if !(0..n as i64).contains(&r) {
                return Err(format!(
                    "group {name:?}: rank {r} is not a rank (the workload has {n})"
                ));
            }
            if !seen.insert(r) {
                return Err(format!("group {name:?}: rank {r} twice"));
            }
            members.push(r as u32);
        }
        out.insert(name, members);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_file_maps_names_to_distinct_ranks() {
        let g = parse_groups(r#"{"0": [0, 1], "1": [2, 3]}"#, 4).unwrap();
        assert_eq!(g["1"], vec![2, 3]);
        assert!(
            parse_groups(r#"{"0": [0, 4]}"#, 4)
                .unwrap_err()
                .contains("rank 4 is not a rank")
        );
        assert!(
            parse_groups(r#"{"0": [1, 1]}"#, 4)
                .unwrap_err()
                .contains("rank 1 twice")
        );
        assert!(
            parse_groups(r#"[0, 1]"#, 4)
                .unwrap_err()
                .contains("JSON object")
        );
    }

    #[test]
    fn a_group_without_a_file_or_a_name_is_every_rank() {
        let spec = ChakraSpec::new("x.et");
        let mut groups = Vec::new();
        assert_eq!(job_group("tp", &mut groups, None, 3, &spec), Ok(0));
        assert_eq!(job_group("", &mut groups, None, 3, &spec), Ok(1));
        assert_eq!(job_group("tp", &mut groups, None, 3, &spec), Ok(0));
        assert_eq!(groups[0].members, vec![0, 1, 2]);
        let file: BTreeMap<String, Vec<u32>> = [("a".to_string(), vec![1])].into();
        let e = job_group("b", &mut groups, Some(&file), 3, &spec).unwrap_err();
        assert!(e.contains("process group \"b\""), "{e}");
        assert_eq!(job_group("a", &mut groups, Some(&file), 3, &spec), Ok(2));
        assert_eq!(groups[2].members, vec![1]);
    }
}
