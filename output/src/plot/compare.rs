//! A what-if comparison: one panel per question, two columns of panels, each panel a few
//! labelled bars (the configuration as it is, then the alternative) with their values written
//! on them and the change in the panel's title.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{Figure, draw_title, err, series_rgb, size};

/// One question: its bars, left to right.
#[derive(Debug, Clone)]
pub struct Panel {
    pub title: String,
    /// The quantity and its unit, for the y axis.
    pub y_desc: String,
    /// (label, value in the y unit, the value as the text on the bar).
    pub bars: Vec<(String, f64, String)>,
    /// What each bar changed (`HostCopy: --disable gpudirect`), one line each, under the
    /// title (wrapped to the panel's width).
    pub changes: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Comparison {
    pub title: String,
    pub notes: Vec<String>,
    pub panels: Vec<Panel>,
    pub width: u32,
}

const HEADER_H: u32 = 80;
const PANEL_H: u32 = 330;
const COLUMNS: usize = 2;

impl Figure for Comparison {
    fn size(&self) -> (u32, u32) {
        let rows = self.panels.len().div_ceil(COLUMNS).max(1) as u32;
        (self.width, HEADER_H + rows * PANEL_H)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        root.fill(&WHITE).map_err(err)?;
        let (header, body) = root.split_vertically(HEADER_H);
        let notes: Vec<&str> = self.notes.iter().map(String::as_str).collect();
        draw_title(&header, &self.title, &notes)?;
        let rows = self.panels.len().div_ceil(COLUMNS).max(1);
        let areas = body.split_evenly((rows, COLUMNS));
        // Every panel's head as tall as the tallest, so that the plots line up.
        let w = areas.first().map_or(0, |a| a.dim_in_pixel().0);
        let head_lines = self
            .panels
            .iter()
            .map(|p| change_lines(p, w).len())
            .max()
            .unwrap_or(0);
        for (panel, area) in self.panels.iter().zip(areas) {
            draw_panel(panel, &area, head_lines)?;
        }
        Ok(())
    }
}

/// A panel's change lines wrapped to `w` pixels (about 0.55 em per character).
fn change_lines(p: &Panel, w: u32) -> Vec<String> {
    let columns = ((w as f64 - 20.0) / (0.55 * size::SMALL as f64)).max(20.0) as usize;
    p.changes
        .iter()
        .flat_map(|c| {
            textwrap::wrap(c, columns)
                .into_iter()
                .map(|l| l.into_owned())
        })
        .collect()
}

fn draw_panel<DB: DrawingBackend>(
    p: &Panel,
    area: &DrawingArea<DB, Shift>,
    head_lines: usize,
) -> Result<(), String> {
    // The title, then what each bar changed, centred under it.
    let w = area.dim_in_pixel().0;
    let lines = change_lines(p, w);
    let (head, area) = area.split_vertically(40 + 16 * head_lines.max(lines.len()) as u32);
    let centred = |px: u32, bold: bool| {
        let font = ("sans-serif", px).into_font();
        let font = if bold {
            font.style(FontStyle::Bold)
        } else {
            font
        };
        font.color(&BLACK)
            .pos(plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Center,
                plotters::style::text_anchor::VPos::Top,
            ))
    };
    let mid = w as i32 / 2;
    head.draw(&Text::new(
        p.title.clone(),
        (mid, 12),
        centred(size::HEADING, true),
    ))
    .map_err(err)?;
    for (k, line) in lines.iter().enumerate() {
        head.draw(&Text::new(
            line.clone(),
            (mid, 36 + 16 * k as i32),
            centred(size::SMALL, false),
        ))
        .map_err(err)?;
    }
    let area = &area;
    let n = p.bars.len().max(1) as i32;
    let top = p
        .bars
        .iter()
        .map(|b| b.1)
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    // Room above the tallest bar for its value.
    let y_max = if top > 0.0 { top * 1.25 } else { 1.0 };
    let mut chart = ChartBuilder::on(area)
        .margin(14)
        .margin_top(4)
        .x_label_area_size(34)
        .y_label_area_size(70)
        .build_cartesian_2d((0..n - 1).into_segmented(), 0.0..y_max)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .bold_line_style(RGBColor(225, 225, 225))
        .light_line_style(TRANSPARENT)
        .y_labels(5)
        .y_label_formatter(&|v| super::trim_zeros(&format!("{v:.2}")).to_string())
        .y_desc(&p.y_desc)
        .x_labels(p.bars.len())
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => p
                .bars
                .get(*i as usize)
                .map(|b| b.0.clone())
                .unwrap_or_default(),
            _ => String::new(),
        })
        .label_style(("sans-serif", size::TEXT))
        .axis_desc_style(("sans-serif", size::TEXT))
        .draw()
        .map_err(err)?;
    for (i, (_, value, text)) in p.bars.iter().enumerate() {
        if !value.is_finite() {
            continue;
        }
        let x = i as i32;
        let mut bar = Rectangle::new(
            [
                (SegmentValue::Exact(x), 0.0),
                (SegmentValue::Exact(x + 1), *value),
            ],
            series_rgb(i).filled(),
        );
        bar.set_margin(0, 0, 30, 30);
        chart.draw_series(std::iter::once(bar)).map_err(err)?;
        let style = ("sans-serif", size::TEXT).into_font().color(&BLACK).pos(
            plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Center,
                plotters::style::text_anchor::VPos::Bottom,
            ),
        );
        chart
            .draw_series(std::iter::once(Text::new(
                text.clone(),
                (SegmentValue::CenterOf(x), *value + y_max * 0.02),
                style,
            )))
            .map_err(err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_panels_take_two_rows_and_draw_as_svg() {
        let panel = |t: &str| Panel {
            title: t.into(),
            y_desc: "ms".into(),
            bars: vec![
                ("HostCopy".into(), 2.4, "2.40 ms".into()),
                ("GPUDirect".into(), 1.9, "1.90 ms".into()),
            ],
            changes: vec!["HostCopy: --disable gpudirect".into()],
        };
        let c = Comparison {
            title: "what if".into(),
            notes: vec!["note".into()],
            panels: vec![panel("a"), panel("b"), panel("c"), panel("d")],
            width: 1200,
        };
        assert_eq!(c.size(), (1200, HEADER_H + 2 * PANEL_H));
        let svg = String::from_utf8(crate::plot::svg(&c).unwrap()).unwrap();
        for text in [
            "GPUDirect",
            "2.40 ms",
            "what if",
            "HostCopy: --disable gpudirect",
        ] {
            assert!(svg.contains(text), "{text} drawn");
        }
    }
}
