/* One MPI operation, timed under SimGrid's SMPI, for hetsim's SMPI oracle (run.sh).
 *
 *   coll OP BYTES [ROOT]
 *
 * OP is pingpong, bcast, reduce, reduce_int, allreduce, allgather, alltoall, reduce_scatter
 * or barrier. reduce_int reduces BYTES / 4 MPI_INTs: SMPI's `rab` reduce refuses MPI_CHAR.
 * BYTES follows hetsim's trace grammar: the vector for bcast, reduce, allreduce and
 * reduce_scatter (split in p blocks of BYTES/p, which must be whole), what each rank
 * contributes for allgather, what each rank sends each peer for alltoall, the message for
 * pingpong (one round trip between ranks 0 and 1). Ranks 0 and 1 of pingpong use blocking
 * sends; the collectives use the algorithm smpirun is told. Every rank stamps MPI_Wtime() once the
 * operation returns; rank 0 prints the latest stamp: "OP BYTES p SECONDS". The algorithm is
 * the one smpirun is told (--cfg=smpi/OP:ALGO). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int me, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (argc < 3) {
    if (me == 0)
      fprintf(stderr, "usage: coll OP BYTES [ROOT]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const char *op = argv[1];
  long n = atol(argv[2]);
  int root = argc > 3 ? atoi(argv[3]) : 0;
  long big = n * (long)p;
  /* Contents do not matter: SMPI's shared allocation keeps 64 ranks' 256 MiB buffers in one. */
  char *a = SMPI_SHARED_MALLOC(big > 0 ? big : 1);
  char *b = SMPI_SHARED_MALLOC(big > 0 ? big : 1);
  int *counts = malloc(sizeof(int) * p);

  double t0 = MPI_Wtime();
  if (!strcmp(op, "pingpong")) {
    if (me == 0) {
      MPI_Send(a, n, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(b, n, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (me == 1) {
      MPI_Recv(b, n, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(a, n, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
    }
  } else if (!strcmp(op, "bcast")) {
    MPI_Bcast(a, n, MPI_CHAR, root, MPI_COMM_WORLD);
  } else if (!strcmp(op, "reduce")) {
    MPI_Reduce(a, b, n, MPI_CHAR, MPI_SUM, root, MPI_COMM_WORLD);
  } else if (!strcmp(op, "reduce_int")) {
    MPI_Reduce(a, b, n / 4, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
  } else if (!strcmp(op, "allreduce")) {
    MPI_Allreduce(a, b, n, MPI_CHAR, MPI_SUM, MPI_COMM_WORLD);
  } else if (!strcmp(op, "allgather")) {
    MPI_Allgather(a, n, MPI_CHAR, b, n, MPI_CHAR, MPI_COMM_WORLD);
  } else if (!strcmp(op, "alltoall")) {
    MPI_Alltoall(a, n, MPI_CHAR, b, n, MPI_CHAR, MPI_COMM_WORLD);
  } else if (!strcmp(op, "reduce_scatter")) {
    for (int i = 0; i < p; i++)
      counts[i] = n / p;
    MPI_Reduce_scatter(a, b, counts, MPI_CHAR, MPI_SUM, MPI_COMM_WORLD);
  } else if (!strcmp(op, "barrier")) {
    MPI_Barrier(MPI_COMM_WORLD);
  } else {
    if (me == 0)
      fprintf(stderr, "coll: unknown operation %s\n", op);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  double t = MPI_Wtime() - t0, last = 0;
  MPI_Reduce(&t, &last, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (me == 0)
    printf("%s %ld %d %.12e\n", op, n, p, last);
  SMPI_SHARED_FREE(a);
  SMPI_SHARED_FREE(b);
  free(counts);
  MPI_Finalize();
  return 0;
}
