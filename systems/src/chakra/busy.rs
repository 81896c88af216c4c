//! What a rank's time went to: GPU kernels, CPU operators, communication in flight, and the
//! *exposed* communication (in flight while neither a kernel nor a CPU operator runs: the
//! time a rank waits on communication alone). Sums are kept in femtoseconds, exactly.

use hetsim_schema::SimTime;

#[derive(Debug, Clone, Default)]
pub struct Busy {
    at: SimTime,
    gpu: bool,
    cpu: bool,
    comm: u32,
    comm_since: SimTime,
    pub kernel: SimTime,
    pub cpu_op: SimTime,
    pub comm_time: SimTime,
    pub exposed: SimTime,
}

/// A change of what runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Gpu(bool),
    Cpu(bool),
    /// One more communication in flight (true) or one fewer.
    Comm(bool),
}

impl Busy {
    /// Applies `change` at `now`; returns the start of a period of communication that ended
    /// (for the timeline's communication row).
    pub fn change(&mut self, now: SimTime, change: Change) -> Option<SimTime> {
        self.advance(now);
        match change {
            Change::Gpu(on) => self.gpu = on,
            Change::Cpu(on) => self.cpu = on,
            Change::Comm(true) => {
                if self.comm == 0 {
                    self.comm_since = now;
                }
                self.comm += 1;
            }
            Change::Comm(false) => {
                self.comm -= 1;
                if self.comm == 0 {
                    return Some(self.comm_since);
                }
            }
        }
        None
    }

    fn advance(&mut self, now: SimTime) {
        let dt = now.saturating_sub(self.at);
        let add = |sum: &mut SimTime| *sum = sum.saturating_add(dt);
        if self.gpu {
            add(&mut self.kernel);
        }
        if self.cpu {
            add(&mut self.cpu_op);
        }
        if self.comm > 0 {
            add(&mut self.comm_time);
            if !self.gpu && !self.cpu {
                add(&mut self.exposed);
            }
        }
        self.at = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> SimTime {
        SimTime::from_nanos(n * 1000)
    }

    #[test]
    fn communication_is_exposed_only_while_nothing_computes() {
        let mut b = Busy::default();
        b.change(us(0), Change::Gpu(true));
        b.change(us(2), Change::Comm(true));
        b.change(us(5), Change::Gpu(false)); // 3 us hidden behind the kernel
        b.change(us(6), Change::Cpu(true)); // 1 us exposed
        b.change(us(7), Change::Cpu(false)); // 1 us hidden behind the CPU op
        assert_eq!(b.change(us(10), Change::Comm(false)), Some(us(2))); // 3 us exposed
        assert_eq!(b.kernel, us(5));
        assert_eq!(b.cpu_op, us(1));
        assert_eq!(b.comm_time, us(8));
        assert_eq!(b.exposed, us(4));
    }

    #[test]
    fn overlapping_communications_count_once_and_end_one_period() {
        let mut b = Busy::default();
        b.change(us(1), Change::Comm(true));
        b.change(us(2), Change::Comm(true));
        assert_eq!(b.change(us(3), Change::Comm(false)), None);
        assert_eq!(b.change(us(4), Change::Comm(false)), Some(us(1)));
        assert_eq!(b.comm_time, us(3));
    }
}
