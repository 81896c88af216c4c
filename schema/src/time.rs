//! Simulated time: an integer count of femtoseconds.
//!
//! Integers give exact ordering and no drift when many small delays are added. The tick is a
//! femtosecond rather than the picosecond of the first design: completion times of microsecond
//! flows are checked against SimGrid to a relative error of 1e-9, and a picosecond tick alone
//! would already be 1e-7 of a 4 us completion. Times are `u128` femtoseconds up to 2^80 fs,
//! 38 years (a `u64` would end at 5.1 hours, short of an HPC run or a week of training steps);
//! the calendar packs a time and a sequence number into one `u128` key. Conversions from
//! seconds ([`SimTime::try_from_secs`]) and [`SimTime::checked_add`] report overflow; computed
//! times saturate at [`SimTime::MAX`], which the run loop reports as out of range.

use std::fmt;

/// Femtoseconds per second.
pub const FS_PER_SEC: u128 = 1_000_000_000_000_000;

/// A point in simulated time (or a duration), in femtoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct SimTime(pub u128);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    /// The latest representable time: 2^80 - 1 fs, 1.2e9 s (38 years).
    pub const MAX: SimTime = SimTime((1 << 80) - 1);

    /// Bits below the time in an ordering key ([`SimTime::key`]): tie-breakers below 2^48.
    pub const TIE_BITS: u32 = 48;

    /// `(self, tie)` packed into one integer that orders as the pair does, so that a heap
    /// compares once per child: the time, clamped at [`SimTime::MAX`] (which the run loop
    /// reports as out of range), in the high 80 bits, above the tie-breaker.
    pub fn key(self, tie: u64) -> u128 {
        debug_assert!(tie < 1 << Self::TIE_BITS, "tie-breaker past 2^48");
        (self.min(SimTime::MAX).0 << Self::TIE_BITS) | tie as u128
    }

    /// The time of a [`SimTime::key`].
    pub fn of_key(key: u128) -> SimTime {
        SimTime(key >> Self::TIE_BITS)
    }

    pub const fn from_femtos(fs: u128) -> Self {
        SimTime(fs)
    }

    pub const fn from_nanos(ns: u64) -> Self {
        SimTime(ns as u128 * 1_000_000)
    }

    /// Converts seconds to the nearest femtosecond; rejects negative, non-finite and too large values.
    pub fn try_from_secs(secs: f64) -> Result<Self, String> {
        if !secs.is_finite() || secs < 0.0 {
            return Err(format!(
                "expected a finite, non-negative time, got {secs} s"
            ));
        }
        let fs = (secs * FS_PER_SEC as f64).round();
        if fs >= SimTime::MAX.0 as f64 {
            return Err(format!(
                "{secs} s is beyond the simulated-time range of {:.0} s",
                SimTime::MAX.as_secs_f64()
            ));
        }
        Ok(SimTime::from_whole_femtos(fs))
    }

    /// Seconds to the nearest femtosecond, saturating at the range (for computed times).
    pub fn from_secs_saturating(secs: f64) -> Self {
        if secs.is_nan() || secs <= 0.0 {
            return SimTime::ZERO;
        }
        let fs = (secs * FS_PER_SEC as f64).round();
        if fs >= SimTime::MAX.0 as f64 {
            SimTime::MAX
        } else {
            SimTime::from_whole_femtos(fs)
        }
    }

    pub fn as_secs_f64(self) -> f64 {
        // Split so that times beyond 2^53 fs (9 s) keep their femtoseconds exactly. Times
        // below 2^64 fs (5.1 hours, nearly every run) take the 64-bit path: 128-bit division
        // and conversion are library calls.
        if let Ok(fs) = u64::try_from(self.0) {
            const FS: u64 = FS_PER_SEC as u64;
            return (fs / FS) as f64 + (fs % FS) as f64 / FS as f64;
        }
        (self.0 / FS_PER_SEC) as f64 + (self.0 % FS_PER_SEC) as f64 / FS_PER_SEC as f64
    }

    /// A whole, in-range count of femtoseconds as f64 (64-bit conversion when it fits).
    fn from_whole_femtos(fs: f64) -> Self {
        if fs < u64::MAX as f64 {
            SimTime(fs as u64 as u128)
        } else {
            SimTime(fs as u128)
        }
    }

    pub fn checked_add(self, other: SimTime) -> Option<SimTime> {
        self.0
            .checked_add(other.0)
            .filter(|&t| t <= SimTime::MAX.0)
            .map(SimTime)
    }

    pub fn saturating_add(self, other: SimTime) -> SimTime {
        SimTime(self.0.saturating_add(other.0).min(SimTime::MAX.0))
    }

    pub fn saturating_sub(self, other: SimTime) -> SimTime {
        SimTime(self.0.saturating_sub(other.0))
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.9} s", self.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys order by time, then tie-breaker; a time past `MAX` (out of range) keys as `MAX`
    /// instead of wrapping below earlier ones.
    #[test]
    fn keys_order_by_time_then_tie() {
        let key = |fs: u128, tie| SimTime(fs).key(tie);
        let last_tie = (1 << SimTime::TIE_BITS) - 1;
        assert!(key(1, last_tie) < key(2, 0));
        assert!(key(7, 0) < key(7, 1));
        assert!(key(SimTime::MAX.0 - 1, last_tie) < key(SimTime::MAX.0, 0));
        assert_eq!(key(SimTime::MAX.0 + 5, 3), key(SimTime::MAX.0, 3));
        assert!(key(u128::MAX, 0) > key(1 << 79, last_tie));
        assert_eq!(SimTime::of_key(key(12_345, 67)), SimTime(12_345));
    }

    #[test]
    fn round_trips_microseconds_exactly() {
        let t = SimTime::try_from_secs(3.277e-6).unwrap();
        assert_eq!(t, SimTime::from_nanos(3277));
        assert_eq!(t.as_secs_f64(), 3.277e-6);
    }

    #[test]
    fn rejects_bad_seconds() {
        assert!(SimTime::try_from_secs(-1.0).is_err());
        assert!(SimTime::try_from_secs(f64::NAN).is_err());
        assert!(SimTime::try_from_secs(1.3e9).is_err());
        assert!(SimTime::try_from_secs(f64::INFINITY).is_err());
        // Hours, a week, a year: ordinary runs.
        assert!(SimTime::try_from_secs(18_500.0).is_ok());
        assert!(SimTime::try_from_secs(365.25 * 86_400.0).is_ok());
    }

    #[test]
    fn large_times_keep_femtoseconds() {
        let t = SimTime(3_600 * FS_PER_SEC + 7);
        assert_eq!(t.as_secs_f64(), 3600.0 + 7e-15);
    }

    #[test]
    fn a_year_of_femtoseconds_adds_exactly() {
        // Past the old u64 ceiling (18,446.744 s), a femtosecond still counts.
        let year = SimTime::try_from_secs(365.0 * 86_400.0).unwrap();
        let later = year.checked_add(SimTime::from_femtos(1)).unwrap();
        assert_eq!(later.0 - year.0, 1);
        assert_eq!(year.as_secs_f64(), 31_536_000.0);
        assert!(SimTime::MAX.checked_add(SimTime::from_femtos(1)).is_none());
    }
}
