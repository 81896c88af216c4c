#!/usr/bin/env python3
"""A flow case (tests/data/flows/README.md's JSON format) as tools/simgrid/flowcase.cpp reads
it, on stdout: the link count, then `NAME BANDWIDTH LATENCY` per link; the flow count, then
`ID START SIZE HOPS LINK_INDEX...` per flow, each route without its repeats (the format counts
a link a route lists twice once). Only shared links can be run by flowcase.cpp.
Used by tools/simgrid/flow-speed.sh and tests/simgrid_flows.rs.
Usage: flowcase-input.py CASE.json"""
import json
import sys

if len(sys.argv) != 2:
    sys.exit(__doc__.splitlines()[-1].strip())
case = json.load(open(sys.argv[1]))
index, lines = {}, [str(len(case["links"]))]
for i, link in enumerate(case["links"]):
    if link.get("sharing", "shared") != "shared":
        sys.exit(f"{sys.argv[1]}: links[{i}]: only shared links are run here")
    index[link["id"]] = i
    lines.append(f'{link["id"]} {link["bandwidth"]!r} {float(link.get("latency", 0))!r}')
lines.append(str(len(case["flows"])))
for i, f in enumerate(case["flows"]):
    try:
        hops = list(dict.fromkeys(index[h] for h in f["route"]))
    except KeyError as e:
        sys.exit(f"{sys.argv[1]}: flows[{i}].route: unknown link {e}")
    start = float(f.get("start", 0))
    lines.append(f'{f["id"]} {start!r} {f["size"]} {len(hops)} ' + " ".join(map(str, hops)))
print("\n".join(lines))
