//! `intervals.csv`: every state interval, one row each, for pandas and spreadsheets.

use hetsim_engine::record::{Interval, Recorder};

pub const HEADER: &str = "resource,group,kind,state,label,start_s,end_s,duration_s";

/// The intervals sorted by start, then by resource display order.
pub fn sorted(rec: &Recorder) -> Vec<Interval> {
    let order = crate::order::resources_in_order(rec);
    let mut rank = vec![0u32; order.len()];
    for (i, id) in order.iter().enumerate() {
        rank[id.index()] = i as u32;
    }
    let mut v = rec.intervals().to_vec();
    v.sort_by_key(|iv| (iv.start, rank[iv.resource.index()], iv.end));
    v
}

/// The CSV text.
pub fn csv(rec: &Recorder) -> std::io::Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(HEADER.split(','))?;
    for iv in sorted(rec) {
        let info = rec.resource_info(iv.resource);
        let (start, end) = (iv.start.as_secs_f64(), iv.end.as_secs_f64());
        w.write_record([
            info.name.as_str(),
            info.group.as_str(),
            info.kind.as_str(),
            rec.name(iv.state),
            iv.label.map_or("", |l| rec.name(l)),
            &start.to_string(),
            &end.to_string(),
            &(iv.end.saturating_sub(iv.start).as_secs_f64()).to_string(),
        ])?;
    }
    w.into_inner()
        .map_err(|e| std::io::Error::other(e.to_string()))
}
