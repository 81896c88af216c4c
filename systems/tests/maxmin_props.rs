//! Properties of the incremental max-min solver on random links and flows:
//! rates are feasible, max-min (every flow crosses a saturated link on which no flow has a
//! larger rate), independent of the order flows were added, and equal to a from-scratch
//! progressive filling after any sequence of adds and removes. Routes may list a link more
//! than once; as in SimGrid, such a flow loads the link once per listing.

use hetsim_systems::network::maxmin::{ConsId, MaxMin};
use proptest::prelude::*;

/// Textbook progressive filling, written independently of the solver: raise all unfrozen
/// flows together until a link fills, freeze the flows on it, repeat. A link takes a flow's
/// rate once per time the route lists it.
fn reference(caps: &[f64], routes: &[Vec<ConsId>]) -> Vec<f64> {
    let mut rate = vec![0.0; routes.len()];
    let mut frozen = vec![false; routes.len()];
    let mut left: Vec<f64> = caps.to_vec();
    loop {
        // Listings of link `c` by flows still growing.
        let growing = |frozen: &[bool], c: usize| {
            routes
                .iter()
                .enumerate()
                .filter(|(f, _)| !frozen[*f])
                .map(|(_, r)| r.iter().filter(|&&x| x == c as ConsId).count())
                .sum::<usize>()
        };
        let mut best = f64::INFINITY;
        for (c, &cap) in left.iter().enumerate() {
            let n = growing(&frozen, c);
            if n > 0 {
                best = best.min(cap / n as f64);
            }
        }
        if best.is_infinite() {
            return rate;
        }
        let mut full = vec![false; caps.len()];
        for (c, &cap) in left.iter().enumerate() {
            let n = growing(&frozen, c);
            full[c] = n > 0 && cap / n as f64 <= best * (1.0 + 1e-12);
        }
        for (f, r) in routes.iter().enumerate() {
            if frozen[f] {
                continue;
            }
            rate[f] += best;
            for &c in r {
                left[c as usize] -= best;
            }
        }
        for (f, r) in routes.iter().enumerate() {
            if !frozen[f] && r.iter().any(|&c| full[c as usize]) {
                frozen[f] = true;
            }
        }
    }
}

fn problem() -> impl Strategy<Value = (Vec<f64>, Vec<Vec<ConsId>>)> {
    problem_of(2..12, 1..25)
}

/// Many flows on few links: constraints list more untouched flows than the solver re-keys
/// exactly.
fn crowded_problem() -> impl Strategy<Value = (Vec<f64>, Vec<Vec<ConsId>>)> {
    problem_of(2..5, 20..80)
}

fn problem_of(
    links: std::ops::Range<usize>,
    flows: std::ops::Range<usize>,
) -> impl Strategy<Value = (Vec<f64>, Vec<Vec<ConsId>>)> {
    links.prop_flat_map(move |links| {
        // Capacities from a small set make ties (equal levels) frequent: the hard case.
        let caps = prop::collection::vec(
            prop::sample::select(vec![1.0, 2.0, 3.0, 5.0, 7.5, 10.0]),
            links,
        );
        let route = prop::collection::vec(0..links as ConsId, 1..4);
        (caps, prop::collection::vec(route, flows.clone()))
    })
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn rates_are_feasible_max_min_and_match_the_reference((caps, routes) in problem()) {
        let mut m = MaxMin::new();
        let cons: Vec<_> = caps.iter().map(|&c| m.add_constraint(c)).collect();
        let ids: Vec<_> = routes.iter().map(|r| m.add_flow(&r.iter().map(|&i| cons[i as usize]).collect::<Vec<_>>(), None)).collect();
        m.solve();
        m.check(1e-9).map_err(TestCaseError::fail)?;
        let want = reference(&caps, &routes);
        for (i, &id) in ids.iter().enumerate() {
            prop_assert!(close(m.rate(id), want[i]), "flow {i}: {} vs {}", m.rate(id), want[i]);
        }
    }

    #[test]
    fn order_of_addition_does_not_matter((caps, routes) in problem(), seed in any::<u64>()) {
        let solve = |order: &[usize]| {
            let mut m = MaxMin::new();
            caps.iter().for_each(|&c| { m.add_constraint(c); });
            let mut rates = vec![0.0; routes.len()];
            let ids: Vec<_> = order.iter().map(|&i| (i, m.add_flow(&routes[i], None))).collect();
            m.solve();
            for (i, id) in ids { rates[i] = m.rate(id); }
            rates
        };
        let forward: Vec<usize> = (0..routes.len()).collect();
        let mut shuffled = forward.clone();
        let mut s = seed;
        for i in (1..shuffled.len()).rev() {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            shuffled.swap(i, (s >> 33) as usize % (i + 1));
        }
        let (a, b) = (solve(&forward), solve(&shuffled));
        for i in 0..a.len() {
            prop_assert!(close(a[i], b[i]), "flow {i}: {} vs {}", a[i], b[i]);
        }
    }

    /// Adds and removes one or a few flows at a time, re-solving incrementally after each
    /// step, and compares every rate with a from-scratch solve of the live flows.
    #[test]
    fn incremental_re_solves_equal_from_scratch((caps, routes) in problem(), ops in prop::collection::vec((any::<bool>(), 0usize..64, 1usize..4), 1..40)) {
        incremental_matches_reference(&caps, &routes, &ops)?;
    }

    /// The same with many flows on few links, so that constraints list more untouched flows
    /// than the solver re-keys exactly (its lower bounds are then what orders the fills).
    #[test]
    fn crowded_incremental_re_solves_equal_from_scratch((caps, routes) in crowded_problem(), ops in prop::collection::vec((any::<bool>(), 0usize..128, 1usize..12), 1..30)) {
        incremental_matches_reference(&caps, &routes, &ops)?;
    }
}

fn incremental_matches_reference(
    caps: &[f64],
    routes: &[Vec<ConsId>],
    ops: &[(bool, usize, usize)],
) -> Result<(), TestCaseError> {
    let mut m = MaxMin::new();
    caps.iter().for_each(|&c| {
        m.add_constraint(c);
    });
    let mut live: Vec<(usize, u32)> = vec![];
    let mut next = 0;
    for &(add, pick, count) in ops {
        for _ in 0..count {
            if add || live.is_empty() {
                let r = next % routes.len();
                next += 1;
                live.push((r, m.add_flow(&routes[r], None)));
            } else {
                let (_, id) = live.remove(pick % live.len());
                m.remove_flow(id);
            }
        }
        m.solve();
        m.check(1e-9).map_err(TestCaseError::fail)?;
        let want = reference(
            caps,
            &live
                .iter()
                .map(|&(r, _)| routes[r].clone())
                .collect::<Vec<_>>(),
        );
        for (k, &(_, id)) in live.iter().enumerate() {
            prop_assert!(
                close(m.rate(id), want[k]),
                "live flow {k}: {} vs {}",
                m.rate(id),
                want[k]
            );
        }
    }
    Ok(())
}
