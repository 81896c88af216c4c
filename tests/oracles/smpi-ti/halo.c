/* A 2-D halo exchange of 8 ranks (a 4 x 2 torus), for hetsim's SMPI-TI oracle: per
 * iteration 2 Mflop of computation (smpi_execute_flops: the same in every recording), then
 * Irecv/Isend of 256 KiB with the four neighbours and MPI_Waitall, a 64 KiB MPI_Sendrecv
 * with the rank across, and an 8-byte MPI_Allreduce. 5 iterations. */
#include <mpi.h>
#include <smpi/smpi.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int nx = 4, ny = size / 4, n = 256 * 1024 / 8;
  int x = rank % nx, y = rank / nx;
  int nb[4] = {y * nx + (x + 1) % nx, y * nx + (x + nx - 1) % nx,
               ((y + 1) % ny) * nx + x, ((y + ny - 1) % ny) * nx + x};
  double* out = calloc(4 * n, sizeof(double));
  double* in = calloc(4 * n, sizeof(double));
  double v = rank, s;
  for (int it = 0; it < 5; it++) {
    smpi_execute_flops(2e6);
    MPI_Request req[8];
    for (int k = 0; k < 4; k++)
      MPI_Irecv(in + k * n, n, MPI_DOUBLE, nb[k], k ^ 1, MPI_COMM_WORLD, &req[k]);
    for (int k = 0; k < 4; k++)
      MPI_Isend(out + k * n, n, MPI_DOUBLE, nb[k], k, MPI_COMM_WORLD, &req[4 + k]);
    MPI_Waitall(8, req, MPI_STATUSES_IGNORE);
    MPI_Sendrecv(out, 8192, MPI_DOUBLE, (rank + size / 2) % size, 9, in, 8192, MPI_DOUBLE,
                 (rank + size / 2) % size, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Allreduce(&v, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  free(out);
  free(in);
  MPI_Finalize();
  return 0;
}
