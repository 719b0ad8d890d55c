#!/usr/bin/python3
"""ps_ring.py: an MPI program in Python (mpi4py), as many users now write them. Python loads
mpi4py's module, and with it libmpi, with dlopen(RTLD_LOCAL): the MPI library is not in the
process's global scope, where a PMPI tool preloaded with LD_PRELOAD first looks for it.

    ps_ring.py healthy SECONDS   ring exchanges and a global sum, for SECONDS; rank 0 prints
                                 "ring ok ITERATIONS" and every rank exits 0
    ps_ring.py deadlock AFTER    the same, then after AFTER seconds rank 1 waits for a message
                                 (tag 4711) that rank 0 never sends, and the others wait for
                                 rank 1 in MPI_Barrier, for ever
    ps_ring.py spin AFTER        the same, then after AFTER seconds rank 1's solve stops
                                 converging: it loops for ever in Python (in converge()), and
                                 the others wait for it in MPI_Allreduce

With PS_READY_DIR set, each rank writes rank.N (its pid) there once MPI is up, and rank 1 writes
fault.1 as its spin begins (tests/programs/ready_file.h).
"""
import os
import sys
import time

from mpi4py import MPI


def write_ready_file(name):
    directory = os.environ.get("PS_READY_DIR")
    if not directory:
        return
    path = os.path.join(directory, name)
    temporary = "%s.tmp.%d" % (path, os.getpid())
    with open(temporary, "w") as f:
        f.write("%d\n" % os.getpid())
    os.rename(temporary, path)


def converge(x):
    while True:  # the bug: the residual never falls below the tolerance
        x = (x * 31 + 7) % 1000003
        if x < 0:
            return x


def main():
    mode, seconds = sys.argv[1], float(sys.argv[2])
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    write_ready_file("rank.%d" % rank)
    start = time.monotonic()
    iterations = 0
    while True:
        if mode == "spin" and rank == 1 and time.monotonic() - start >= seconds:
            write_ready_file("fault.1")
            converge(iterations)
        # Everyone agrees on when to stop, so that all leave the loop at the same iteration.
        # (A spinning job ends only when it is killed: no rank may leave before rank 1 spins.)
        done = comm.allreduce(1 if mode != "spin" and time.monotonic() - start >= seconds else 0, op=MPI.MAX)
        if done:
            break
        sink = sum(i * i for i in range(2000))  # a little work outside MPI
        request = comm.isend(sink + rank, dest=right, tag=1)
        comm.recv(source=left, tag=1)
        request.wait()
        iterations += 1
    if mode == "deadlock":
        if rank == 1:
            comm.recv(source=0, tag=4711)
        comm.Barrier()
    elif rank == 0:
        print("ring ok", iterations, flush=True)


main()
