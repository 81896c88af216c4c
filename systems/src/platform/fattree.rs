//! An extended generalized fat-tree, XGFT(h; m1..mh; w1..wh), with d-mod-k routing.
//!
//! Level 0 holds the nodes, level i the switches of level i. Each level-i element has `m[i]`
//! children below it (for i >= 1) and `w[i+1]` parents above it; `w[1] = 1`. A level-i element
//! is numbered `sub * W[i] + rep`, where `sub` says which level-i subtree it serves and `rep`
//! which replica of that position it is (`W[i] = w1 * ... * wi`). Its parent number `b`
//! (0 <= b < w[i+1]) is `(sub / m[i+1]) * W[i+1] + rep + W[i] * b`.
//!
//! d-mod-k (Zahavi et al.) routes up from level i through parent `(d / W[i]) mod w[i+1]` for
//! destination node `d`, up to the lowest level whose subtree holds both nodes, then down the
//! unique path; so all traffic to one destination converges early and routes are balanced.

/// Shape of a fat-tree. `m[0]` is unused (nodes have no children); `w[0]` is unused.
#[derive(Debug, Clone, PartialEq)]
pub struct FatTree {
    pub m: Vec<u64>,
    pub w: Vec<u64>,
    /// Elements per level (`count[0]` = nodes capacity).
    pub count: Vec<u64>,
    /// First up-link index of each level (up links of level i: `count[i] * w[i+1]`).
    pub link_base: Vec<u64>,
}

/// One hop of a fat-tree route: the up link `link` crossed upward or downward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeHop {
    pub level: usize,
    pub link: u64,
    pub up: bool,
}

impl FatTree {
    /// `children[i]` = m[i+1]; `parents[i]` = w[i+2] for the non-top switch levels.
    pub fn new(children: &[u64], parents: &[u64]) -> Self {
        let h = children.len();
        assert_eq!(
            parents.len() + 1,
            h,
            "one parent count per non-top switch level"
        );
        let mut m = vec![0; h + 1];
        let mut w = vec![0; h + 1];
        m[1..].copy_from_slice(children);
        w[1] = 1;
        w[2..].copy_from_slice(parents);
        let cap_w = |i: usize| w[1..=i].iter().product::<u64>();
        let sub = |i: usize| m[i + 1..].iter().product::<u64>();
        let count: Vec<u64> = (0..=h).map(|i| sub(i) * cap_w(i)).collect();
        let mut link_base = vec![0; h + 1];
        for i in 1..=h {
            link_base[i] = link_base[i - 1] + count[i - 1] * w[i];
        }
        FatTree {
            m,
            w,
            count,
            link_base,
        }
    }

    pub fn levels(&self) -> usize {
        self.m.len() - 1
    }

    /// Total number of up links (= links of the tree).
    pub fn link_count(&self) -> u64 {
        self.link_base[self.levels()]
    }

    fn big_w(&self, i: usize) -> u64 {
        self.w[1..=i].iter().product()
    }

    /// Subtree size (in nodes) of a level-i element.
    fn span(&self, i: usize) -> u64 {
        self.m[1..=i].iter().product()
    }

    /// The up link number `b` of level-i element `e`.
    pub fn up_link(&self, i: usize, e: u64, b: u64) -> u64 {
        self.link_base[i] + e * self.w[i + 1] + b
    }

    /// The level-(i+1) element reached from level-i element `e` through its parent `b`.
    pub fn parent(&self, i: usize, e: u64, b: u64) -> u64 {
        let (sub, rep) = (e / self.big_w(i), e % self.big_w(i));
        (sub / self.m[i + 1]) * self.big_w(i + 1) + rep + self.big_w(i) * b
    }

    /// The links from node `s` to node `d` under d-mod-k routing.
    pub fn route(&self, s: u64, d: u64) -> Vec<TreeHop> {
        let top = (0..=self.levels())
            .find(|&l| s / self.span(l) == d / self.span(l))
            .unwrap_or(self.levels());
        let mut hops = Vec::with_capacity(2 * top);
        let mut e = s;
        for i in 0..top {
            let b = (d / self.big_w(i)) % self.w[i + 1];
            hops.push(TreeHop {
                level: i,
                link: self.up_link(i, e, b),
                up: true,
            });
            e = self.parent(i, e, b);
        }
        // Down: at level i the element is (sub, rep); its child towards d is d's level-(i-1)
        // subtree with replica rep mod W[i-1], reached through that child's up link rep / W[i-1].
        let mut down = Vec::with_capacity(top);
        let mut rep = e % self.big_w(top);
        for i in (1..=top).rev() {
            let child_sub = d / self.span(i - 1);
            let child_rep = rep % self.big_w(i - 1);
            let b = rep / self.big_w(i - 1);
            let child = child_sub * self.big_w(i - 1) + child_rep;
            down.push(TreeHop {
                level: i - 1,
                link: self.up_link(i - 1, child, b),
                up: false,
            });
            rep = child_rep;
        }
        hops.extend(down);
        hops
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lassen as TraceR-CODES models it: 18 nodes per leaf, 9 leaves per pod, 5 pods, 1.5:1
    /// taper at both switch levels (12 and 6 parents).
    fn lassen() -> FatTree {
        FatTree::new(&[18, 9, 5], &[12, 6])
    }

    #[test]
    fn lassen_counts() {
        let t = lassen();
        assert_eq!(t.count, vec![810, 45, 60, 72]);
        // 810 node links, 45 x 12 leaf up links, 60 x 6 level-2 up links.
        assert_eq!(t.link_count(), 810 + 540 + 360);
    }

    #[test]
    fn routes_climb_only_as_high_as_needed() {
        let t = lassen();
        assert_eq!(t.route(0, 17).len(), 2, "same leaf");
        assert_eq!(t.route(0, 18).len(), 4, "same pod");
        assert_eq!(t.route(0, 809).len(), 6, "different pods");
        assert!(t.route(5, 5).is_empty());
    }

    #[test]
    fn routes_are_connected_paths() {
        let t = lassen();
        for (s, d) in [(0, 809), (100, 3), (17, 18), (400, 401), (162, 0)] {
            let hops = t.route(s, d);
            // Up hops start at s; every down hop ends at d's side: check the last is d's link.
            assert_eq!(hops.first().unwrap().link, t.up_link(0, s, 0));
            assert_eq!(hops.last().unwrap().link, t.up_link(0, d, 0));
            let ups = hops.iter().filter(|h| h.up).count();
            assert_eq!(ups * 2, hops.len());
            // Each down hop's link must belong to the element reached by the previous hop.
            let mut e = s;
            for h in hops.iter().filter(|h| h.up) {
                let b = h.link - t.link_base[h.level] - e * t.w[h.level + 1];
                e = t.parent(h.level, e, b);
            }
            let top = hops.iter().filter(|h| h.up).count();
            let mut elem = e;
            for h in hops.iter().filter(|h| !h.up) {
                let child = (h.link - t.link_base[h.level]) / t.w[h.level + 1];
                let b = (h.link - t.link_base[h.level]) % t.w[h.level + 1];
                assert_eq!(
                    t.parent(h.level, child, b),
                    elem,
                    "hop {h:?} of {s}->{d} below level {top}"
                );
                elem = child;
            }
            assert_eq!(elem, d);
        }
    }

    #[test]
    fn d_mod_k_spreads_destinations_over_leaf_uplinks() {
        let t = lassen();
        // From one leaf to the 12 nodes 18..30 of the next leaf: 12 different leaf up links.
        let mut used: Vec<u64> = (18..30).map(|d| t.route(0, d)[1].link).collect();
        used.sort();
        used.dedup();
        assert_eq!(used.len(), 12);
    }
}
