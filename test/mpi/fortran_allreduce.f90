! fortran_allreduce.f90 - MPI_ALLREDUCE called from Fortran reaches SAMPI.
!
! Open MPI's Fortran bindings call PMPI_Allreduce directly, so SAMPI must
! interpose the Fortran entry points themselves.  One argument picks the
! binding, so that fortran.test can count SAMPI's log lines per binding:
!   mpi   'use mpi'
!   mpif  "include 'mpif.h'"
!   f08   'use mpi_f08'
! Each makes exactly four MPI_ALLREDUCE calls (MPI_INTEGER MPI_SUM,
! MPI_DOUBLE_PRECISION MPI_SUM, MPI_INTEGER MPI_SUM with MPI_IN_PLACE,
! MPI_LOGICAL MPI_LAND) and checks every result exactly (the double inputs
! are quarters, so their sums are exact in any order).  Verdicts are combined
! with MPI_REDUCE, which SAMPI does not touch, and printed as PASS/FAIL.

program fortran_allreduce
    use mpi
    implicit none
    character(len=16) :: which
    integer :: ierr, rank, nfail

    call MPI_INIT(ierr)
    call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
    call get_command_argument(1, which)
    select case (trim(which))
    case ('mpi')
        call with_use_mpi(nfail)
    case ('mpif')
        call with_mpif_h(nfail)
    case ('f08')
        call with_mpi_f08(nfail)
    case default
        if (rank == 0) print '(3a)', 'fortran_allreduce: unknown binding "', trim(which), &
            '" (want mpi, mpif or f08)'
        nfail = 1
    end select
    if (rank == 0) print '(3a,i0,a)', 'fortran_allreduce: ', trim(which), ': ', nfail, ' failed'
    call MPI_FINALIZE(ierr)
    if (nfail /= 0) stop 1
end program fortran_allreduce

subroutine with_use_mpi(nfail)
    use mpi
    implicit none
    integer, intent(out) :: nfail
    integer, parameter :: n = 1000
    integer :: ierr, rank, nproc, i
    integer :: ia(n), ib(n)
    double precision :: da(n), db(n)
    logical :: la(n), lb(n), ok

    nfail = 0
    call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
    call MPI_COMM_SIZE(MPI_COMM_WORLD, nproc, ierr)
    do i = 1, n
        ia(i) = rank * n - i
        da(i) = dble(rank) + 0.25d0 * dble(i)
        ! False on exactly one rank, except where i mod (nproc+1) == nproc.
        la(i) = mod(i, nproc + 1) /= rank
    end do

    call MPI_ALLREDUCE(ia, ib, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    ok = ierr == MPI_SUCCESS
    do i = 1, n
        ok = ok .and. ib(i) == n * nproc * (nproc - 1) / 2 - nproc * i
    end do
    call report('use mpi: MPI_INTEGER MPI_SUM', ok)

    call MPI_ALLREDUCE(da, db, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    ok = ierr == MPI_SUCCESS
    do i = 1, n
        ok = ok .and. db(i) == dble(nproc * (nproc - 1) / 2) + 0.25d0 * dble(i * nproc)
    end do
    call report('use mpi: MPI_DOUBLE_PRECISION MPI_SUM', ok)

    ib = ia
    call MPI_ALLREDUCE(MPI_IN_PLACE, ib, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    ok = ierr == MPI_SUCCESS
    do i = 1, n
        ok = ok .and. ib(i) == n * nproc * (nproc - 1) / 2 - nproc * i
    end do
    call report('use mpi: MPI_IN_PLACE MPI_INTEGER MPI_SUM', ok)

    call MPI_ALLREDUCE(la, lb, n, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
    ok = ierr == MPI_SUCCESS
    do i = 1, n
        ok = ok .and. (lb(i) .eqv. (mod(i, nproc + 1) == nproc))
    end do
    call report('use mpi: MPI_LOGICAL MPI_LAND', ok)

contains

    subroutine report(name, ok)
        character(len=*), intent(in) :: name
        logical, intent(in) :: ok
        logical :: all
        call MPI_REDUCE(ok, all, 1, MPI_LOGICAL, MPI_LAND, 0, MPI_COMM_WORLD, ierr)
        call MPI_BCAST(all, 1, MPI_LOGICAL, 0, MPI_COMM_WORLD, ierr)
        if (.not. all) nfail = nfail + 1
        if (rank == 0 .and. all) print '(2a)', 'PASS ', name
        if (rank == 0 .and. .not. all) print '(2a)', 'FAIL ', name
    end subroutine report
end subroutine with_use_mpi

subroutine with_mpif_h(nfail)
    implicit none
    include 'mpif.h'
    ! gfortran >= 10 rejects calls to one implicit-interface procedure with
    ! buffers of different types in the same file.  This interface is the
    ! one Open MPI's own 'mpi' module declares (choice buffers exempt from
    ! type checks); the call still goes to the mpif.h entry point.
    interface
        subroutine MPI_ALLREDUCE(sendbuf, recvbuf, count, datatype, op, comm, ierror)
            !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
            real, dimension(*) :: sendbuf, recvbuf
            integer, intent(in) :: count, datatype, op, comm
            integer, intent(out) :: ierror
        end subroutine MPI_ALLREDUCE
    end interface
    integer, intent(out) :: nfail
    integer, parameter :: n = 1000
    integer :: ierr, rank, nproc, i
    integer :: ia(n), ib(n)
    double precision :: da(n), db(n)
    logical :: la(n), lb(n), ok

    nfail = 0
    call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
    call MPI_COMM_SIZE(MPI_COMM_WORLD, nproc, ierr)
    do i = 1, n
        ia(i) = rank * n - i
        da(i) = dble(rank) + 0.25d0 * dble(i)
        la(i) = mod(i, nproc + 1) /= rank
    end do

    call MPI_ALLREDUCE(ia, ib, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    ok = ierr == MPI_SUCCESS
    do i = 1, n
        ok = ok .and. ib(i) == n * nproc * (nproc - 1) / 2 - nproc * i
    end do
    call report('mpif.h: MPI_INTEGER MPI_SUM', ok)

    call MPI_ALLREDUCE(da, db, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    ok = ierr == MPI_SUCCESS
    do i = 1, n
        ok = ok .and. db(i) == dble(nproc * (nproc - 1) / 2) + 0.25d0 * dble(i * nproc)
    end do
    call report('mpif.h: MPI_DOUBLE_PRECISION MPI_SUM', ok)

    ib = ia
    call MPI_ALLREDUCE(MPI_IN_PLACE, ib, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    ok = ierr == MPI_SUCCESS
    do i = 1, n
        ok = ok .and. ib(i) == n * nproc * (nproc - 1) / 2 - nproc * i
    end do
    call report('mpif.h: MPI_IN_PLACE MPI_INTEGER MPI_SUM', ok)

    call MPI_ALLREDUCE(la, lb, n, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
    ok = ierr == MPI_SUCCESS
    do i = 1, n
        ok = ok .and. (lb(i) .eqv. (mod(i, nproc + 1) == nproc))
    end do
    call report('mpif.h: MPI_LOGICAL MPI_LAND', ok)

contains

    subroutine report(name, ok)
        character(len=*), intent(in) :: name
        logical, intent(in) :: ok
        logical :: all
        call MPI_REDUCE(ok, all, 1, MPI_LOGICAL, MPI_LAND, 0, MPI_COMM_WORLD, ierr)
        call MPI_BCAST(all, 1, MPI_LOGICAL, 0, MPI_COMM_WORLD, ierr)
        if (.not. all) nfail = nfail + 1
        if (rank == 0 .and. all) print '(2a)', 'PASS ', name
        if (rank == 0 .and. .not. all) print '(2a)', 'FAIL ', name
    end subroutine report
end subroutine with_mpif_h

subroutine with_mpi_f08(nfail)
    use mpi_f08
    implicit none
    integer, intent(out) :: nfail
    integer, parameter :: n = 1000
    integer :: ierr, rank, nproc, i
    integer :: ia(n), ib(n)
    double precision :: da(n), db(n)
    logical :: la(n), lb(n), ok

    nfail = 0
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)
    do i = 1, n
        ia(i) = rank * n - i
        da(i) = dble(rank) + 0.25d0 * dble(i)
        la(i) = mod(i, nproc + 1) /= rank
    end do

    call MPI_Allreduce(ia, ib, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    ok = ierr == MPI_SUCCESS
    do i = 1, n
        ok = ok .and. ib(i) == n * nproc * (nproc - 1) / 2 - nproc * i
    end do
    call report('mpi_f08: MPI_INTEGER MPI_SUM', ok)

    call MPI_Allreduce(da, db, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    ok = ierr == MPI_SUCCESS
    do i = 1, n
        ok = ok .and. db(i) == dble(nproc * (nproc - 1) / 2) + 0.25d0 * dble(i * nproc)
    end do
    call report('mpi_f08: MPI_DOUBLE_PRECISION MPI_SUM', ok)

    ib = ia
    call MPI_Allreduce(MPI_IN_PLACE, ib, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    ok = ierr == MPI_SUCCESS
    do i = 1, n
        ok = ok .and. ib(i) == n * nproc * (nproc - 1) / 2 - nproc * i
    end do
    call report('mpi_f08: MPI_IN_PLACE MPI_INTEGER MPI_SUM', ok)

    call MPI_Allreduce(la, lb, n, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
    ok = ierr == MPI_SUCCESS
    do i = 1, n
        ok = ok .and. (lb(i) .eqv. (mod(i, nproc + 1) == nproc))
    end do
    call report('mpi_f08: MPI_LOGICAL MPI_LAND', ok)

contains

    subroutine report(name, ok)
        character(len=*), intent(in) :: name
        logical, intent(in) :: ok
        logical :: all
        call MPI_Reduce(ok, all, 1, MPI_LOGICAL, MPI_LAND, 0, MPI_COMM_WORLD, ierr)
        call MPI_Bcast(all, 1, MPI_LOGICAL, 0, MPI_COMM_WORLD, ierr)
        if (.not. all) nfail = nfail + 1
        if (rank == 0 .and. all) print '(2a)', 'PASS ', name
        if (rank == 0 .and. .not. all) print '(2a)', 'FAIL ', name
    end subroutine report
end subroutine with_mpi_f08
