! ps_ring_fortran: a healthy Fortran MPI program (`use mpi`), built for Open MPI (ps_ring_fortran)
! and, where MPICH is installed, for MPICH (ps_ring_fortran_mpich), whose Fortran entry points have
! other names behind them than Open MPI's. Each iteration duplicates MPI_COMM_WORLD, exchanges with
! the ring neighbours on the copy (MPI_Isend, MPI_Irecv, MPI_Waitall), agrees on a sum
! (MPI_Allreduce) and frees the copy. Rank 0 prints "ring ok ITERATIONS"; exit status 0.
!
!   ps_ring_fortran ITERATIONS
program ps_ring_fortran
  use mpi
  implicit none
  integer :: ierr, rank, nranks, copy, i, iterations, total, incoming
  integer :: requests(2)
  character(len=32) :: argument

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  iterations = 100
  if (command_argument_count() >= 1) then
    call get_command_argument(1, argument)
    read (argument, *) iterations
  end if
  do i = 1, iterations
    call MPI_Comm_dup(MPI_COMM_WORLD, copy, ierr)
    call MPI_Irecv(incoming, 1, MPI_INTEGER, mod(rank + nranks - 1, nranks), 7, copy, requests(1), ierr)
    call MPI_Isend(rank, 1, MPI_INTEGER, mod(rank + 1, nranks), 7, copy, requests(2), ierr)
    call MPI_Waitall(2, requests, MPI_STATUSES_IGNORE, ierr)
    call MPI_Allreduce(incoming, total, 1, MPI_INTEGER, MPI_SUM, copy, ierr)
    call MPI_Comm_free(copy, ierr)
  end do
  if (rank == 0) print '(a, i0)', 'ring ok ', iterations
  call MPI_Finalize(ierr)
end program ps_ring_fortran
