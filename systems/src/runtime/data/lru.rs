//! One memory node's eviction order: StarPU's `mc_list`, a doubly linked list of buffers, least
//! recently used first. Entries are ordered by `(last use, handle)`: a buffer used now goes to
//! the back in O(1) (buffers used at one tick sort by handle among themselves, a short walk
//! from the back), and leaving the list is O(1), where an ordered set paid two tree searches
//! for every use.

/// No neighbour.
const NONE: u32 = u32::MAX;

/// The buffers of one node in eviction order, keyed `(last use, handle)`.
#[derive(Debug, Clone)]
pub struct Lru {
    head: u32,
    tail: u32,
    len: usize,
    /// Per handle: previous and next in the list, its key, and whether it is listed.
    prev: Vec<u32>,
    next: Vec<u32>,
    key: Vec<u64>,
    listed: Vec<bool>,
}

impl Lru {
    /// An empty list for handles `0..handles`.
    pub fn new(handles: usize) -> Lru {
        Lru {
            head: NONE,
            tail: NONE,
            len: 0,
            prev: vec![NONE; handles],
            next: vec![NONE; handles],
            key: vec![0; handles],
            listed: vec![false; handles],
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether handle `h` is listed with key `key`.
    pub fn contains(&self, (key, h): (u64, u32)) -> bool {
        self.listed[h as usize] && self.key[h as usize] == key
    }

    fn entry(&self, h: u32) -> (u64, u32) {
        (self.key[h as usize], h)
    }

    /// Lists `h` with `key` in its place; false if `h` is already listed.
    pub fn insert(&mut self, (key, h): (u64, u32)) -> bool {
        let i = h as usize;
        if self.listed[i] {
            return false;
        }
        self.key[i] = key;
        self.listed[i] = true;
        self.len += 1;
        let new = (key, h);
        // The entry it goes after: walk from the back (a use now), or, for a key older than
        // the front's (a `wont_use` hint's key 0), from the front.
        let after = if self.head != NONE && new < self.entry(self.head) {
            NONE
        } else {
            let mut at = self.tail;
            while at != NONE && self.entry(at) > new {
                at = self.prev[at as usize];
            }
            at
        };
        let before = if after == NONE {
            self.head
        } else {
            self.next[after as usize]
        };
        self.prev[i] = after;
        self.next[i] = before;
        self.set_next(after, h);
        self.set_prev(before, h);
        true
    }

    /// Takes `h` (listed with `key`) off the list; false if it was not there.
    pub fn remove(&mut self, entry: (u64, u32)) -> bool {
        if !self.contains(entry) {
            return false;
        }
        let i = entry.1 as usize;
        let (p, n) = (self.prev[i], self.next[i]);
        self.set_next(p, n);
        self.set_prev(n, p);
        self.prev[i] = NONE;
        self.next[i] = NONE;
        self.listed[i] = false;
        self.len -= 1;
        true
    }

    /// `at`'s successor becomes `h`; with `at` NONE, the head does.
    fn set_next(&mut self, at: u32, h: u32) {
        if at == NONE {
            self.head = h;
        } else {
            self.next[at as usize] = h;
        }
    }

    /// `at`'s predecessor becomes `h`; with `at` NONE, the tail does.
    fn set_prev(&mut self, at: u32, h: u32) {
        if at == NONE {
            self.tail = h;
        } else {
            self.prev[at as usize] = h;
        }
    }

    /// The entry after `entry` (listed), if any.
    pub fn after(&self, entry: (u64, u32)) -> Option<(u64, u32)> {
        debug_assert!(self.contains(entry));
        let n = self.next[entry.1 as usize];
        (n != NONE).then(|| self.entry(n))
    }

    /// The entries in eviction order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            lru: self,
            at: self.head,
        }
    }

    /// The entries from `entry` (listed) on, in eviction order.
    pub fn from(&self, entry: (u64, u32)) -> Iter<'_> {
        debug_assert!(self.contains(entry));
        Iter {
            lru: self,
            at: entry.1,
        }
    }
}

pub struct Iter<'a> {
    lru: &'a Lru,
    at: u32,
}

impl Iterator for Iter<'_> {
    type Item = (u64, u32);

    fn next(&mut self) -> Option<(u64, u32)> {
        if self.at == NONE {
            return None;
        }
        let e = self.lru.entry(self.at);
        self.at = self.lru.next[self.at as usize];
        Some(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn listed(l: &Lru) -> Vec<(u64, u32)> {
        l.iter().collect()
    }

    #[test]
    fn a_use_goes_to_the_back_and_ties_sort_by_handle() {
        let mut l = Lru::new(8);
        assert!(l.insert((1, 5)));
        assert!(l.insert((2, 3)));
        assert!(l.insert((2, 1)));
        assert!(!l.insert((3, 1)), "already listed");
        assert_eq!(listed(&l), vec![(1, 5), (2, 1), (2, 3)]);
        assert!(l.remove((1, 5)));
        assert!(!l.remove((1, 5)));
        assert!(l.insert((3, 5)));
        assert_eq!(listed(&l), vec![(2, 1), (2, 3), (3, 5)]);
        assert_eq!(l.len(), 3);
    }

    #[test]
    fn a_hint_goes_to_the_front() {
        let mut l = Lru::new(8);
        for (k, h) in [(4, 2), (5, 6), (6, 7)] {
            l.insert((k, h));
        }
        l.remove((5, 6));
        l.insert((0, 6));
        l.insert((0, 3));
        assert_eq!(listed(&l), vec![(0, 3), (0, 6), (4, 2), (6, 7)]);
        assert_eq!(l.after((0, 6)), Some((4, 2)));
        assert_eq!(l.after((6, 7)), None);
        assert_eq!(l.from((4, 2)).collect::<Vec<_>>(), vec![(4, 2), (6, 7)]);
    }

    #[test]
    fn it_orders_as_an_ordered_set_would() {
        // Pseudo-random inserts and removes, checked against a BTreeSet after each.
        let mut l = Lru::new(32);
        let mut set = BTreeSet::new();
        let mut x: u64 = 12345;
        for step in 0..2000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let h = (x >> 33) as u32 % 32;
            let listed_as = set.iter().find(|&&(_, g)| g == h).copied();
            match listed_as {
                Some(e) => {
                    assert!(l.remove(e));
                    set.remove(&e);
                }
                None => {
                    let key = if x >> 60 == 0 { 0 } else { step / 3 };
                    assert!(l.insert((key, h)));
                    set.insert((key, h));
                }
            }
            assert_eq!(listed(&l), set.iter().copied().collect::<Vec<_>>());
            assert_eq!(l.len(), set.len());
        }
    }
}
