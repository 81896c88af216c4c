/* Every action SMPI's time-independent traces hold, on 4 ranks, for hetsim's SMPI-TI
 * oracle: Irecv/Isend/Wait, Sendrecv, Send/Recv, the collectives (rooted ones at roots
 * other than 0) and their v-variants, with datatypes of several sizes and 1 Mflop of
 * computation between calls. */
#include <mpi.h>
#include <smpi/smpi.h>

#define WORK smpi_execute_flops(1e6)

int main(int argc, char** argv) {
  int rank, size;
  static double buf[65536], r[65536];
  MPI_Request req[2];
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  MPI_Irecv(r, 1089, MPI_DOUBLE, left, 1024, MPI_COMM_WORLD, &req[0]);
  WORK;
  MPI_Isend(buf, 1089, MPI_DOUBLE, right, 1024, MPI_COMM_WORLD, &req[1]);
  MPI_Wait(&req[0], MPI_STATUS_IGNORE);
  MPI_Wait(&req[1], MPI_STATUS_IGNORE);
  WORK;
  MPI_Sendrecv(buf, 10000, MPI_INT, right, 5, r, 10000, MPI_INT, left, 5, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  WORK;
  if (rank % 2 == 0) {
    MPI_Send(buf, 3000, MPI_CHAR, right, 7, MPI_COMM_WORLD);
    MPI_Recv(r, 3000, MPI_CHAR, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    MPI_Recv(r, 3000, MPI_CHAR, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(buf, 3000, MPI_CHAR, right, 7, MPI_COMM_WORLD);
  }
  WORK;
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Bcast(buf, 4000, MPI_DOUBLE, 1, MPI_COMM_WORLD);
  WORK;
  MPI_Reduce(buf, r, 4000, MPI_INT, MPI_SUM, 2, MPI_COMM_WORLD);
  WORK;
  MPI_Allreduce(buf, r, 500, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  WORK;
  MPI_Allgather(buf, 2000, MPI_FLOAT, r, 2000, MPI_FLOAT, MPI_COMM_WORLD);
  WORK;
  MPI_Alltoall(buf, 800, MPI_LONG, r, 800, MPI_LONG, MPI_COMM_WORLD);
  WORK;
  int counts[4] = {1000, 2000, 3000, 4000}, displs[4] = {0, 1000, 3000, 6000};
  MPI_Allgatherv(buf, counts[rank], MPI_DOUBLE, r, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
  WORK;
  MPI_Gather(buf, 500, MPI_DOUBLE, r, 500, MPI_DOUBLE, 3, MPI_COMM_WORLD);
  WORK;
  MPI_Scatter(buf, 500, MPI_DOUBLE, r, 500, MPI_DOUBLE, 1, MPI_COMM_WORLD);
  WORK;
  MPI_Reduce_scatter(buf, r, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  WORK;
  /* Rank r exchanges 100 (r + j + 1) doubles with rank j, both ways. */
  int sc[4], sd[4];
  for (int j = 0, d = 0; j < 4; d += sc[j], j++) {
    sc[j] = 100 * (rank + j + 1);
    sd[j] = d;
  }
  MPI_Alltoallv(buf, sc, sd, MPI_DOUBLE, r, sc, sd, MPI_DOUBLE, MPI_COMM_WORLD);
  WORK;
  MPI_Gatherv(buf, counts[rank], MPI_DOUBLE, r, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  WORK;
  MPI_Scatterv(buf, counts, displs, MPI_DOUBLE, r, counts[rank], MPI_DOUBLE, 2, MPI_COMM_WORLD);
  WORK;
  MPI_Finalize();
  return 0;
}
