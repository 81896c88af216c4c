//! The timeline picture: a Gantt chart with one row per resource, coloured by state.
//!
//! Millions of intervals draw in seconds because nothing finer than a pixel is drawn: each
//! row's time axis is cut into one bin per pixel column, the time each state covers in a bin is
//! summed, and the bin is painted with its dominant state, paler when the resource was busy
//! for only part of it. Runs of equal bins become one rectangle. The caption says so. Rows
//! that compute (workers, ranks, streams) come first, at most [`MAX_ROWS`] (the busiest); then
//! the [`LINK_ROWS`] busiest links, busiest first. At most [`MAX_STATES`] colours (others:
//! `other`).

use plotters::coord::Shift;
use plotters::prelude::*;

use hetsim_engine::record::{Recorder, ResId, ResourceKind};

use super::{Figure, draw_title, err, other_rgb, size, state_colours, time_unit};

pub const MAX_ROWS: usize = 120;
/// Link rows under compute rows: the busiest links only (all of them fill a fat-tree's chart).
pub const LINK_ROWS: usize = 16;
pub const MAX_STATES: usize = 15;

/// One drawn rectangle: columns `[from, to)` of a row, a state, a shade 1..=4 (4 = full).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cell {
    pub from: u32,
    pub to: u32,
    pub state: u16,
    pub shade: u8,
}

/// A Gantt chart ready to draw.
#[derive(Debug, Clone)]
pub struct Gantt {
    pub title: String,
    pub notes: Vec<String>,
    /// Row names, top to bottom.
    pub rows: Vec<String>,
    pub cells: Vec<Vec<Cell>>,
    /// State names and colours, in legend order.
    pub states: Vec<(String, [u8; 3])>,
    pub bins: u32,
    /// Seconds per bin.
    pub bin_s: f64,
    pub end_s: f64,
    width: u32,
    label_w: u32,
    row_h: u32,
}

const HEADER_H: u32 = 96;
const AXIS_H: u32 = 50;
const RIGHT: u32 = 30;

impl Gantt {
    /// Aggregates the recorder's intervals into a chart `width` pixels wide; `None` when
    /// there are no intervals.
    pub fn build(rec: &Recorder, title: &str, width: u32) -> Option<Gantt> {
        let intervals = rec.intervals();
        let end = intervals.iter().map(|i| i.end).max()?;
        let end_s = end.as_secs_f64().max(1e-12);

        // Rows: what computes first (workers, ranks, streams, in display order), then the
        // busiest links, busiest first, each part capped (the notes say what was left out).
        let mut busy = vec![0.0f64; rec.resources().len()];
        let mut count = vec![0u32; rec.resources().len()];
        let mut state_time = vec![0.0f64; intervals.iter().map(|i| i.state.index() + 1).max()?];
        for iv in intervals {
            let d = iv.end.saturating_sub(iv.start).as_secs_f64();
            busy[iv.resource.index()] += d;
            count[iv.resource.index()] += 1;
            state_time[iv.state.index()] += d;
        }
        let is_link = |id: ResId| {
            matches!(
                rec.resource_info(id).kind,
                ResourceKind::Link | ResourceKind::Nic
            )
        };
        let (links, compute): (Vec<ResId>, Vec<ResId>) = crate::order::resources_in_order(rec)
            .into_iter()
            .filter(|id| count[id.index()] > 0)
            .partition(|&id| is_link(id));
        // Compute rows by busy time; links by the rule every picture follows.
        let busiest_first = |ids: &mut Vec<ResId>| {
            ids.sort_by(|a, b| busy[b.index()].total_cmp(&busy[a.index()]).then(a.cmp(b)))
        };
        let load = crate::busiest::loads(rec, end_s);
        let busiest_links_first = |ids: &mut Vec<ResId>| {
            ids.sort_by(|a, b| {
                load[b.index()]
                    .total_cmp(&load[a.index()])
                    .then(busy[b.index()].total_cmp(&busy[a.index()]))
                    .then(a.cmp(b))
            })
        };
        let mut notes_rows = Vec::new();
        let mut shown = compute.clone();
        if shown.len() > MAX_ROWS {
            busiest_first(&mut shown);
            shown.truncate(MAX_ROWS);
            let keep: std::collections::HashSet<ResId> = shown.iter().copied().collect();
            shown = compute
                .iter()
                .copied()
                .filter(|id| keep.contains(id))
                .collect();
            notes_rows.push(format!(
                "showing the {MAX_ROWS} busiest of {} compute resources",
                compute.len()
            ));
        }
        let link_cap = if compute.is_empty() {
            MAX_ROWS
        } else {
            LINK_ROWS
        };
        let mut busiest_links = links.clone();
        busiest_links_first(&mut busiest_links);
        if busiest_links.len() > link_cap {
            busiest_links.truncate(link_cap);
            notes_rows.push(format!(
                "links: the {link_cap} busiest of {} ({}), busiest first",
                links.len(),
                crate::busiest::RULE
            ));
        } else if !busiest_links.is_empty() {
            notes_rows.push(format!("links: all {}, busiest first", busiest_links.len()));
        }
        shown.extend(busiest_links);
        let total_rows = compute.len() + links.len();
        let mut row_of = vec![u32::MAX; busy.len()];
        let mut rows = Vec::new();
        for id in shown {
            row_of[id.index()] = rows.len() as u32;
            rows.push(rec.resource_info(id).name.clone());
        }

        // States: the MAX_STATES longest keep a colour, the rest are `other`.
        let mut by_time: Vec<usize> = (0..state_time.len())
            .filter(|&s| intervals.iter().any(|i| i.state.index() == s))
            .collect();
        by_time.sort_by(|&a, &b| state_time[b].total_cmp(&state_time[a]).then(a.cmp(&b)));
        let colours = state_colours(rec);
        let mut slot = vec![MAX_STATES as u16; state_time.len()];
        let mut states = Vec::new();
        for (k, &s) in by_time.iter().take(MAX_STATES).enumerate() {
            slot[s] = k as u16;
            let id = hetsim_engine::record::NameId(s as u32);
            states.push((rec.name(id).to_string(), colours[&id]));
        }
        let has_other = by_time.len() > MAX_STATES;
        if has_other {
            states.push(("other".to_string(), other_rgb()));
        }
        let n_states = states.len();

        let label_w = (rows.iter().map(|r| r.chars().count()).max().unwrap_or(4) as u32 * 7 + 16)
            .clamp(60, 400);
        let bins = width.saturating_sub(label_w + RIGHT + 20).max(50);
        let bin_s = end_s / bins as f64;

        // Coverage per (row, bin, state).
        let mut cover = vec![vec![0.0f32; bins as usize * n_states]; rows.len()];
        let mut per_bin = vec![0u32; rows.len() * bins as usize];
        for iv in intervals {
            let r = row_of[iv.resource.index()];
            if r == u32::MAX {
                continue;
            }
            let s = slot[iv.state.index()] as usize;
            let (a, b) = (iv.start.as_secs_f64(), iv.end.as_secs_f64());
            let first = ((a / bin_s) as u32).min(bins - 1);
            let last = ((b / bin_s) as u32).min(bins - 1);
            let row = &mut cover[r as usize];
            for c in first..=last {
                let (lo, hi) = (c as f64 * bin_s, (c + 1) as f64 * bin_s);
                let overlap = (b.min(hi) - a.max(lo)).max(0.0);
                // An instant still marks its pixel, faintly.
                let overlap = if b == a { bin_s * 0.01 } else { overlap };
                row[c as usize * n_states + s] += (overlap / bin_s) as f32;
                per_bin[r as usize * bins as usize + c as usize] += 1;
            }
        }
        let crowded = per_bin.iter().any(|&n| n > 1);
        let cells = cover
            .iter()
            .map(|row| cells_of_row(row, n_states, bins))
            .collect();

        let (scale, unit) = time_unit(end_s);
        let mut notes = vec![format!(
            "{} intervals on {} resources; one pixel column = {:.3} {unit}{}",
            intervals.len(),
            total_rows,
            bin_s / scale,
            if crowded {
                ": its dominant state is shown, paler when the resource was busy only part of it"
            } else {
                ""
            }
        )];
        notes.extend(notes_rows);
        let row_h = if rows.len() <= 20 { 24 } else { 14 };
        Some(Gantt {
            title: title.to_string(),
            notes,
            rows,
            cells,
            states,
            bins,
            bin_s,
            end_s,
            width,
            label_w,
            row_h,
        })
    }
}

/// Dominant state and shade per bin, runs merged.
fn cells_of_row(cover: &[f32], n_states: usize, bins: u32) -> Vec<Cell> {
    let mut cells: Vec<Cell> = Vec::new();
    for c in 0..bins {
        let per_state = &cover[c as usize * n_states..(c as usize + 1) * n_states];
        let total: f32 = per_state.iter().sum();
        if total <= 0.0 {
            continue;
        }
        let (state, _) = per_state
            .iter()
            .enumerate()
            .fold(
                (0, f32::MIN),
                |best, (i, &v)| if v > best.1 { (i, v) } else { best },
            );
        let shade = ((total.min(1.0) * 4.0).round() as u8).clamp(1, 4);
        match cells.last_mut() {
            Some(last) if last.to == c && last.state == state as u16 && last.shade == shade => {
                last.to = c + 1
            }
            _ => cells.push(Cell {
                from: c,
                to: c + 1,
                state: state as u16,
                shade,
            }),
        }
    }
    cells
}

/// The colour mixed with white: shade 4 is the colour, shade 1 a pale tint.
fn tint([r, g, b]: [u8; 3], shade: u8) -> RGBColor {
    let k = 0.25 + 0.75 * (shade as f64 / 4.0);
    let mix = |c: u8| (255.0 - (255.0 - c as f64) * k).round() as u8;
    RGBColor(mix(r), mix(g), mix(b))
}

impl Gantt {
    /// The header: title, notes (16 px each; room for two in [`HEADER_H`]), then the legend.
    fn header_h(&self) -> u32 {
        HEADER_H + 16 * self.notes.len().saturating_sub(2) as u32
    }
}

impl Figure for Gantt {
    fn size(&self) -> (u32, u32) {
        (
            self.width,
            self.header_h() + AXIS_H + 20 + self.rows.len() as u32 * self.row_h,
        )
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        root.fill(&WHITE).map_err(err)?;
        let header_h = self.header_h();
        let (header, body) = root.split_vertically(header_h);
        let notes: Vec<&str> = self.notes.iter().map(String::as_str).collect();
        draw_title(&header, &self.title, &notes)?;
        // The legend: one swatch per state, in one line under the notes.
        let mut x = 12i32;
        let y = header_h as i32 - 22;
        for (name, rgb) in &self.states {
            let c = RGBColor(rgb[0], rgb[1], rgb[2]);
            header
                .draw(&Rectangle::new([(x, y), (x + 14, y + 14)], c.filled()))
                .map_err(err)?;
            header
                .draw_text(
                    name,
                    &("sans-serif", size::TEXT).into_font().color(&BLACK),
                    (x + 18, y),
                )
                .map_err(err)?;
            x += 30 + 8 * name.chars().count() as i32;
        }

        let (scale, unit) = time_unit(self.end_s);
        let n = self.rows.len() as i32;
        let mut chart = ChartBuilder::on(&body)
            .margin_right(RIGHT)
            .margin_bottom(10)
            .x_label_area_size(AXIS_H)
            .y_label_area_size(self.label_w)
            .build_cartesian_2d(
                super::axis::Axis::new(0.0, self.end_s / scale, false),
                (0..n - 1).into_segmented(),
            )
            .map_err(err)?;
        let label_font = if self.row_h >= 20 {
            size::TEXT
        } else {
            size::TINY
        };
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(self.rows.len())
            .y_label_style(("sans-serif", label_font))
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => self
                    .rows
                    .get((n - 1 - i) as usize)
                    .cloned()
                    .unwrap_or_default(),
                _ => String::new(),
            })
            .x_label_formatter(&|v| super::axis::label(*v))
            .x_desc(format!("simulated time ({unit})"))
            .x_label_style(("sans-serif", size::TEXT))
            .axis_desc_style(("sans-serif", size::TEXT))
            .bold_line_style(RGBColor(225, 225, 225))
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(err)?;
        let bin = self.bin_s / scale;
        let gap = if self.row_h >= 10 { 2 } else { 0 };
        for (r, cells) in self.cells.iter().enumerate() {
            let y = n - 1 - r as i32;
            chart
                .draw_series(cells.iter().map(|c| {
                    let color = tint(self.states[c.state as usize].1, c.shade);
                    let mut rect = Rectangle::new(
                        [
                            (c.from as f64 * bin, SegmentValue::Exact(y)),
                            (c.to as f64 * bin, SegmentValue::Exact(y + 1)),
                        ],
                        color.filled(),
                    );
                    rect.set_margin(gap, gap, 0, 0);
                    rect
                }))
                .map_err(err)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetsim_engine::record::Interval;
    use hetsim_schema::SimTime;

    fn rec_with(intervals: &[(u32, &str, u64, u64)]) -> Recorder {
        let mut rec = Recorder::default();
        for &(r, state, a, b) in intervals {
            let resource = rec.resource(ResourceKind::Gpu, &format!("node[0].gpu[{r}]"));
            let state = rec.name_id(state);
            rec.interval(Interval {
                resource,
                state,
                label: None,
                start: SimTime::from_nanos(a),
                end: SimTime::from_nanos(b),
            });
        }
        rec
    }

    #[test]
    fn an_interval_fills_the_columns_it_covers() {
        // Over [0, 1000] ns, gpu[0] busy from 0 to 500 ns: the first half of the bins, full
        // shade; gpu[1] busy all along.
        let rec = rec_with(&[(0, "compute", 0, 500), (1, "send", 0, 1000)]);
        let g = Gantt::build(&rec, "t", 1000).unwrap();
        assert_eq!(g.rows, vec!["node[0].gpu[0]", "node[0].gpu[1]"]);
        let half = g.bins / 2;
        assert_eq!(
            g.cells[0],
            vec![Cell {
                from: 0,
                to: half,
                state: g.states.iter().position(|s| s.0 == "compute").unwrap() as u16,
                shade: 4
            }]
        );
        assert_eq!(g.cells[1].len(), 1);
        assert_eq!((g.cells[1][0].from, g.cells[1][0].to), (0, g.bins));
    }

    #[test]
    fn many_intervals_draw_no_more_cells_than_pixels() {
        // 100,000 intervals of 10 ns with 10 ns gaps, alternating two states, on one row.
        let iv: Vec<(u32, &str, u64, u64)> = (0..100_000u64)
            .map(|i| (0, if i % 2 == 0 { "a" } else { "b" }, i * 20, i * 20 + 10))
            .collect();
        let rec = rec_with(&iv);
        let g = Gantt::build(&rec, "t", 800).unwrap();
        assert!(g.cells[0].len() <= g.bins as usize);
        // Half of each column is busy: every cell is drawn at half shade (2 of 4).
        assert!(
            g.cells[0].iter().all(|c| c.shade == 2),
            "{:?}",
            &g.cells[0][..3]
        );
        assert!(g.notes[0].contains("dominant state"));
    }

    #[test]
    fn rows_beyond_the_limit_keep_the_busiest() {
        let iv: Vec<(u32, &str, u64, u64)> = (0..(MAX_ROWS as u32 + 10))
            .map(|r| (r, "busy", 0, 1 + r as u64))
            .collect();
        let g = Gantt::build(&rec_with(&iv), "t", 800).unwrap();
        assert_eq!(g.rows.len(), MAX_ROWS);
        assert!(
            !g.rows.contains(&"node[0].gpu[0]".to_string()),
            "the idlest is left out"
        );
        assert!(g.notes[1].contains(&format!("{} busiest of {}", MAX_ROWS, MAX_ROWS + 10)));
    }

    #[test]
    fn compute_rows_come_first_then_the_busiest_links() {
        let mut rec = Recorder::default();
        let busy = rec.name_id("busy");
        let add = |rec: &mut Recorder, kind, name: &str, ns: u64| {
            let resource = rec.resource(kind, name);
            rec.interval(Interval {
                resource,
                state: busy,
                label: None,
                start: SimTime::ZERO,
                end: SimTime::from_nanos(ns),
            });
        };
        // Links named so that display order differs from busy order; one worker, idler
        // than every link, still comes first.
        for l in 0..(LINK_ROWS as u64 + 4) {
            add(&mut rec, ResourceKind::Link, &format!("link{l}"), 10 + l);
        }
        add(&mut rec, ResourceKind::Worker, "CUDA0", 1);
        let g = Gantt::build(&rec, "t", 800).unwrap();
        assert_eq!(g.rows.len(), 1 + LINK_ROWS);
        assert_eq!(g.rows[0], "CUDA0");
        let top = LINK_ROWS as u64 + 3;
        assert_eq!(g.rows[1], format!("link{top}"), "the busiest link first");
        assert_eq!(
            g.rows[LINK_ROWS], "link4",
            "the four idlest links are left out"
        );
        assert!(
            g.notes
                .iter()
                .any(|n| n.contains(&format!("{LINK_ROWS} busiest of {}", LINK_ROWS + 4))),
            "{:?}",
            g.notes
        );
    }
}
