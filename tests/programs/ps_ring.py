#!/usr/bin/python3
"""ps_ring.py: an MPI program in Python (mpi4py), as many users now write them. Python loads
mpi4py's module, and with it libmpi, with dlopen(RTLD_LOCAL): the MPI library is not in the
process's global scope, where a PMPI tool preloaded with LD_PRELOAD first looks for it.

    ps_ring.py healthy SECONDS   ring exchanges and a global sum, for SECONDS; rank 0 prints
                                 "ring ok ITERATIONS" and every rank exits 0
    ps_ring.py deadlock AFTER [RANK]
                                 the same, then after AFTER seconds rank RANK (default 1) waits
                                 for a message (tag 4711) that its right neighbour never sends,
                                 and the others wait for it in MPI_Barrier, for ever
    ps_ring.py spin AFTER [RANK] the ring, until after AFTER seconds rank RANK's solve stops
                                 converging: it loops for ever in Python (in converge()), and the
                                 others wait for it in MPI_Allreduce
    ps_ring.py sleep AFTER [RANK]
                                 the same, but rank RANK sleeps for ever (time.sleep)
    ps_ring.py alone             no MPI: one process spins in converge() at once, as rank 1's
                                 spin does (for interpreters without mpi4py); it writes rank.1
                                 and fault.1

With PS_READY_DIR set, each rank writes rank.N (its pid) there once MPI is up, and the faulty rank
writes fault.RANK as its fault begins (tests/programs/ready_file.h). With PS_RING_IMPORT_AFTER=FILE
each rank first writes python.N (N from OMPI_COMM_WORLD_RANK) and imports mpi4py, which loads
libmpi, only once FILE exists: a test samples a rank whose MPI library is not loaded yet.
"""
import os
import sys
import time


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
    if sys.argv[1] == "alone":
        write_ready_file("rank.1")
        write_ready_file("fault.1")
        converge(0)
    import_after = os.environ.get("PS_RING_IMPORT_AFTER")
    if import_after:
        write_ready_file("python.%s" % os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
        while not os.path.exists(import_after):
            time.sleep(0.01)
    from mpi4py import MPI

    mode, seconds = sys.argv[1], float(sys.argv[2])
    faulty = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    write_ready_file("rank.%d" % rank)
    # A spinning or sleeping job ends only when it is killed: no rank may leave before the fault.
    end = seconds if mode in ("healthy", "deadlock") else float("inf")
    start = time.monotonic()
    iterations = 0
    while True:
        if mode in ("spin", "sleep") and rank == faulty and time.monotonic() - start >= seconds:
            write_ready_file("fault.%d" % rank)
            if mode == "spin":
                converge(iterations)
            time.sleep(1e9)
        # Everyone agrees on when to stop, so that all leave the loop at the same iteration.
        done = comm.allreduce(1 if time.monotonic() - start >= end else 0, op=MPI.MAX)
        if done:
            break
        sink = sum(i * i for i in range(2000))  # a little work outside MPI
        request = comm.isend(sink + rank, dest=right, tag=1)
        comm.recv(source=left, tag=1)
        request.wait()
        iterations += 1
    if mode == "deadlock":
        if rank == faulty:
            write_ready_file("fault.%d" % rank)
            comm.recv(source=right, tag=4711)
        comm.Barrier()
    elif rank == 0:
        print("ring ok", iterations, flush=True)


main()
