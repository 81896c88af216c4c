//! StarPU's data and task footprints (`src/datawizard/footprint.c`, `src/common/hash.c`): the
//! keys of history performance models. A CRC with polynomial 0x1EDC6F41 over the 4
//! little-endian bytes of each value, chained: a matrix handle hashes nx seeded with ny, then
//! its interface id (0) seeded with that; a task hashes its buffers' hashes in order from 0.
//! Checked against StarPU's own files: 320 x 320 float tiles give POTRF `cea37d6d`, TRSM
//! `2c1922b7`, GEMM `d46431bb` (reference notes, section 3.2).

/// One byte into the CRC.
fn crc8(byte: u8, mut c: u32) -> u32 {
    c ^= (byte as u32) << 24;
    for _ in 0..8 {
        c = if c & 0x8000_0000 != 0 {
            (c << 1) ^ 0x1EDC_6F41
        } else {
            c << 1
        };
    }
    c
}

/// StarPU's `starpu_hash_crc32c_be(x, init)`: the 4 bytes of `x`, little-endian.
pub fn hash32(x: u32, init: u32) -> u32 {
    x.to_le_bytes().iter().fold(init, |c, &b| crc8(b, c))
}

/// Interface ids StarPU hashes in (`STARPU_MATRIX_INTERFACE_ID` = 0, vector 2, variable 5).
const MATRIX: u32 = 0;
const VECTOR: u32 = 2;

/// The footprint of a matrix handle of `nx` x `ny` elements.
pub fn matrix(nx: u32, ny: u32) -> u32 {
    hash32(hash32(nx, ny), MATRIX)
}

/// The footprint of a vector handle of `nx` elements.
pub fn vector(nx: u32) -> u32 {
    hash32(hash32(nx, 0), VECTOR)
}

/// A task's footprint from its buffers' footprints, in task order.
pub fn task(buffers: impl IntoIterator<Item = u32>) -> u32 {
    buffers.into_iter().fold(0, |fp, h| hash32(h, fp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footprints_match_starpus_files() {
        // Reference notes 3.2 (checked there against generated sample files).
        let t = matrix(320, 320);
        assert_eq!(task([t]), 0xcea3_7d6d);
        assert_eq!(task([t, t]), 0x2c19_22b7);
        assert_eq!(task([t, t, t]), 0xd464_31bb);
        assert_eq!(task([vector(4096)]), 0x48e9_88e9);
        // attila's chol_model_potrf / gemm hold 960 x 960 tiles under these keys.
        let t = matrix(960, 960);
        assert_eq!(task([t]), 0x617e_5fe6);
        assert_eq!(task([t, t, t]), 0x24c8_4a50);
    }
}
