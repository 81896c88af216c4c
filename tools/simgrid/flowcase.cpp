// SimGrid's own run of a flow case (tests/data/flows/README.md's format), for timing hetsim
// against SimGrid side by side on the same input (tools/simgrid/flow-speed.sh) and for checking
// hetsim against it (tests/simgrid_flows.rs). The case arrives as plain text, written by
// tools/simgrid/flowcase-input.py:
//
//   LINKS                      then per link:  NAME BANDWIDTH_Bps LATENCY_s
//   FLOWS                      then per flow:  ID START_s SIZE_bytes HOPS LINK_INDEX...
//
// Each flow gets a source host in a star zone whose UP route is the flow's links, and every
// flow goes to one sink with no links, so a flow crosses exactly its own links (a link listed
// twice counts once, as the case format says and as star zones do). An actor per flow sleeps
// until the flow's start plus its route's latency, sends its bytes, and records the time; the
// completion times are printed as `ID END_s` lines. The links themselves have no latency: CM02
// weighs a flow by its route's latency once that is paid, and the case format (like hetsim)
// weighs every flow the same, which CM02 does for latency-free routes. So the latency is paid
// as a sleep, using no bandwidth, as the format says. The model is set here, so every caller
// gets the same semantics: CM02, factors 1, TCP-gamma 0, cross-traffic off, precision 1e-15.
#include <simgrid/s4u.hpp>
#include <xbt/log.h>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>
namespace sg4 = simgrid::s4u;

struct FlowSpec {
  std::string id;
  double start;
  double latency;
  double size;
  std::vector<int> hops;
};

int main(int argc, char** argv)
{
  sg4::Engine e(&argc, argv);
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CASE.txt\n", argv[0]);
    return 2;
  }
  xbt_log_control_set("root.thres:warning");
  for (const char* cfg : {"network/model:CM02", "network/latency-factor:1", "network/bandwidth-factor:1",
                          "network/TCP-gamma:0", "network/crosstraffic:0", "network/weight-S:0",
                          "maxmin/precision:1e-15", "surf/precision:1e-15"})
    sg4::Engine::set_config(cfg);
  std::ifstream in(argv[1]);
  size_t nlinks = 0;
  if (!(in >> nlinks)) {
    std::fprintf(stderr, "%s: expected the link count first\n", argv[1]);
    return 2;
  }
  auto* zone = sg4::create_star_zone("case");
  std::vector<sg4::Link*> links;
  std::vector<double> latency;
  for (size_t i = 0; i < nlinks; i++) {
    std::string name;
    double bw = 0, lat = 0;
    if (!(in >> name >> bw >> lat)) {
      std::fprintf(stderr, "%s: link %zu: expected NAME BANDWIDTH LATENCY\n", argv[1], i);
      return 2;
    }
    links.push_back(zone->create_link(name, bw)->seal());
    latency.push_back(lat);
  }
  size_t nflows = 0;
  in >> nflows;
  std::vector<FlowSpec> flows(nflows, FlowSpec{"", 0.0, 0.0, 0.0, {}});
  auto* sink = zone->create_host("sink", 1.0);
  std::vector<sg4::Host*> sources;
  for (size_t i = 0; i < nflows; i++) {
    FlowSpec& f = flows[i];
    size_t hops = 0;
    if (!(in >> f.id >> f.start >> f.size >> hops)) {
      std::fprintf(stderr, "%s: flow %zu: expected ID START SIZE HOPS\n", argv[1], i);
      return 2;
    }
    std::vector<sg4::LinkInRoute> route;
    for (size_t k = 0; k < hops; k++) {
      int l = -1;
      in >> l;
      if (l < 0 || static_cast<size_t>(l) >= links.size()) {
        std::fprintf(stderr, "%s: flow %zu: hop %zu is not a link index\n", argv[1], i, k);
        return 2;
      }
      route.emplace_back(links[l]);
      f.latency += latency[l];
    }
    auto* src = zone->create_host("src" + std::to_string(i), 1.0);
    zone->add_route(src->get_netpoint(), nullptr, nullptr, nullptr, route, false);
    sources.push_back(src);
  }
  zone->seal();
  std::vector<double> ends(nflows, -1.0);
  for (size_t i = 0; i < nflows; i++) {
    sg4::Actor::create("f" + std::to_string(i), sources[i], [i, &flows, &ends, sink, &sources] {
      sg4::this_actor::sleep_until(flows[i].start + flows[i].latency);
      sg4::Comm::sendto(sources[i], sink, flows[i].size);
      ends[i] = sg4::Engine::get_clock();
    });
  }
  e.run();
  for (size_t i = 0; i < nflows; i++)
    std::printf("%s %.17g\n", flows[i].id.c_str(), ends[i]);
  return 0;
}
