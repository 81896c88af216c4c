// Several SMPI time-independent traces replayed at once on one platform, each an application
// instance of its own (SimGrid's replay_multiple, written for hetsim's jobs oracle).
//
// Usage: replay-multiple PLATFORM DEPLOYMENT INSTANCES [--cfg=...]
//   INSTANCES: one line per instance: NAME RANKS
//   DEPLOYMENT: actors with function NAME and arguments NAME RANK TRACE START_DELAY_FLOPS
// Prints, for every rank when its replay ends: `end NAME RANK SECONDS`.
#include <simgrid/s4u.hpp>
#include <smpi/smpi.h>

#include <cstdio>
#include <fstream>
#include <string>

static void replay_rank(int argc, char* argv[])
{
    const char* instance = argv[1];
    int rank = std::stoi(argv[2]);
    const char* trace = argv[3];
    double delay_flops = argc > 4 ? std::stod(argv[4]) : 0.0;
    smpi_replay_run(instance, rank, delay_flops, trace);
    std::printf("end %s %d %.12f\n", instance, rank, simgrid::s4u::Engine::get_clock());
}

int main(int argc, char* argv[])
{
    simgrid::s4u::Engine engine(&argc, argv);
    SMPI_init();
    if (argc < 4) {
        std::fprintf(stderr, "usage: %s PLATFORM DEPLOYMENT INSTANCES\n", argv[0]);
        return 2;
    }
    engine.load_platform(argv[1]);
    std::ifstream instances(argv[3]);
    std::string name;
    int ranks = 0;
    while (instances >> name >> ranks)
        SMPI_app_instance_register(name.c_str(), replay_rank, ranks);
    engine.load_deployment(argv[2]);
    engine.run();
    SMPI_finalize();
    return 0;
}
