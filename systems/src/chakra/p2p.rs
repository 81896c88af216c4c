//! Point-to-point messages between ranks, as ASTRA-sim's workload layer runs Chakra's
//! COMM_SEND/COMM_RECV nodes: a send's bytes leave when the send issues (it does not wait for
//! the receive: the ring traces send before they receive), the send completes when its last
//! byte has arrived, and a receive completes when the message from its source with its tag
//! has arrived, in send order per (source, destination, tag). A receive smaller than its
//! message is an error (MPI's truncation); a larger one completes with the message.

use std::collections::{HashMap, VecDeque};

/// (source, destination, tag).
pub type Key = (u32, u32, i64);

#[derive(Debug, Clone, Copy, PartialEq)]
enum Pending {
    Arrived { bytes: f64 },
    Posted { node: u32, bytes: f64 },
}

/// Messages that arrived before their receive, and receives posted before their message.
#[derive(Debug, Default)]
pub struct Mail {
    queues: HashMap<Key, VecDeque<Pending>>,
}

fn fits(key: Key, message: f64, receive: f64) -> Result<(), String> {
    if receive < message {
        return Err(format!(
            "rank {} receives {receive} B from rank {} (tag {}) but the message is {message} B",
            key.1, key.0, key.2
        ));
    }
    Ok(())
}

impl Mail {
    /// A message has arrived: Some(node) is the receive it completes.
    pub fn arrive(&mut self, key: Key, bytes: f64) -> Result<Option<u32>, String> {
        let q = self.queues.entry(key).or_default();
        match q.front() {
            Some(&Pending::Posted { node, bytes: room }) => {
                fits(key, bytes, room)?;
                q.pop_front();
                Ok(Some(node))
            }
            _ => {
                q.push_back(Pending::Arrived { bytes });
                Ok(None)
            }
        }
    }

    /// A receive is posted: true when its message is already there (it completes now).
    pub fn post(&mut self, key: Key, node: u32, bytes: f64) -> Result<bool, String> {
        let q = self.queues.entry(key).or_default();
        match q.front() {
            Some(&Pending::Arrived { bytes: size }) => {
                fits(key, size, bytes)?;
                q.pop_front();
                Ok(true)
            }
            _ => {
                q.push_back(Pending::Posted { node, bytes });
                Ok(false)
            }
        }
    }

    /// Receives still waiting, as (destination, source, tag), sorted.
    pub fn waiting(&self) -> Vec<Key> {
        let mut keys: Vec<Key> = self
            .queues
            .iter()
            .filter(|(_, q)| matches!(q.front(), Some(Pending::Posted { .. })))
            .map(|(&(s, d, t), _)| (d, s, t))
            .collect();
        keys.sort_unstable();
        keys
    }
}

/// A message on its way: who sent it (rank, node), to whom, its bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Message {
    pub key: Key,
    pub node: u32,
    pub bytes: f64,
}

/// Messages in flight in reusable slots (the slot is the flow's event argument).
#[derive(Debug, Default)]
pub struct InFlight {
    slots: Vec<Option<Message>>,
    free: Vec<u32>,
}

impl InFlight {
    pub fn start(&mut self, m: Message) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Some(m);
                i
            }
            None => {
                self.slots.push(Some(m));
                self.slots.len() as u32 - 1
            }
        }
    }

    pub fn end(&mut self, slot: u32) -> Message {
        self.free.push(slot);
        self.slots[slot as usize]
            .take()
            .expect("a message ends once")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_waits_for_its_receive_and_a_receive_for_its_message() {
        let mut m = Mail::default();
        assert_eq!(m.arrive((0, 1, 0), 64.0), Ok(None));
        assert_eq!(m.post((0, 1, 0), 7, 64.0), Ok(true));
        assert_eq!(m.post((0, 1, 0), 8, 64.0), Ok(false));
        assert_eq!(m.waiting(), vec![(1, 0, 0)]);
        assert_eq!(m.arrive((0, 1, 0), 32.0), Ok(Some(8)));
        assert!(m.waiting().is_empty());
    }

    #[test]
    fn tags_and_sources_keep_messages_apart_and_order_holds_per_key() {
        let mut m = Mail::default();
        m.post((0, 1, 5), 1, 8.0).unwrap();
        m.post((0, 1, 5), 2, 8.0).unwrap();
        assert_eq!(m.arrive((0, 1, 6), 8.0), Ok(None));
        assert_eq!(m.arrive((2, 1, 5), 8.0), Ok(None));
        assert_eq!(m.arrive((0, 1, 5), 8.0), Ok(Some(1)));
        assert_eq!(m.arrive((0, 1, 5), 8.0), Ok(Some(2)));
    }

    #[test]
    fn a_receive_smaller_than_its_message_is_an_error() {
        let mut m = Mail::default();
        m.arrive((3, 4, 0), 128.0).unwrap();
        let e = m.post((3, 4, 0), 0, 64.0).unwrap_err();
        assert!(e.contains("rank 4 receives 64 B from rank 3"), "{e}");
    }

    #[test]
    fn slots_are_reused() {
        let mut f = InFlight::default();
        let m = Message {
            key: (0, 1, 0),
            node: 3,
            bytes: 1.0,
        };
        let a = f.start(m);
        assert_eq!(f.end(a), m);
        assert_eq!(f.start(m), a);
    }
}
