//! `paje.trace`: the Paje trace format that ViTE (and pajeng, StarVZ) read, as StarPU and
//! SimGrid write it.
//!
//! Containers: the root `0` > one container per group (a node, or the network) > one per
//! resource. Every container is created at time 0, before any event uses it, and destroyed at
//! the end. State intervals become `PajePushState`/`PajePopState` pairs, transfers become
//! `PajeStartLink`/`PajeEndLink` pairs in the root container (keyed by transfer), and counter
//! samples become `PajeSetVariable`. Events are written in time order; at equal times ends
//! come before starts so that back-to-back intervals nest correctly.

use std::collections::BTreeSet;
use std::io::Write;

use hetsim_engine::record::{Recorder, ResourceKind};
use hetsim_schema::SimTime;

const HEADER: &str = "\
%EventDef PajeDefineContainerType 0
%       Alias string
%       Type string
%       Name string
%EndEventDef
%EventDef PajeDefineVariableType 1
%       Alias string
%       Type string
%       Name string
%       Color color
%EndEventDef
%EventDef PajeDefineStateType 2
%       Alias string
%       Type string
%       Name string
%EndEventDef
%EventDef PajeDefineLinkType 3
%       Alias string
%       Type string
%       StartContainerType string
%       EndContainerType string
%       Name string
%EndEventDef
%EventDef PajeDefineEntityValue 4
%       Alias string
%       Type string
%       Name string
%       Color color
%EndEventDef
%EventDef PajeCreateContainer 5
%       Time date
%       Alias string
%       Type string
%       Container string
%       Name string
%EndEventDef
%EventDef PajeDestroyContainer 6
%       Time date
%       Type string
%       Name string
%EndEventDef
%EventDef PajeSetVariable 7
%       Time date
%       Type string
%       Container string
%       Value double
%EndEventDef
%EventDef PajePushState 8
%       Time date
%       Type string
%       Container string
%       Value string
%EndEventDef
%EventDef PajePopState 9
%       Time date
%       Type string
%       Container string
%EndEventDef
%EventDef PajeStartLink 10
%       Time date
%       Type string
%       Container string
%       Value string
%       StartContainer string
%       Key string
%EndEventDef
%EventDef PajeEndLink 11
%       Time date
%       Type string
%       Container string
%       Value string
%       EndContainer string
%       Key string
%EndEventDef
";

/// A Paje string field: quoted, without the characters that would break a line.
fn q(s: &str) -> Quoted<'_> {
    Quoted(s)
}

/// [`q`]'s field, written where it is formatted (no string of its own).
struct Quoted<'a>(&'a str);

impl std::fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::fmt::Write;
        f.write_char('"')?;
        for c in self.0.chars() {
            f.write_char(if c == '"' || c == '\n' { '\'' } else { c })?;
        }
        f.write_char('"')
    }
}

fn secs(t: SimTime) -> f64 {
    t.as_secs_f64()
}

fn kind_type(kind: ResourceKind) -> String {
    format!("T_{}", kind.as_str())
}

/// One timed line, sorted by (time, phase, order of emission); formatted only when written.
struct Timed {
    at: SimTime,
    /// 0 = ends (pop, end link), 1 = starts and values, 2 = ends of empty intervals.
    phase: u8,
    event: Event,
}

/// What a timed line says, by index into the recorder's rows.
#[derive(Clone, Copy)]
enum Event {
    /// Push (`start`) or pop of interval `i` of `crate::intervals::sorted`.
    State { i: u32, start: bool },
    /// Start or end of transfer `n`.
    Link { n: u32, start: bool },
    /// Counter sample `i`.
    Value { i: u32 },
}

/// The whole trace file.
pub fn paje_trace(rec: &Recorder) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(4096 + 80 * rec.intervals().len());
    out.extend_from_slice(HEADER.as_bytes());

    // Types: a group type, one container and one state type per resource kind in use, one
    // variable type per (kind, counter), one link type per (from kind, to kind).
    let kinds: BTreeSet<ResourceKind> = rec.resources().iter().map(|r| r.kind).collect();
    writeln!(out, "0 T_group 0 {}", q("Group"))?;
    for &k in &kinds {
        writeln!(out, "0 {} T_group {}", kind_type(k), q(k.as_str()))?;
        writeln!(out, "2 S_{} {} {}", k.as_str(), kind_type(k), q("State"))?;
    }
    let mut variables = BTreeSet::new();
    for s in rec.samples() {
        variables.insert((rec.resource_info(s.resource).kind, s.counter));
    }
    for &(k, c) in &variables {
        let info = rec.counter_info(c);
        writeln!(
            out,
            "1 V_{}_{} {} {} \"0 0 1\"",
            k.as_str(),
            c.0,
            kind_type(k),
            q(&format!("{} ({})", info.name, info.unit))
        )?;
    }
    let mut link_types = BTreeSet::new();
    for t in rec.transfers() {
        link_types.insert((rec.resource_info(t.from).kind, rec.resource_info(t.to).kind));
    }
    for &(a, b) in &link_types {
        writeln!(
            out,
            "3 L_{}_{} 0 {} {} {}",
            a.as_str(),
            b.as_str(),
            kind_type(a),
            kind_type(b),
            q("Transfer")
        )?;
    }
    // State values with their legend colours, per state type.
    let mut values = BTreeSet::new();
    for iv in rec.intervals() {
        values.insert((rec.resource_info(iv.resource).kind, iv.state));
    }
    let colours = crate::plot::state_colours(rec);
    for &(k, state) in &values {
        let name = rec.name(state);
        let [r, g, b] = colours[&state];
        writeln!(
            out,
            "4 E_{}_{} S_{} {} \"{:.3} {:.3} {:.3}\"",
            k.as_str(),
            state.0,
            k.as_str(),
            q(name),
            r as f64 / 255.0,
            g as f64 / 255.0,
            b as f64 / 255.0
        )?;
    }

    // Containers, all at time 0.
    let groups = crate::order::groups_in_order(rec);
    for (g, (group, members)) in groups.iter().enumerate() {
        writeln!(out, "5 0 G{g} T_group 0 {}", q(group))?;
        for id in members {
            let info = rec.resource_info(*id);
            writeln!(
                out,
                "5 0 R{} {} G{g} {}",
                id.0,
                kind_type(info.kind),
                q(&info.name)
            )?;
        }
    }

    // Timed events.
    let intervals = crate::intervals::sorted(rec);
    let mut timed: Vec<Timed> = Vec::new();
    let mut end = SimTime::ZERO;
    for (i, iv) in intervals.iter().enumerate() {
        let i = i as u32;
        timed.push(Timed {
            at: iv.start,
            phase: 1,
            event: Event::State { i, start: true },
        });
        timed.push(Timed {
            at: iv.end,
            // An empty interval pops after its own push.
            phase: if iv.end == iv.start { 2 } else { 0 },
            event: Event::State { i, start: false },
        });
        end = end.max(iv.end);
    }
    for (n, t) in rec.transfers().iter().enumerate() {
        let n = n as u32;
        timed.push(Timed {
            at: t.start,
            phase: 1,
            event: Event::Link { n, start: true },
        });
        timed.push(Timed {
            at: t.end,
            phase: 0,
            event: Event::Link { n, start: false },
        });
        end = end.max(t.end);
    }
    for (i, s) in rec.samples().iter().enumerate() {
        timed.push(Timed {
            at: s.at,
            phase: 1,
            event: Event::Value { i: i as u32 },
        });
        end = end.max(s.at);
    }
    timed.sort_by_key(|t| (t.at, t.phase));
    for t in &timed {
        write_event(&mut out, rec, &intervals, t.event)?;
    }

    // Containers end with the trace, innermost first.
    for (g, (_, members)) in groups.iter().enumerate() {
        for id in members {
            let kind = rec.resource_info(*id).kind;
            writeln!(out, "6 {} {} R{}", secs(end), kind_type(kind), id.0)?;
        }
        writeln!(out, "6 {} T_group G{g}", secs(end))?;
    }
    Ok(out)
}

/// Writes one timed line.
fn write_event(
    out: &mut Vec<u8>,
    rec: &Recorder,
    intervals: &[hetsim_engine::record::Interval],
    event: Event,
) -> std::io::Result<()> {
    let kind = |r: hetsim_engine::record::ResId| rec.resource_info(r).kind.as_str();
    match event {
        Event::State { i, start } => {
            let iv = &intervals[i as usize];
            let k = kind(iv.resource);
            if start {
                let value = iv.state.0;
                writeln!(
                    out,
                    "8 {} S_{k} R{} E_{k}_{value}",
                    secs(iv.start),
                    iv.resource.0
                )
            } else {
                writeln!(out, "9 {} S_{k} R{}", secs(iv.end), iv.resource.0)
            }
        }
        Event::Link { n, start } => {
            let t = &rec.transfers()[n as usize];
            let (from, to) = (kind(t.from), kind(t.to));
            let label = q(rec.name(t.label));
            if start {
                let (at, r) = (secs(t.start), t.from.0);
                writeln!(out, "10 {at} L_{from}_{to} 0 {label} R{r} t{n}")
            } else {
                let (at, r) = (secs(t.end), t.to.0);
                writeln!(out, "11 {at} L_{from}_{to} 0 {label} R{r} t{n}")
            }
        }
        Event::Value { i } => {
            let s = &rec.samples()[i as usize];
            let k = kind(s.resource);
            let v = if s.value.is_finite() { s.value } else { 0.0 };
            let (at, c, r) = (secs(s.at), s.counter.0, s.resource.0);
            writeln!(out, "7 {at} V_{k}_{c} R{r} {v}")
        }
    }
}
