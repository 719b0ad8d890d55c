! ps_progress_fortran: a Fortran rank for the progress library's tests (libparastack-progress.so
! preloaded), through `use mpi` (Open MPI's mpi_recv_ and friends, which call PMPI_ directly and
! so are wrapped by the library's Fortran entry points). Two ranks: both duplicate MPI_COMM_WORLD
! and agree on a sum over the copy (one collective on it); then rank 1 blocks in MPI_Recv from
! rank 0 with tag 4711, which rank 0 never sends, and rank 0 waits for rank 1 in MPI_Barrier, for
! ever. Each rank writes $PS_READY_DIR/rank.N (its pid) just before it blocks.
program ps_progress_fortran
  use mpi
  implicit none
  integer, parameter :: never_sent_tag = 4711
  integer :: ierr, rank, copy, total, value
  integer :: status(MPI_STATUS_SIZE)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, copy, ierr)
  call MPI_Allreduce(rank, total, 1, MPI_INTEGER, MPI_SUM, copy, ierr)
  call announce(rank)
  if (rank == 1) then
    call MPI_Recv(value, 1, MPI_INTEGER, 0, never_sent_tag, MPI_COMM_WORLD, status, ierr)
  else
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
  end if
  call MPI_Comm_free(copy, ierr)
  call MPI_Finalize(ierr)

contains

  subroutine announce(r)
    integer, intent(in) :: r
    character(len=4096) :: dir
    character(len=4200) :: path
    character(len=16) :: number
    integer :: length, status
    call get_environment_variable("PS_READY_DIR", dir, length, status)
    if (status /= 0 .or. length == 0) return
    write (number, '(I0)') r
    write (path, '(A,A,A)') trim(dir), "/rank.tmp.", trim(number)
    open (unit=10, file=trim(path), status="replace", action="write")
    write (10, '(I0)') getpid()
    close (10)
    call rename(trim(path), trim(dir)//"/rank."//trim(number))
  end subroutine announce

end program ps_progress_fortran
