! ps_target_fortran: a Fortran MPI program for the sampler tests. Every rank but the last waits in
! MPI_Barrier; the last computes forever, so the barrier never completes. Each rank writes
! $PS_READY_DIR/rank.N (its pid) just before.
program ps_target_fortran
  use mpi
  implicit none
  integer :: ierr, rank, nranks

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  call announce(rank)
  if (rank == nranks - 1) then
    call fortran_compute()
  else
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
  end if
  call MPI_Finalize(ierr)

contains

  subroutine announce(r)
    integer, intent(in) :: r
    character(len=4096) :: dir
    character(len=4200) :: path
    integer :: length, status
    call get_environment_variable("PS_READY_DIR", dir, length, status)
    if (status /= 0 .or. length == 0) return
    write (path, '(A,A,I0)') trim(dir), "/rank.tmp.", r
    open (unit=10, file=trim(path), status="replace", action="write")
    write (10, '(I0)') getpid()
    close (10)
    call rename(trim(path), trim(dir)//"/rank."//trim(itoa(r)))
  end subroutine announce

  function itoa(i) result(text)
    integer, intent(in) :: i
    character(len=16) :: text
    write (text, '(I0)') i
  end function itoa

  subroutine fortran_compute()
    double precision :: x
    integer :: i
    x = 0
    do
      do i = 1, 100000
        x = x + 1.0d0 / dble(i)
      end do
      if (x < 0) exit
    end do
  end subroutine fortran_compute

end program ps_target_fortran
