//! MPI message matching for one receiving rank: receives posted before their message arrives,
//! and messages (envelopes) that arrived before their receive, each in order. A receive takes
//! the first message whose source and tag it accepts; a message takes the first posted
//! receive that accepts it (MPI's non-overtaking rule). One communicator.

use std::collections::VecDeque;

use super::program::{ANY, Loc};

/// A receive waiting for its message.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Posted {
    pub src: i64,
    pub tag: i64,
    pub req: u32,
    pub loc: Loc,
}

/// The envelope of a message: who sent it, with what tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope {
    pub msg: u32,
    pub src: u32,
    pub tag: i64,
}

/// One rank's posted receives and unexpected messages.
#[derive(Debug, Clone, Default)]
pub struct Queues {
    posted: Vec<Posted>,
    unexpected: VecDeque<Envelope>,
}

impl Queues {
    /// A receive is posted: the first unexpected message it accepts (taken off the queue),
    /// or none, and the receive waits.
    pub fn post(&mut self, recv: Posted) -> Option<u32> {
        let found = self
            .unexpected
            .iter()
            .position(|e| accepts(recv.src, recv.tag, e.src, e.tag));
        match found {
            Some(i) => self.unexpected.remove(i).map(|e| e.msg),
            None => {
                self.posted.push(recv);
                None
            }
        }
    }

    /// A message's envelope arrives: the first posted receive that accepts it (taken off the
    /// list), or none, and the message waits as unexpected.
    pub fn arrive(&mut self, env: Envelope) -> Option<Posted> {
        match self
            .posted
            .iter()
            .position(|p| accepts(p.src, p.tag, env.src, env.tag))
        {
            Some(i) => Some(self.posted.remove(i)),
            None => {
                self.unexpected.push_back(env);
                None
            }
        }
    }
}

/// Whether a receive for (`want_src`, `want_tag`) takes a message from `src` with `tag`.
/// Any-tag receives never take collective traffic (negative tags).
pub fn accepts(want_src: i64, want_tag: i64, src: u32, tag: i64) -> bool {
    (want_src == ANY || want_src == src as i64)
        && (want_tag == tag || (want_tag == ANY && tag >= 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recv(src: i64, tag: i64, req: u32) -> Posted {
        Posted {
            src,
            tag,
            req,
            loc: Loc::Host,
        }
    }

    fn env(msg: u32, src: u32, tag: i64) -> Envelope {
        Envelope { msg, src, tag }
    }

    #[test]
    fn a_message_takes_the_first_posted_receive_that_accepts_it() {
        let mut q = Queues::default();
        assert_eq!(q.post(recv(2, 7, 0)), None);
        assert_eq!(q.post(recv(ANY, ANY, 1)), None);
        assert_eq!(q.post(recv(1, 5, 2)), None);
        // From 1 with tag 5: receive 0 wants source 2, so the wildcard (1) takes it.
        assert_eq!(q.arrive(env(10, 1, 5)).map(|p| p.req), Some(1));
        // The next one from 1 with tag 5 finds receive 2.
        assert_eq!(q.arrive(env(11, 1, 5)).map(|p| p.req), Some(2));
        assert_eq!(q.arrive(env(12, 2, 7)).map(|p| p.req), Some(0));
        assert_eq!(q.arrive(env(13, 2, 7)), None);
    }

    #[test]
    fn a_receive_takes_the_oldest_unexpected_message_it_accepts() {
        let mut q = Queues::default();
        for (m, src, tag) in [(0, 3, 1), (1, 4, 1), (2, 4, 2), (3, 4, 1)] {
            assert_eq!(q.arrive(env(m, src, tag)), None);
        }
        assert_eq!(q.post(recv(4, 1, 0)), Some(1));
        assert_eq!(q.post(recv(4, 1, 0)), Some(3));
        assert_eq!(q.post(recv(ANY, 2, 0)), Some(2));
        assert_eq!(q.post(recv(4, ANY, 0)), None);
        assert_eq!(q.post(recv(ANY, ANY, 0)), Some(0));
    }

    #[test]
    fn any_tag_never_takes_collective_traffic() {
        assert!(accepts(ANY, ANY, 3, 0));
        assert!(!accepts(ANY, ANY, 3, -4));
        assert!(accepts(ANY, -4, 3, -4));
        assert!(!accepts(2, ANY, 3, 0));
    }
}
