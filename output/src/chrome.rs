//! `trace.json` in the Chrome trace-event format (Perfetto, chrome://tracing).
//!
//! One process per group (a node, or the network), one thread per resource. A state interval is
//! a complete event (`ph: X`, name = its state, `args.label`); a transfer is an async pair
//! (`ph: b` / `e`) on its source's thread with the destination and bytes in `args`; a counter
//! sample is a counter event (`ph: C`) named after its resource and series. Timestamps are in
//! microseconds, as the format asks.

use std::io::Write;

use hetsim_engine::record::Recorder;
use hetsim_schema::SimTime;

fn us(t: SimTime) -> f64 {
    t.0 as f64 / 1e9
}

fn json_str(out: &mut Vec<u8>, s: &str) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, s).map_err(std::io::Error::other)
}

/// The whole trace file.
pub fn trace_json(rec: &Recorder, scenario: &str) -> std::io::Result<Vec<u8>> {
    let groups = crate::order::groups_in_order(rec);
    // pid per group, tid per resource (both from 1; 0 reads as "unknown" in some viewers).
    let mut place = vec![(0usize, 0usize); rec.resources().len()];
    let mut out = Vec::with_capacity(256 + 120 * rec.intervals().len());
    out.extend_from_slice(b"{\"displayTimeUnit\":\"ns\",\"otherData\":{\"scenario\":");
    json_str(&mut out, scenario)?;
    out.extend_from_slice(b"},\"traceEvents\":[\n");
    let mut first = true;
    let mut sep = |out: &mut Vec<u8>| {
        if !first {
            out.extend_from_slice(b",\n");
        }
        first = false;
    };
    for (g, (group, members)) in groups.iter().enumerate() {
        let pid = g + 1;
        sep(&mut out);
        write!(
            out,
            "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{pid},\"tid\":0,\"args\":{{\"name\":"
        )?;
        json_str(&mut out, group)?;
        out.extend_from_slice(b"}}");
        sep(&mut out);
        write!(
            out,
            "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{pid},\"tid\":0,\"args\":{{\"sort_index\":{pid}}}}}"
        )?;
        for (t, id) in members.iter().enumerate() {
            let tid = t + 1;
            place[id.index()] = (pid, tid);
            sep(&mut out);
            write!(
                out,
                "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":"
            )?;
            json_str(&mut out, &rec.resource_info(*id).name)?;
            out.extend_from_slice(b"}}");
            sep(&mut out);
            write!(
                out,
                "{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"sort_index\":{tid}}}}}"
            )?;
        }
    }
    for iv in crate::intervals::sorted(rec) {
        let (pid, tid) = place[iv.resource.index()];
        sep(&mut out);
        out.extend_from_slice(b"{\"ph\":\"X\",\"cat\":\"state\",\"name\":");
        json_str(&mut out, rec.name(iv.state))?;
        write!(
            out,
            ",\"pid\":{pid},\"tid\":{tid},\"ts\":{},\"dur\":{}",
            us(iv.start),
            us(iv.end.saturating_sub(iv.start))
        )?;
        if let Some(label) = iv.label {
            out.extend_from_slice(b",\"args\":{\"label\":");
            json_str(&mut out, rec.name(label))?;
            out.push(b'}');
        }
        out.push(b'}');
    }
    for (n, tr) in rec.transfers().iter().enumerate() {
        let (pid, tid) = place[tr.from.index()];
        for (ph, at) in [("b", tr.start), ("e", tr.end)] {
            sep(&mut out);
            write!(
                out,
                "{{\"ph\":\"{ph}\",\"cat\":\"transfer\",\"id\":{n},\"name\":"
            )?;
            json_str(&mut out, rec.name(tr.label))?;
            write!(out, ",\"pid\":{pid},\"tid\":{tid},\"ts\":{}", us(at))?;
            if ph == "b" {
                out.extend_from_slice(b",\"args\":{\"to\":");
                json_str(&mut out, &rec.resource_info(tr.to).name)?;
                write!(out, ",\"bytes\":{}}}", tr.bytes)?;
            }
            out.push(b'}');
        }
    }
    // Each counter track's name, written out once per (resource, counter) as JSON.
    let mut tracks: Vec<Vec<(u32, Vec<u8>)>> = vec![Vec::new(); rec.resources().len()];
    for s in rec.samples() {
        let (pid, _) = place[s.resource.index()];
        let info = rec.counter_info(s.counter);
        let known = &mut tracks[s.resource.index()];
        let k = match known.iter().position(|(c, _)| *c == s.counter.0) {
            Some(k) => k,
            None => {
                let name = format!(
                    "{} {} ({})",
                    rec.resource_info(s.resource).name,
                    info.name,
                    info.unit
                );
                let mut json = Vec::new();
                json_str(&mut json, &name)?;
                known.push((s.counter.0, json));
                known.len() - 1
            }
        };
        sep(&mut out);
        out.extend_from_slice(b"{\"ph\":\"C\",\"name\":");
        out.extend_from_slice(&known[k].1);
        write!(out, ",\"pid\":{pid},\"ts\":{},\"args\":{{", us(s.at))?;
        json_str(&mut out, &info.name)?;
        write!(out, ":{}}}}}", finite(s.value))?;
    }
    out.extend_from_slice(b"\n]}\n");
    Ok(out)
}

/// JSON has no NaN or infinity.
fn finite(v: f64) -> f64 {
    if v.is_finite() { v } else { 0.0 }
}
