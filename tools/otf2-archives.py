#!/usr/bin/python3
"""Writes the OTF2 archives of tests/data/otf2/ with the official OTF2 writer (Debian's
python3-otf2, OTF2 3.0), following Score-P's record conventions: one location group
"MPI Rank i" per rank with one "Master thread" location, MPI_* regions of the MPI paradigm,
a COMM_LOCATIONS group of every location, MPI_COMM_WORLD over a COMM_GROUP of every rank,
MPI_COMM_SELF, and sub-communicators over COMM_GROUPs of world ranks. Timestamps are
nanoseconds (timer resolution 1e9), so the gaps hetsim replays are exact.

Usage: /usr/bin/python3 tools/otf2-archives.py [OUT_DIR]   (default tests/data/otf2; the
ring of `nonblocking` also goes to scenarios/traces/otf2-ring/, the shipped example)
"""
import os
import shutil
import sys

import otf2
from otf2.enums import (CollectiveOp, GroupType, LocationGroupType, LocationType,
                        MeasurementMode, Paradigm, RegionRole, Type)

KIB = 1024
MIB = 1024 * 1024
UNDEFINED = 0xFFFFFFFF

ROLES = {
    "MPI_Init": RegionRole.FUNCTION, "MPI_Finalize": RegionRole.FUNCTION,
    "MPI_Send": RegionRole.POINT2POINT, "MPI_Recv": RegionRole.POINT2POINT,
    "MPI_Isend": RegionRole.POINT2POINT, "MPI_Irecv": RegionRole.POINT2POINT,
    "MPI_Sendrecv": RegionRole.POINT2POINT, "MPI_Wait": RegionRole.FUNCTION,
    "MPI_Waitall": RegionRole.FUNCTION, "MPI_Test": RegionRole.FUNCTION,
    "MPI_Cancel": RegionRole.FUNCTION, "MPI_Barrier": RegionRole.BARRIER,
    "MPI_Bcast": RegionRole.COLL_ONE2ALL, "MPI_Reduce": RegionRole.COLL_ALL2ONE,
    "MPI_Allreduce": RegionRole.COLL_ALL2ALL, "MPI_Allgather": RegionRole.COLL_ALL2ALL,
    "MPI_Alltoall": RegionRole.COLL_ALL2ALL, "MPI_Reduce_scatter_block": RegionRole.COLL_ALL2ALL,
    "MPI_Gather": RegionRole.COLL_ALL2ONE, "MPI_Scatter": RegionRole.COLL_ONE2ALL,
    "MPI_Comm_split": RegionRole.FUNCTION,
}


class Archive:
    def __init__(self, out, name, ranks, chunk=1024 * 1024, subcomms=()):
        self.path = os.path.join(out, name)
        shutil.rmtree(self.path, ignore_errors=True)
        self.trace = otf2.writer.Writer(self.path, timer_resolution=1_000_000_000,
                                        chunk_size_events=chunk)
        d = self.trace.definitions
        machine = d.system_tree_node("machine")
        node = d.system_tree_node("node0", parent=machine)
        self.locs = []
        for r in range(ranks):
            group = d.location_group("MPI Rank %d" % r, system_tree_parent=node,
                                     location_group_type=LocationGroupType.PROCESS)
            self.locs.append(d.location("Master thread", group=group,
                                        type=LocationType.CPU_THREAD))
        self.regions = {n: d.region(n, paradigm=Paradigm.MPI, region_role=role)
                        for n, role in ROLES.items()}
        self.regions["compute"] = d.region("compute", paradigm=Paradigm.USER,
                                           region_role=RegionRole.FUNCTION)
        everyone = d.group("", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI,
                           members=self.locs)
        world_group = d.group("", group_type=GroupType.COMM_GROUP, paradigm=Paradigm.MPI,
                              members=list(range(ranks)))
        self_group = d.group("", group_type=GroupType.COMM_SELF, paradigm=Paradigm.MPI,
                             members=[])
        self.world = d.comm("MPI_COMM_WORLD", group=world_group)
        self.self_comm = d.comm("MPI_COMM_SELF", group=self_group)
        self.subs = []
        for i, members in enumerate(subcomms):
            g = d.group("", group_type=GroupType.COMM_GROUP, paradigm=Paradigm.MPI,
                        members=list(members))
            self.subs.append(d.comm("Comm %d" % (i + 2), group=g, parent=self.world))
        self.gpu = d.attribute("hetsim::gpu_buffer",
                               "1: the MPI call's buffer is in GPU memory, 0: in host memory",
                               Type.UINT8)
        self.w = [self.trace.event_writer_from_location(l) for l in self.locs]
        self.t = [1_000_000] * ranks

    def at(self, r, dt=0):
        self.t[r] += dt
        return self.t[r]

    def enter(self, r, region, dt=0):
        self.w[r].enter(self.at(r, dt), self.regions[region])

    def leave(self, r, region, dt=0):
        self.w[r].leave(self.at(r, dt), self.regions[region])

    def init(self, r):
        self.enter(r, "MPI_Init")
        self.leave(r, "MPI_Init", 500)

    def finalize(self, r):
        self.enter(r, "MPI_Finalize")
        self.leave(r, "MPI_Finalize", 200)

    def send(self, r, dst, tag, size, comm=None, attrs=None, dt=0):
        self.enter(r, "MPI_Send", dt)
        self.w[r].mpi_send(self.at(r, 100), dst, comm or self.world, tag, size,
                           attributes=attrs)
        self.leave(r, "MPI_Send", 300)

    def recv(self, r, src, tag, size, comm=None, dt=0):
        self.enter(r, "MPI_Recv", dt)
        self.w[r].mpi_recv(self.at(r, 400), src, comm or self.world, tag, size)
        self.leave(r, "MPI_Recv", 100)

    def collective(self, r, region, op, root, sent, received, comm=None, dt=0):
        self.enter(r, region, dt)
        self.w[r].mpi_collective_begin(self.at(r, 50))
        self.w[r].mpi_collective_end(self.at(r, 700), op, comm or self.world, root, sent,
                                     received)
        self.leave(r, region, 50)

    def close(self):
        self.trace.close()


def pingpong(out, name, compute_ns):
    """10 round trips of 1 MiB between two ranks, `compute_ns` of work before each send."""
    a = Archive(out, name, 2)
    for r in range(2):
        a.init(r)
    for i in range(10):
        a.send(0, 1, i, MIB, dt=compute_ns)
        a.recv(0, 1, i, MIB)
        a.recv(1, 0, i, MIB)
        a.send(1, 0, i, MIB, dt=compute_ns)
    for r in range(2):
        a.finalize(r)
    a.close()


def nonblocking(out, name="nonblocking"):
    """A ring of 4: Irecv from the left, Isend to the right, Waitall; an MPI_Test that
    fails before a wait; a cancelled receive; MPI_Wait on one request."""
    a = Archive(out, name, 4)
    n = 4
    for r in range(n):
        a.init(r)
    req = [100] * n
    for it in range(3):
        for r in range(n):
            left, right = (r - 1) % n, (r + 1) % n
            w = a.w[r]
            a.enter(r, "MPI_Irecv", 2_000)
            rr = req[r]; req[r] += 1
            w.mpi_irecv_request(a.at(r, 50), rr)
            a.leave(r, "MPI_Irecv", 50)
            a.enter(r, "MPI_Isend")
            sr = req[r]; req[r] += 1
            w.mpi_isend(a.at(r, 50), right, a.world, it, 64 * KIB, sr)
            a.leave(r, "MPI_Isend", 50)
            a.enter(r, "MPI_Test", 1_000)
            w.mpi_request_test(a.at(r, 20), rr)
            a.leave(r, "MPI_Test", 20)
            a.enter(r, "MPI_Waitall", 500)
            w.mpi_isend_complete(a.at(r, 300), sr)
            w.mpi_irecv(a.at(r, 300), left, a.world, it, 64 * KIB, rr)
            a.leave(r, "MPI_Waitall", 20)
    for r in range(n):
        w = a.w[r]
        # A receive posted, then cancelled: nothing arrives.
        a.enter(r, "MPI_Irecv", 1_000)
        w.mpi_irecv_request(a.at(r, 10), req[r])
        a.leave(r, "MPI_Irecv", 10)
        a.enter(r, "MPI_Cancel")
        w.mpi_request_cancelled(a.at(r, 10), req[r])
        a.leave(r, "MPI_Cancel", 10)
        req[r] += 1
        # One Isend to the left completed by MPI_Wait, received by a blocking MPI_Recv.
        a.enter(r, "MPI_Isend", 1_000)
        w.mpi_isend(a.at(r, 50), (r - 1) % n, a.world, 77, 4 * KIB, req[r])
        a.leave(r, "MPI_Isend", 50)
        a.recv(r, (r + 1) % n, 77, 4 * KIB)
        a.enter(r, "MPI_Wait")
        w.mpi_isend_complete(a.at(r, 100), req[r])
        a.leave(r, "MPI_Wait", 10)
        req[r] += 1
    for r in range(n):
        a.finalize(r)
    a.close()


def collectives(out):
    """Every collective hetsim replays, on 4 ranks, roots other than 0, Score-P's byte
    counts (per rank: what it sends and receives in all)."""
    n = 4
    a = Archive(out, "collectives", n)
    for r in range(n):
        a.init(r)
    b = 32 * KIB
    for r in range(n):
        a.collective(r, "MPI_Barrier", CollectiveOp.BARRIER, UNDEFINED, 0, 0, dt=5_000)
        a.collective(r, "MPI_Bcast", CollectiveOp.BCAST, 2,
                     b * n if r == 2 else 0, b, dt=5_000)
        a.collective(r, "MPI_Reduce", CollectiveOp.REDUCE, 1, b, b * n if r == 1 else 0,
                     dt=5_000)
        a.collective(r, "MPI_Allreduce", CollectiveOp.ALLREDUCE, UNDEFINED, b * n, b * n,
                     dt=5_000)
        a.collective(r, "MPI_Allgather", CollectiveOp.ALLGATHER, UNDEFINED, b * n, b * n,
                     dt=5_000)
        a.collective(r, "MPI_Alltoall", CollectiveOp.ALLTOALL, UNDEFINED, b * n, b * n,
                     dt=5_000)
        a.collective(r, "MPI_Reduce_scatter_block", CollectiveOp.REDUCE_SCATTER_BLOCK,
                     UNDEFINED, b * n, b, dt=5_000)
        a.collective(r, "MPI_Barrier", CollectiveOp.BARRIER, UNDEFINED, 0, 0,
                     comm=a.self_comm, dt=1_000)
    for r in range(n):
        a.finalize(r)
    a.close()


def gather(out):
    """An MPI_Gather, which hetsim does not replay: a run must say so."""
    n = 3
    a = Archive(out, "gather", n)
    for r in range(n):
        a.init(r)
        a.collective(r, "MPI_Gather", CollectiveOp.GATHER, 0, 1024, 1024 * n if r == 0 else 0,
                     dt=1_000)
        a.finalize(r)
    a.close()


def subcomm(out):
    """6 ranks; a communicator of world ranks 1, 3 and 5 (its ranks 0, 1, 2): messages on it
    with tags that also occur on MPI_COMM_WORLD, and an allreduce over it."""
    n = 6
    a = Archive(out, "subcomm", n, subcomms=[(1, 3, 5)])
    sub = a.subs[0]
    for r in range(n):
        a.init(r)
    # World: 0 -> 1 tag 5 (64 KiB); sub: its rank 2 (world 5) -> its rank 0 (world 1) tag 5.
    a.send(0, 1, 5, 64 * KIB, dt=1_000)
    a.send(5, 0, 5, 16 * KIB, comm=sub, dt=1_000)
    a.recv(1, 2, 5, 16 * KIB, comm=sub, dt=1_000)
    a.recv(1, 0, 5, 64 * KIB)
    for r in (1, 3, 5):
        a.collective(r, "MPI_Allreduce", CollectiveOp.ALLREDUCE, UNDEFINED, 3 * 8 * KIB,
                     3 * 8 * KIB, comm=sub, dt=2_000)
    for r in range(n):
        a.collective(r, "MPI_Barrier", CollectiveOp.BARRIER, UNDEFINED, 0, 0, dt=500)
        a.finalize(r)
    a.close()


def measurement(out):
    """Measurement switched off then on again between two exchanges: the time while it is
    off is not compute."""
    a = Archive(out, "measurement", 2)
    for r in range(2):
        a.init(r)
    a.send(0, 1, 0, 256 * KIB, dt=20_000)
    a.recv(1, 0, 0, 256 * KIB, dt=20_000)
    for r in range(2):
        a.w[r].measurement_on_off(a.at(r, 1_000), MeasurementMode.OFF)
        a.w[r].measurement_on_off(a.at(r, 5_000_000), MeasurementMode.ON)
    a.send(0, 1, 1, 256 * KIB, dt=30_000)
    a.recv(1, 0, 1, 256 * KIB, dt=30_000)
    for r in range(2):
        a.finalize(r)
    a.close()


def gpu_attribute(out):
    """Sends marked with the hetsim::gpu_buffer attribute: 0 (host) on the first, 1 (GPU)
    on the second, none on the third."""
    a = Archive(out, "gpu-attribute", 2)
    for r in range(2):
        a.init(r)
    for i, attrs in enumerate(({a.gpu: 0}, {a.gpu: 1}, None)):
        a.send(0, 1, i, 4 * MIB, attrs=attrs, dt=1_000)
        a.recv(1, 0, i, 4 * MIB, dt=1_000)
    for r in range(2):
        a.finalize(r)
    a.close()


def chunks(out):
    """Enough events to fill several 256 KiB chunks (OTF2's smallest), and compute regions
    that are not MPI."""
    a = Archive(out, "chunks", 2, chunk=256 * 1024)
    for r in range(2):
        a.init(r)
    for i in range(5_000):
        for r in range(2):
            a.enter(r, "compute", 10)
            a.leave(r, "compute", 90)
        a.send(0, 1, i % 7, 1000 + i)
        a.recv(1, 0, i % 7, 1000 + i)
    for r in range(2):
        a.finalize(r)
    a.close()


def broken(out):
    """A truncated and a garbled copy of pingpong, and one whose location file is missing."""
    src = os.path.join(out, "pingpong")
    for name in ("bad-truncated", "bad-garbled", "bad-missing"):
        dst = os.path.join(out, name)
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(src, dst)
    evt = os.path.join(out, "bad-truncated", "traces", "1.evt")
    data = open(evt, "rb").read()
    open(evt, "wb").write(data[: len(data) // 2])
    evt = os.path.join(out, "bad-garbled", "traces", "0.evt")
    data = bytearray(open(evt, "rb").read())
    data[40] = 0x5A  # a record type no OTF2 version defines, inside the first events
    data[41] = 0xF7  # and a length running past the file
    open(evt, "wb").write(bytes(data))
    os.remove(os.path.join(out, "bad-missing", "traces", "1.evt"))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "otf2")
    os.makedirs(out, exist_ok=True)
    pingpong(out, "pingpong", 0)
    pingpong(out, "pingpong-compute", 10_000)
    nonblocking(out)
    # The shipped example (scenarios/mpi-otf2.ron) is the same ring.
    nonblocking(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios",
                             "traces"), "otf2-ring")
    collectives(out)
    gather(out)
    subcomm(out)
    measurement(out)
    gpu_attribute(out)
    chunks(out)
    broken(out)


if __name__ == "__main__":
    main()
