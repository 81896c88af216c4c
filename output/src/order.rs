//! Stable orders for resources and groups, shared by every writer: `node[2]` before
//! `node[10]`, nodes before the network, and inside a group by kind then by name.

use std::cmp::Ordering;

use hetsim_engine::record::{Recorder, ResId};

/// Compares strings with their digit runs as numbers (`gpu[2]` < `gpu[10]`).
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    loop {
        match (a.first(), b.first()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let da = a.iter().take_while(|c| c.is_ascii_digit()).count();
                let db = b.iter().take_while(|c| c.is_ascii_digit()).count();
                let (na, nb) = (trim_zeros(&a[..da]), trim_zeros(&b[..db]));
                let ord = na.len().cmp(&nb.len()).then_with(|| na.cmp(nb));
                if ord != Ordering::Equal {
                    return ord;
                }
                a = &a[da..];
                b = &b[db..];
            }
            (Some(x), Some(y)) => {
                if x != y {
                    return x.cmp(y);
                }
                a = &a[1..];
                b = &b[1..];
            }
        }
    }
}

fn trim_zeros(digits: &[u8]) -> &[u8] {
    let zeros = digits.iter().take_while(|&&c| c == b'0').count();
    &digits[zeros.min(digits.len().saturating_sub(1))..]
}

/// Groups in display order: nodes by number, then the others by name.
pub fn group_cmp(a: &str, b: &str) -> Ordering {
    let network = |g: &str| !g.starts_with("node[");
    network(a).cmp(&network(b)).then_with(|| natural_cmp(a, b))
}

/// Every registered resource in display order.
pub fn resources_in_order(rec: &Recorder) -> Vec<ResId> {
    let mut ids: Vec<ResId> = (0..rec.resources().len() as u32).map(ResId).collect();
    ids.sort_by(|&x, &y| {
        let (a, b) = (rec.resource_info(x), rec.resource_info(y));
        group_cmp(&a.group, &b.group)
            .then_with(|| a.kind.cmp(&b.kind))
            .then_with(|| natural_cmp(&a.name, &b.name))
    });
    ids
}

/// The groups in display order, each with its resources.
pub fn groups_in_order(rec: &Recorder) -> Vec<(String, Vec<ResId>)> {
    let mut groups: Vec<(String, Vec<ResId>)> = Vec::new();
    for id in resources_in_order(rec) {
        let group = &rec.resource_info(id).group;
        match groups.last_mut() {
            Some((g, members)) if g == group => members.push(id),
            _ => groups.push((group.clone(), vec![id])),
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_sort_as_numbers() {
        let mut v = vec![
            "node[10]",
            "node[2]",
            "network",
            "node[02]x",
            "node[1].gpu[11]",
        ];
        v.sort_by(|a, b| group_cmp(a, b));
        assert_eq!(
            v,
            vec![
                "node[1].gpu[11]",
                "node[2]",
                "node[02]x",
                "node[10]",
                "network"
            ]
        );
        assert_eq!(natural_cmp("gpu[2]", "gpu[10]"), Ordering::Less);
        assert_eq!(natural_cmp("a0", "a00"), Ordering::Equal);
    }
}
