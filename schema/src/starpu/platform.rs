//! The SimGrid platform files StarPU writes beside its bus calibration
//! (`<host>.platform.xml`, version 3, and `<host>.platform.v4.xml`, version 4): hosts (the CPU
//! cores and accelerators with their speed and properties), links with bandwidth and latency,
//! and the full routing table between hosts.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq)]
pub struct Host {
    pub id: String,
    /// Flop/s (`power` in version 3, `speed` in version 4).
    pub speed: f64,
    pub props: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    pub id: String,
    /// Bytes per second.
    pub bandwidth: f64,
    /// Seconds.
    pub latency: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    pub src: String,
    pub dst: String,
    pub links: Vec<String>,
    pub symmetrical: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Platform {
    pub version: u32,
    pub hosts: Vec<Host>,
    pub links: Vec<Link>,
    pub routes: Vec<Route>,
}

/// A SimGrid quantity: a number with an optional unit (`Bps`, `s`, `f`, `Gf`, ...).
fn quantity(text: &str, what: &str) -> Result<f64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+')))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("{what} `{text}` is not a number"))?;
    let scale = match unit {
        "" | "Bps" | "s" | "f" => 1.0,
        "kBps" | "kf" => 1e3,
        "MBps" | "Mf" => 1e6,
        "GBps" | "Gf" => 1e9,
        "ms" => 1e-3,
        "us" => 1e-6,
        "ns" => 1e-9,
        u => return Err(format!("{what} `{text}`: unknown unit `{u}`")),
    };
    Ok(v * scale)
}

fn attr<'a>(node: roxmltree::Node<'a, '_>, name: &str) -> Result<&'a str, String> {
    node.attribute(name).ok_or_else(|| {
        format!(
            "<{}> at byte {} has no `{name}`",
            node.tag_name().name(),
            node.range().start
        )
    })
}

/// Parses a platform file's text.
pub fn parse(text: &str) -> Result<Platform, String> {
    let doc = roxmltree::Document::parse_with_options(
        text,
        roxmltree::ParsingOptions {
            allow_dtd: true,
            ..Default::default()
        },
    )
    .map_err(|e| e.to_string())?;
    let root = doc.root_element();
    if root.tag_name().name() != "platform" {
        return Err(format!(
            "the root is <{}>, not <platform>",
            root.tag_name().name()
        ));
    }
    let version = attr(root, "version")?
        .trim()
        .split('.')
        .next()
        .and_then(|v| v.parse().ok())
        .ok_or("platform version is not a number")?;
    let mut p = Platform {
        version,
        hosts: Vec::new(),
        links: Vec::new(),
        routes: Vec::new(),
    };
    for node in root.descendants().filter(|n| n.is_element()) {
        match node.tag_name().name() {
            "host" => {
                let speed = node
                    .attribute("speed")
                    .or_else(|| node.attribute("power"))
                    .ok_or_else(|| {
                        format!(
                            "host `{}` has no speed",
                            node.attribute("id").unwrap_or("?")
                        )
                    })?;
                let props = node
                    .children()
                    .filter(|c| c.has_tag_name("prop"))
                    .filter_map(|c| {
                        Some((
                            c.attribute("id")?.to_string(),
                            c.attribute("value")?.to_string(),
                        ))
                    })
                    .collect();
                p.hosts.push(Host {
                    id: attr(node, "id")?.to_string(),
                    speed: quantity(speed, "speed")?,
                    props,
                });
            }
            "link" => p.links.push(Link {
                id: attr(node, "id")?.to_string(),
                bandwidth: quantity(attr(node, "bandwidth")?, "bandwidth")?,
                latency: quantity(node.attribute("latency").unwrap_or("0"), "latency")?,
            }),
            "route" => p.routes.push(Route {
                src: attr(node, "src")?.to_string(),
                dst: attr(node, "dst")?.to_string(),
                links: node
                    .children()
                    .filter(|c| c.has_tag_name("link_ctn"))
                    .map(|c| attr(c, "id").map(str::to_string))
                    .collect::<Result<_, _>>()?,
                symmetrical: node.attribute("symmetrical") != Some("NO"),
            }),
            _ => {}
        }
    }
    // Every route names links that exist.
    for r in &p.routes {
        for l in &r.links {
            if !p.links.iter().any(|k| &k.id == l) {
                return Err(format!(
                    "route {} -> {} names unknown link `{l}`",
                    r.src, r.dst
                ));
            }
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_3_and_4_read_alike() {
        let v3 = r#"<?xml version='1.0'?><!DOCTYPE platform SYSTEM 'x.dtd'><platform version="3"><AS id="AS0" routing="Full">
            <host id="CPU0" power="2000000000"/><host id="CUDA0" power="2000000000"><prop id="memsize" value="3220897792"/></host>
            <link id="RAM-CUDA0" bandwidth="6008661719.0" latency="0.000009"/>
            <route src="CPU0" dst="CUDA0" symmetrical="NO"><link_ctn id="RAM-CUDA0"/></route></AS></platform>"#;
        let v4 = v3
            .replace("version=\"3\"", "version=\"4\"")
            .replace("power=\"2000000000\"", "speed=\"2000000000f\"")
            .replace("6008661719.0\"", "6008661719.0Bps\"")
            .replace("0.000009\"", "0.000009s\"");
        let (a, b) = (parse(v3).unwrap(), parse(&v4).unwrap());
        assert_eq!(a.hosts, b.hosts);
        assert_eq!(a.links, b.links);
        assert_eq!(a.hosts[1].props["memsize"], "3220897792");
        assert_eq!(a.routes[0].links, vec!["RAM-CUDA0"]);
        assert!(!a.routes[0].symmetrical);
        assert!(
            parse(&v3.replace("<link_ctn id=\"RAM-CUDA0\"/>", "<link_ctn id=\"nope\"/>"))
                .unwrap_err()
                .contains("unknown link `nope`")
        );
    }
}
