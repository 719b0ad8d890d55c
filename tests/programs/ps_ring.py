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
    ps_ring.py loop AFTER [RANK] the same, but the loop that never ends calls two Python helpers on
                                 every pass (solve_forever() calling relax() and residual()), as a
                                 real solver's iteration does
    ps_ring.py loop-kernel AFTER [RANK]
                                 the same, but each pass calls relax() and a C extension's kernel
                                 (hashlib's SHA-256, OpenSSL's code), as a numpy solver's does
    ps_ring.py sleep AFTER [RANK]
                                 the same, but rank RANK sleeps for ever (time.sleep)
    ps_ring.py alone             no MPI: one process spins in converge() at once, as rank 1's
                                 spin does (for interpreters without mpi4py); it writes rank.1
                                 and fault.1

With PS_RING_MPI=ctypes the ring calls libmpi (Open MPI's libmpi.so.40) through ctypes instead of
mpi4py, whose module is built for one interpreter only (Debian's): so any CPython runs it, a
pyenv or conda 3.12 or 3.13 among them. The same job, the same faults.

With PS_READY_DIR set, each rank writes rank.N (its pid) there once MPI is up, and the faulty rank
writes fault.RANK as its fault begins (tests/programs/ready_file.h). With PS_RING_IMPORT_AFTER=FILE
each rank first writes python.N (N from OMPI_COMM_WORLD_RANK) and imports mpi4py, which loads
libmpi, only once FILE exists: a test samples a rank whose MPI library is not loaded yet.
"""
import hashlib
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


class CtypesComm:
    """The few calls of mpi4py's COMM_WORLD this ring makes, on integers, through ctypes."""

    MAX = "ompi_mpi_op_max"

    def __init__(self):
        import ctypes

        self.c = ctypes
        # RTLD_GLOBAL, as mpicc's programs have it: Open MPI's components, loaded by MPI_Init,
        # find the library's symbols in the global scope.
        self.lib = ctypes.CDLL("libmpi.so.40", mode=ctypes.RTLD_GLOBAL)
        self.world = self.handle("ompi_mpi_comm_world")
        self.long = self.handle("ompi_mpi_long")
        self.check(self.lib.MPI_Init(None, None), "MPI_Init")

    def handle(self, symbol):  # Open MPI's handles are the addresses of its predefined objects
        return self.c.c_void_p(self.c.addressof(self.c.c_char.in_dll(self.lib, symbol)))

    @staticmethod
    def check(code, call):
        if code != 0:
            raise RuntimeError("%s failed: %d" % (call, code))

    def Get_rank(self):
        rank = self.c.c_int()
        self.check(self.lib.MPI_Comm_rank(self.world, self.c.byref(rank)), "MPI_Comm_rank")
        return rank.value

    def Get_size(self):
        size = self.c.c_int()
        self.check(self.lib.MPI_Comm_size(self.world, self.c.byref(size)), "MPI_Comm_size")
        return size.value

    def allreduce(self, value, op):
        mine, total = self.c.c_long(value), self.c.c_long()
        self.check(
            self.lib.MPI_Allreduce(
                self.c.byref(mine), self.c.byref(total), 1, self.long, self.handle(op), self.world
            ),
            "MPI_Allreduce",
        )
        return total.value

    def isend(self, value, dest, tag):
        comm, buffer, request = self, self.c.c_long(value), self.c.c_void_p()
        self.check(
            self.lib.MPI_Isend(self.c.byref(buffer), 1, self.long, dest, tag, self.world, self.c.byref(request)),
            "MPI_Isend",
        )

        class Request:
            def wait(self):
                comm.check(comm.lib.MPI_Wait(comm.c.byref(request), None), "MPI_Wait")
                buffer.value  # kept alive until the send is complete

        return Request()

    def recv(self, source, tag):
        buffer = self.c.c_long()
        self.check(self.lib.MPI_Recv(self.c.byref(buffer), 1, self.long, source, tag, self.world, None), "MPI_Recv")
        return buffer.value

    def Barrier(self):
        self.check(self.lib.MPI_Barrier(self.world), "MPI_Barrier")

    def finalize(self):
        self.check(self.lib.MPI_Finalize(), "MPI_Finalize")


def converge(x):
    while True:  # the bug: the residual never falls below the tolerance
        x = (x * 31 + 7) % 1000003
        if x < 0:
            return x


def relax(x):
    for _ in range(200):
        x = (x * 31 + 7) % 1000003
    return x


def residual(x):
    r = 1
    for i in range(200):
        r += (x >> (i % 20)) & 1
    return r


def solve_forever(x):
    while True:  # the bug: the residual never falls below the tolerance
        x = relax(x)
        if residual(x) < 0:
            return x


def solve_with_a_kernel_forever(x):
    block = bytes(range(256)) * 64
    while True:  # the same bug; the residual comes from an extension's C code
        x = relax(x)
        if hashlib.sha256(block).digest()[0] + x < 0:
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
    if os.environ.get("PS_RING_MPI") == "ctypes":
        comm = CtypesComm()
        maximum = CtypesComm.MAX
    else:
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
        maximum = MPI.MAX

    mode, seconds = sys.argv[1], float(sys.argv[2])
    faulty = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    rank, size = comm.Get_rank(), comm.Get_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    write_ready_file("rank.%d" % rank)
    # A spinning or sleeping job ends only when it is killed: no rank may leave before the fault.
    end = seconds if mode in ("healthy", "deadlock") else float("inf")
    start = time.monotonic()
    iterations = 0
    while True:
        if mode in ("spin", "loop", "loop-kernel", "sleep") and rank == faulty and time.monotonic() - start >= seconds:
            write_ready_file("fault.%d" % rank)
            if mode == "spin":
                converge(iterations)
            if mode == "loop":
                solve_forever(iterations)
            if mode == "loop-kernel":
                solve_with_a_kernel_forever(iterations)
            time.sleep(1e9)
        # Everyone agrees on when to stop, so that all leave the loop at the same iteration.
        done = comm.allreduce(1 if time.monotonic() - start >= end else 0, op=maximum)
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
    if isinstance(comm, CtypesComm):
        comm.finalize()  # mpi4py finalizes at exit


main()
