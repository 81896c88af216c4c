//! Groups: the flows that share a bottleneck and a rate (to the bit), which the solver
//! re-solves as one. A group crosses each constraint its flows cross, with a weight (the times
//! their routes list it) and a count (how many of them cross it). Flows join a group of their
//! own when added; a group parts when only some of its flows cross a constraint that fills
//! ([`MaxMin::part_on`]), and the groups that froze on one bottleneck at one rate merge after
//! each solve ([`MaxMin::merge_groups`]).

use smallvec::SmallVec;

/// Solves a new flow's group, or a group just parted, is re-rated in before it may merge:
/// merging pays over the solves a group then lives through, and costs again when its flows
/// part or end. A part that merged again at once often parted again in the next solve:
/// waiting took halo3d at 480 ranks from 3.93 s to 3.41 s of CPU (three runs each,
/// 2026-11-30). On the LULESH-like SMPI trace (short messages) merging from the second solve
/// on ran 765.5 M instructions, from the fifth 742.8 M, never 713.9 M; halo3d at 480 ranks
/// took 4.33 s, 4.46 s and 8.28 s, the 10,000 flows at t = 0 4.37 s, 4.40 s and (from the
/// ninth) 4.91 s (2026-11-30, one run each).
pub(super) const FRESH_SOLVES: u8 = 4;

use super::{
    ConsId, Entry, FlowId, GroupId, GroupSlot, Hot, MaxMin, NONE, OwnRoute, Scratch, Share,
    route_bit,
};

impl MaxMin {
    /// A free group id (its records empty), reused or new.
    fn free_group(&mut self) -> GroupId {
        self.free_groups.pop().unwrap_or_else(|| {
            self.groups.push(GroupSlot::default());
            self.hot.push(Hot::default());
            (self.groups.len() - 1) as GroupId
        })
    }

    /// A group without flows, with `hot`'s rate, bottleneck and per-solve state, fresh (see
    /// [`FRESH_SOLVES`]).
    pub(super) fn new_group(&mut self, hot: Hot) -> GroupId {
        let g = self.free_group();
        self.groups[g as usize] = GroupSlot::default();
        self.hot[g as usize] = Hot {
            cons: SmallVec::new(),
            weighted: false,
            fresh: FRESH_SOLVES,
            lone: NONE,
            ..hot
        };
        g
    }

    /// A group of new flow `f` alone, over `route` then `private` (each constraint once; a
    /// route that lists some twice comes with `weights`, the times it lists each): the flow
    /// lends the group its route, and the group's weights are the flow's.
    pub(super) fn group_of_one(
        &mut self,
        f: FlowId,
        route: &[ConsId],
        private: Option<ConsId>,
        weights: Option<&[u32]>,
    ) -> GroupId {
        let g = self.free_group();
        let MaxMin {
            groups,
            hot,
            cons,
            flows,
            ..
        } = self;
        let slot = &mut groups[g as usize];
        debug_assert!(
            slot.flows.is_empty() && slot.pos.is_empty() && slot.shares.is_none(),
            "free groups are empty"
        );
        slot.flows.push(f);
        let h = &mut hot[g as usize];
        *h = Hot {
            weighted: weights.is_some(),
            fresh: FRESH_SOLVES,
            lone: f,
            ..Hot::default()
        };
        h.cons.extend(route.iter().copied().chain(private));
        if let Some(w) = weights {
            let shares = w.iter().map(|&weight| Share { weight, count: 1 });
            slot.shares = Some(Box::new(shares.collect()));
        }
        for (k, &c) in h.cons.iter().enumerate() {
            let weight = weights.map_or(1, |w| w[k]);
            let members = &mut cons[c as usize].members;
            slot.pos.push(members.len() as u32);
            members.push(Entry {
                group: g,
                weight,
                back: k as u32,
            });
        }
        let flow = &mut flows[f as usize];
        flow.group = g;
        flow.at = 0;
        flow.own = None;
        flow.alive = true;
        g
    }

    /// Puts flow `f` in group `g` (a move, listed): its weights join the group's on each
    /// constraint it crosses (the group joins a constraint's members where it was not yet one).
    pub(super) fn attach(&mut self, f: FlowId, g: GroupId) {
        self.moves.push((f, g));
        let empty = self.groups[g as usize].flows.is_empty();
        for i in 0..self.flows[f as usize].cons().len() {
            let flow = &self.flows[f as usize];
            let (c, w) = (flow.cons()[i], flow.weight(i));
            // A flow lists each constraint once, so an empty group has none of them yet.
            let found = match empty {
                true => None,
                false => self.hot[g as usize].cons.iter().position(|&x| x == c),
            };
            let k = found.unwrap_or_else(|| self.join(g, c, Share::default()));
            let slot = &mut self.groups[g as usize];
            let share = &mut slot.shares_mut()[k];
            share.weight += w;
            share.count += 1;
            let weight = share.weight;
            self.cons[c as usize].members[slot.pos[k] as usize].weight = weight;
            self.hot[g as usize].weighted |= weight != 1;
        }
        let slot = &mut self.groups[g as usize];
        self.flows[f as usize].at = slot.flows.len() as u32;
        slot.flows.push(f);
        self.flows[f as usize].group = g;
        self.hot[g as usize].lone = lone(&slot.flows);
    }

    /// Group `g` joins constraint `c`'s members with `share`'s weight and count; returns
    /// where `c` is in its `Hot::cons`.
    fn join(&mut self, g: GroupId, c: ConsId, share: Share) -> usize {
        let k = self.hot[g as usize].cons.len();
        let k_cons = &mut self.cons[c as usize];
        let slot = &mut self.groups[g as usize];
        slot.shares_mut().push(share);
        slot.pos.push(k_cons.members.len() as u32);
        k_cons.members.push(Entry {
            group: g,
            weight: share.weight,
            back: k as u32,
        });
        self.hot[g as usize].cons.push(c);
        k
    }

    /// Takes flow `f` out of its group, which keeps other flows: the group's weights drop by
    /// the flow's, and it leaves the members of each constraint no other of its flows crosses.
    pub(super) fn detach(&mut self, f: FlowId) {
        let g = self.flows[f as usize].group;
        debug_assert!(
            self.groups[g as usize].flows.len() > 1,
            "a lone flow's group goes"
        );
        for i in 0..self.flows[f as usize].cons().len() {
            let flow = &self.flows[f as usize];
            let (c, w) = (flow.cons()[i], flow.weight(i));
            let k = self.hot[g as usize]
                .cons
                .iter()
                .position(|&x| x == c)
                .expect("a group crosses its flows' constraints");
            let slot = &mut self.groups[g as usize];
            let share = &mut slot.shares_mut()[k];
            share.weight -= w;
            share.count -= 1;
            let share = *share;
            if share.count > 0 {
                self.cons[c as usize].members[slot.pos[k] as usize].weight = share.weight;
            } else {
                self.leave(g, k);
            }
        }
        let slot = &self.groups[g as usize];
        self.hot[g as usize].weighted = slot.any_weighted();
        let at = self.flows[f as usize].at as usize;
        let slot = &mut self.groups[g as usize];
        slot.flows.swap_remove(at);
        if let Some(&moved) = slot.flows.get(at) {
            self.flows[moved as usize].at = at as u32;
        }
        self.hot[g as usize].lone = lone(&slot.flows);
        self.flows[f as usize].group = NONE;
    }

    /// Group `g` leaves the members of its `k`-th constraint.
    fn leave(&mut self, g: GroupId, k: usize) {
        let c = self.hot[g as usize].cons.swap_remove(k);
        let slot = &mut self.groups[g as usize];
        let p = slot.pos.swap_remove(k);
        if let Some(shares) = &mut slot.shares {
            shares.swap_remove(k);
        }
        if let Some(&q) = slot.pos.get(k) {
            // The group's last constraint moved to `k`: its entry there says so.
            let moved = self.hot[g as usize].cons[k];
            self.cons[moved as usize].members[q as usize].back = k as u32;
        }
        self.remove_entry(c, p);
    }

    /// Removes the entry at `p` from constraint `c`'s members, telling the entry moved there.
    #[inline]
    pub(super) fn remove_entry(&mut self, c: ConsId, p: u32) {
        let k_cons = &mut self.cons[c as usize];
        k_cons.members.swap_remove(p as usize);
        if let Some(moved) = k_cons.members.get(p as usize) {
            self.groups[moved.group as usize].pos[moved.back as usize] = p;
        }
    }

    /// If only some of group `g`'s flows cross constraint `c`, they part from the others as a
    /// group of their own (returned), with the same rate, bottleneck and per-solve state. An
    /// untouched group's list entries on scanned constraints are cut to what stays with it.
    pub(super) fn part_on(&mut self, g: GroupId, c: ConsId) -> Option<GroupId> {
        let slot = &self.groups[g as usize];
        if slot.flows.len() < 2 {
            return None;
        }
        let k = self.hot[g as usize]
            .cons
            .iter()
            .position(|&x| x == c)
            .expect("a group crosses the constraints it is listed on");
        let count = slot.shares.as_ref().map_or(1, |s| s[k].count);
        if count as usize == slot.flows.len() {
            return None;
        }
        let crossing: SmallVec<[FlowId; 8]> = slot
            .flows
            .iter()
            .copied()
            .filter(|&f| self.flows[f as usize].crosses(c))
            .collect();
        let part = self.new_group(self.hot[g as usize].clone());
        for &f in &crossing {
            self.detach(f);
            self.attach(f, part);
        }
        if self.hot[g as usize].epoch == self.epoch {
            self.touched.push(part);
            if self.hot[g as usize].scratch() == Scratch::Growing {
                self.growing += 1;
            }
        } else {
            self.unlist_part(g, part);
        }
        Some(part)
    }

    /// Untouched group `g` just lost `part` (still untouched too): the entries that list `g`
    /// on scanned constraints drop the part's weight, which the part's own change will count.
    fn unlist_part(&mut self, g: GroupId, part: GroupId) {
        for (k, &x) in self.hot[part as usize].cons.iter().enumerate() {
            let t = self.state[x as usize].track;
            if t.epoch != self.epoch || t.lazy || t.filled {
                continue;
            }
            let range = t.start as usize..(t.start + t.len) as usize;
            let listed = self.arena[range].iter_mut().find(|m| m.flow == g);
            let listed = listed.expect("an untouched group above the level is listed");
            listed.weight -= self.groups[part as usize].weight(k);
        }
    }

    /// Merges the touched groups that froze on one bottleneck at one rate (to the bit).
    pub(super) fn merge_groups(&mut self) {
        if self.first.len() < self.cons.len() {
            self.first.resize(self.cons.len(), NONE);
        }
        for i in 0..self.merging.len() {
            let g = self.merging[i];
            let h = &self.hot[g as usize];
            let (b, bits) = (h.bottleneck, h.rate.to_bits());
            match self.first[b as usize] {
                NONE => self.first[b as usize] = g,
                o if self.hot[o as usize].rate.to_bits() == bits => {
                    let (small, big) = match self.groups[o as usize].flows.len()
                        < self.groups[g as usize].flows.len()
                    {
                        true => (o, g),
                        false => (g, o),
                    };
                    self.absorb(small, big);
                    self.first[b as usize] = big;
                }
                // A group that kept its old rate, within the tolerance of the level.
                _ => {}
            }
        }
        for i in 0..self.merging.len() {
            let b = self.hot[self.merging[i] as usize].bottleneck;
            if b != NONE {
                self.first[b as usize] = NONE;
            }
        }
        self.merging.clear();
    }

    /// A flow alone in group `g` that lent it its route takes a copy back (before the group
    /// takes in other flows' constraints).
    fn take_back_route(&mut self, g: GroupId) {
        let f = self.groups[g as usize].flows[0];
        if self.flows[f as usize].own.is_none() {
            let h = &self.hot[g as usize];
            let slot = &self.groups[g as usize];
            let weights = h
                .weighted
                .then(|| (0..h.cons.len()).map(|k| slot.weight(k)).collect());
            self.flows[f as usize].mask = h.cons.iter().fold(0, |m, &c| m | route_bit(c));
            self.flows[f as usize].own = Some(Box::new(OwnRoute {
                cons: h.cons.clone(),
                weights,
            }));
        }
    }

    /// Moves every flow of group `a` into group `b` (same rate and bottleneck), and frees `a`.
    fn absorb(&mut self, a: GroupId, b: GroupId) {
        self.take_back_route(b);
        if self.index.len() < self.cons.len() {
            self.index.resize(self.cons.len(), 0);
        }
        for (j, &x) in self.hot[b as usize].cons.iter().enumerate() {
            self.index[x as usize] = j as u32 + 1;
        }
        self.take_back_route(a);
        let a_cons = std::mem::take(&mut self.hot[a as usize].cons);
        let a_slot = std::mem::take(&mut self.groups[a as usize]);
        self.groups[b as usize].shares_mut();
        for (k, (&x, &p)) in a_cons.iter().zip(&a_slot.pos).enumerate() {
            let share = a_slot.shares.as_ref().map_or(Share::ONE, |s| s[k]);
            let slot = &mut self.groups[b as usize];
            let shares = slot.shares.as_mut().expect("written out above");
            match self.index[x as usize] {
                0 => {
                    // `b` takes over `a`'s entry.
                    let j = self.hot[b as usize].cons.len();
                    let entry = &mut self.cons[x as usize].members[p as usize];
                    entry.group = b;
                    entry.back = j as u32;
                    self.hot[b as usize].cons.push(x);
                    slot.pos.push(p);
                    shares.push(share);
                }
                j => {
                    let mine = &mut shares[j as usize - 1];
                    mine.weight += share.weight;
                    mine.count += share.count;
                    let (weight, q) = (mine.weight, slot.pos[j as usize - 1]);
                    self.cons[x as usize].members[q as usize].weight = weight;
                    self.remove_entry(x, p);
                }
            }
        }
        for &x in &self.hot[b as usize].cons {
            self.index[x as usize] = 0;
        }
        let slot = &mut self.groups[b as usize];
        for &f in &a_slot.flows {
            self.moves.push((f, b));
            self.flows[f as usize].group = b;
            self.flows[f as usize].at = slot.flows.len() as u32;
            slot.flows.push(f);
        }
        self.hot[b as usize].weighted = slot.any_weighted();
        self.hot[b as usize].lone = lone(&slot.flows);
        self.hot[a as usize] = Hot::default();
        self.free_groups.push(a);
    }
}

/// A group's flow if it has exactly one.
fn lone(flows: &[FlowId]) -> FlowId {
    match flows {
        &[f] => f,
        _ => NONE,
    }
}
