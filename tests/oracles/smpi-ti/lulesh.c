/* A LULESH-like proxy for hetsim's SMPI-TI oracle and its replay-speed comparison with
 * SMPI: 64 ranks on a 4^3 cube (no wrap-around, as in LULESH). Per iteration 100 kflop of
 * computation, a 26-neighbour Irecv/Isend/Waitall exchange of faces (3 x 48^2 doubles,
 * 55 KB: eager), edges (3 x 48) and corners (3), 20 kflop, a 6-face gradient exchange,
 * 20 kflop, and an 8-byte MPI_Allreduce (at 1 Gflop/s: 140 us of compute against about 60 us of
 * communication per iteration). 10 iterations (argv[1] changes it). */
#include <mpi.h>
#include <smpi/smpi.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int p = 1;
  while ((p + 1) * (p + 1) * (p + 1) <= size) p++;
  const int n = 48, iterations = argc > 1 ? atoi(argv[1]) : 10;
  int x = rank % p, y = (rank / p) % p, z = rank / (p * p);
  double* buf = calloc(2 * 27 * 3 * n * n, sizeof(double));
  double dt = 1.0, all;
  for (int it = 0; it < iterations; it++) {
    smpi_execute_flops(1e5);
    for (int phase = 0; phase < 2; phase++) {
      MPI_Request req[52];
      int k = 0;
      for (int dz = -1; dz <= 1; dz++)
        for (int dy = -1; dy <= 1; dy++)
          for (int dx = -1; dx <= 1; dx++) {
            int nx = x + dx, ny = y + dy, nz = z + dz;
            int faces = (dx == 0) + (dy == 0) + (dz == 0);
            if (faces == 3 || nx < 0 || ny < 0 || nz < 0 || nx >= p || ny >= p || nz >= p)
              continue;
            /* gradients: faces only */
            if (phase == 1 && faces != 2) continue;
            int count = 3 * (faces == 2 ? n * n : faces == 1 ? n : 1);
            int peer = (nz * p + ny) * p + nx;
            int slot = (dz + 1) * 9 + (dy + 1) * 3 + (dx + 1);
            MPI_Irecv(buf + slot * 3 * n * n, count, MPI_DOUBLE, peer, 26 - slot,
                      MPI_COMM_WORLD, &req[k++]);
            MPI_Isend(buf + (27 + slot) * 3 * n * n, count, MPI_DOUBLE, peer, slot,
                      MPI_COMM_WORLD, &req[k++]);
          }
      MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
      smpi_execute_flops(2e4);
    }
    MPI_Allreduce(&dt, &all, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  }
  free(buf);
  MPI_Finalize();
  return 0;
}
