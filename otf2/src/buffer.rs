//! Decoding of OTF2's elementary encodings from a byte slice: fixed-width little-endian
//! integers, OTF2's compressed integers (a size byte, then that many little-endian bytes;
//! size 0 is the value 0 and 0xff the type's maximum, OTF2's UNDEFINED), NUL-terminated
//! strings and record lengths (one byte, or 0xff and then a full 64-bit length).

/// Why a decode failed, without the file: the caller adds where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// Offset of the failure within the slice being decoded.
    pub at: usize,
    pub what: String,
}

pub type Decoded<T> = Result<T, Fault>;

/// A read position in a byte slice.
#[derive(Debug, Clone)]
pub struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Cursor { bytes, pos: 0 }
    }

    pub fn at(bytes: &'a [u8], pos: usize) -> Self {
        Cursor { bytes, pos }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn set_pos(&mut self, pos: usize) -> Decoded<()> {
        if pos > self.bytes.len() {
            return Err(self.fault(format!(
                "a record reaches past the end of the data (to byte {pos} of {})",
                self.bytes.len()
            )));
        }
        self.pos = pos;
        Ok(())
    }

    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub fn fault(&self, what: impl Into<String>) -> Fault {
        Fault {
            at: self.pos,
            what: what.into(),
        }
    }

    fn take(&mut self, n: usize, what: &str) -> Decoded<&'a [u8]> {
        if self.remaining() < n {
            return Err(self.fault(format!(
                "the data ends inside {what} ({n} bytes needed, {} left)",
                self.remaining()
            )));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub fn u8(&mut self, what: &str) -> Decoded<u8> {
        Ok(self.take(1, what)?[0])
    }

    pub fn u32_full(&mut self, what: &str) -> Decoded<u32> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")))
    }

    pub fn u64_full(&mut self, what: &str) -> Decoded<u64> {
        let b = self.take(8, what)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    pub fn f64(&mut self, what: &str) -> Decoded<f64> {
        Ok(f64::from_bits(self.u64_full(what)?))
    }

    pub fn f32(&mut self, what: &str) -> Decoded<f32> {
        Ok(f32::from_bits(self.u32_full(what)?))
    }

    /// A compressed integer of at most `width` bytes; `max` is what the size byte 0xff means.
    fn compressed(&mut self, width: u8, max: u64, what: &str) -> Decoded<u64> {
        let start = self.pos;
        let n = self.u8(what)?;
        match n {
            0 => Ok(0),
            0xff => Ok(max),
            n if n <= width => {
                let b = self.take(n as usize, what)?;
                let mut v = [0u8; 8];
                v[..b.len()].copy_from_slice(b);
                Ok(u64::from_le_bytes(v))
            }
            n => Err(Fault {
                at: start,
                what: format!("{what}: compressed size {n} is not 0..={width} or 0xff"),
            }),
        }
    }

    pub fn u32c(&mut self, what: &str) -> Decoded<u32> {
        Ok(self.compressed(4, u32::MAX as u64, what)? as u32)
    }

    pub fn u64c(&mut self, what: &str) -> Decoded<u64> {
        self.compressed(8, u64::MAX, what)
    }

    /// A compressed signed integer: negative values are written at full width.
    pub fn i64c(&mut self, what: &str) -> Decoded<i64> {
        Ok(self.compressed(8, u64::MAX, what)? as i64)
    }

    pub fn i32c(&mut self, what: &str) -> Decoded<i32> {
        Ok(self.compressed(4, u32::MAX as u64, what)? as u32 as i32)
    }

    /// A NUL-terminated UTF-8 string (invalid bytes replaced).
    pub fn string(&mut self, what: &str) -> Decoded<String> {
        let rest = &self.bytes[self.pos..];
        let Some(end) = rest.iter().position(|&b| b == 0) else {
            return Err(self.fault(format!("{what}: a string has no terminating NUL")));
        };
        let s = String::from_utf8_lossy(&rest[..end]).into_owned();
        self.pos += end + 1;
        Ok(s)
    }

    /// A record's length: returns the offset where the record ends.
    pub fn record_end(&mut self, what: &str) -> Decoded<usize> {
        let n = self.u8(what)?;
        let len = if n == 0xff {
            self.u64_full(what)?
        } else {
            n as u64
        };
        let end = (self.pos as u64).saturating_add(len);
        if end > self.bytes.len() as u64 {
            return Err(self.fault(format!(
                "{what}: the record is {len} bytes long but only {} are left",
                self.remaining()
            )));
        }
        Ok(end as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_integers_follow_otf2s_size_byte() {
        // 0, UNDEFINED, 33 in one byte, 0x4e0 in two (from a Score-P event file).
        let bytes = [0x00, 0xff, 0x01, 0x21, 0x02, 0xe0, 0x04];
        let mut c = Cursor::new(&bytes);
        assert_eq!(c.u32c("a").unwrap(), 0);
        assert_eq!(c.u32c("b").unwrap(), u32::MAX);
        assert_eq!(c.u32c("c").unwrap(), 33);
        assert_eq!(c.u64c("d").unwrap(), 0x4e0);
        assert_eq!(c.remaining(), 0);
    }

    #[test]
    fn a_size_byte_too_wide_for_the_type_is_a_fault_at_its_offset() {
        let bytes = [0x00, 0x05, 1, 2, 3, 4, 5];
        let mut c = Cursor::new(&bytes);
        c.u32c("x").unwrap();
        let f = c.u32c("receiver").unwrap_err();
        assert_eq!(f.at, 1);
        assert!(f.what.contains("receiver"), "{}", f.what);
    }

    #[test]
    fn negative_signed_values_are_full_width() {
        let mut bytes = vec![8];
        bytes.extend_from_slice(&(-5i64).to_le_bytes());
        assert_eq!(Cursor::new(&bytes).i64c("o").unwrap(), -5);
    }

    #[test]
    fn record_lengths_are_a_byte_or_a_marker_and_eight_bytes() {
        let mut bytes = vec![3, 0, 0, 0, 0xff];
        bytes.extend_from_slice(&2u64.to_le_bytes());
        bytes.extend_from_slice(&[7, 7]);
        let mut c = Cursor::new(&bytes);
        assert_eq!(c.record_end("r").unwrap(), 4);
        c.set_pos(4).unwrap();
        assert_eq!(c.record_end("r").unwrap(), 15);
        let short = [9u8, 0];
        assert!(Cursor::new(&short).record_end("r").is_err());
    }

    #[test]
    fn strings_end_at_nul_and_a_missing_nul_is_a_fault() {
        let mut c = Cursor::new(b"MPI_Send\0x");
        assert_eq!(c.string("s").unwrap(), "MPI_Send");
        assert!(c.string("s").is_err());
    }
}
