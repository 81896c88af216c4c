// SimGrid's answer to one question hetsim must match: how does a flow share a link that its
// route lists twice? (StarPU's bus platform files route cross-socket GPU-GPU copies through
// `Host` twice, e.g. attila CUDA0 -> CUDA2.) Build and run with tools/simgrid/run.sh.
//
// SimGrid 3.32, CM02 without factors, links of 1 GB/s, 1 GB each:
//   A->B [L,L] alone: 2 s            (the link counts twice: weight 2)
//   A->C [L,M,L] alone: 2 s          (also when the repeats are not adjacent)
//   A->B [L,L] with C->B [L]: 3 s and 3 s (2r + r = 1 GB/s, equal rates)
// hetsim charges the same (MaxMin::add_flow weights; tests/cli.rs
// a_link_listed_twice_is_loaded_twice_as_in_simgrid checks these three answers).
#include <simgrid/s4u.hpp>
#include <cstdio>
#include <string>
namespace sg4 = simgrid::s4u;

static void send(const char* src, const char* dst, const char* label)
{
  double t0 = sg4::Engine::get_clock();
  sg4::Comm::sendto(sg4::Host::by_name(src), sg4::Host::by_name(dst), 1e9);
  std::printf("%s: %g s\n", label, sg4::Engine::get_clock() - t0);
}

int main(int argc, char** argv)
{
  sg4::Engine e(&argc, argv);
  e.load_platform(argv[1]);
  std::string mode = argv[2];
  auto a = sg4::Host::by_name("A");
  auto c = sg4::Host::by_name("C");
  if (mode == "dup") {
    sg4::Actor::create("s", a, [] { send("A", "B", "A->B [L,L] alone"); });
  } else if (mode == "split") {
    sg4::Actor::create("s", a, [] { send("A", "C", "A->C [L,M,L] alone"); });
  } else {
    sg4::Actor::create("s1", a, [] { send("A", "B", "A->B [L,L] shared"); });
    sg4::Actor::create("s2", c, [] { send("C", "B", "C->B [L] shared"); });
  }
  e.run();
  return 0;
}
