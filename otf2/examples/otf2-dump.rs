//! Prints an archive's events one per line, location by location, in the normalised form
//! `KIND LOCATION TIME Field: value, ...` (ids for references): `otf2-dump ARCHIVE [LOCATION]`.

use otf2::{Archive, EventKind};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: otf2-dump ARCHIVE.otf2 [LOCATION]");
        std::process::exit(2);
    };
    let only: Option<u64> = args.next().and_then(|a| a.parse().ok());
    if let Err(e) = run(&path, only) {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
}

fn run(path: &str, only: Option<u64>) -> otf2::Result<()> {
    let archive = Archive::open(path)?;
    for loc in &archive.defs.locations {
        if only.is_some_and(|o| o != loc.id) {
            continue;
        }
        let mut events = archive.events(loc.id)?;
        while let Some(e) = events.next_event()? {
            println!("{}", line(loc.id, &e));
        }
    }
    Ok(())
}

/// One event as a line: `KIND LOCATION TIME fields | attr ID VALUE ...`.
pub fn line(loc: u64, e: &otf2::Event) -> String {
    let (kind, fields) = describe(&e.kind);
    let mut line = format!("{kind} {loc} {} {fields}", e.time)
        .trim_end()
        .to_string();
    for (id, v) in &e.attributes {
        line += &format!(" | attr {id} {}", value(v));
    }
    line
}

/// An attribute value as otf2-print writes it (references as their ids).
pub fn value(v: &otf2::AttributeValue) -> String {
    match v {
        otf2::AttributeValue::Unsigned(u) => u.to_string(),
        otf2::AttributeValue::Signed(i) => i.to_string(),
        otf2::AttributeValue::Float(f) => f.to_string(),
        otf2::AttributeValue::Ref { id, .. } => id.to_string(),
    }
}

fn undefined(v: u32) -> String {
    if v == u32::MAX {
        "NONE".into()
    } else {
        v.to_string()
    }
}

/// otf2-print's name of the record and its fields, numbers only.
pub fn describe(k: &EventKind) -> (String, String) {
    match *k {
        EventKind::MeasurementOnOff { on } => (
            "MEASUREMENT_ON_OFF".into(),
            format!("Mode: {}", if on { "ON" } else { "OFF" }),
        ),
        EventKind::Enter { region } => ("ENTER".into(), format!("Region: {region}")),
        EventKind::Leave { region } => ("LEAVE".into(), format!("Region: {region}")),
        EventKind::MpiSend {
            receiver,
            comm,
            tag,
            length,
        } => (
            "MPI_SEND".into(),
            format!("Receiver: {receiver}, Communicator: {comm}, Tag: {tag}, Length: {length}"),
        ),
        EventKind::MpiIsend {
            receiver,
            comm,
            tag,
            length,
            request,
        } => (
            "MPI_ISEND".into(),
            format!(
                "Receiver: {receiver}, Communicator: {comm}, Tag: {tag}, Length: {length}, Request: {request}"
            ),
        ),
        EventKind::MpiIsendComplete { request } => {
            ("MPI_ISEND_COMPLETE".into(), format!("Request: {request}"))
        }
        EventKind::MpiIrecvRequest { request } => {
            ("MPI_IRECV_REQUEST".into(), format!("Request: {request}"))
        }
        EventKind::MpiRecv {
            sender,
            comm,
            tag,
            length,
        } => (
            "MPI_RECV".into(),
            format!("Sender: {sender}, Communicator: {comm}, Tag: {tag}, Length: {length}"),
        ),
        EventKind::MpiIrecv {
            sender,
            comm,
            tag,
            length,
            request,
        } => (
            "MPI_IRECV".into(),
            format!(
                "Sender: {sender}, Communicator: {comm}, Tag: {tag}, Length: {length}, Request: {request}"
            ),
        ),
        EventKind::MpiRequestTest { request } => {
            ("MPI_REQUEST_TEST".into(), format!("Request: {request}"))
        }
        EventKind::MpiRequestCancelled { request } => (
            "MPI_REQUEST_CANCELLED".into(),
            format!("Request: {request}"),
        ),
        EventKind::MpiCollectiveBegin => ("MPI_COLLECTIVE_BEGIN".into(), String::new()),
        EventKind::MpiCollectiveEnd {
            op,
            comm,
            root,
            sent,
            received,
        } => (
            "MPI_COLLECTIVE_END".into(),
            format!(
                "Operation: {}, Communicator: {comm}, Root: {}, Sent: {sent}, Received: {received}",
                op.name(),
                undefined(root)
            ),
        ),
        EventKind::Other(t) => (format!("OTHER_{t}"), String::new()),
    }
}
