! fortran_iallreduce.f90 - MPI_IALLREDUCE called from Fortran reaches SAMPI.
!
! Open MPI's Fortran bindings call PMPI_Iallreduce directly, so SAMPI
! interposes the Fortran entry points (pmpi_wrap/iallreduce.c), and its
! MPI_INIT (pmpi_wrap/init_f.c), where the progress mode is agreed.  One
! argument picks the binding ('mpi', 'mpif', 'f08'); each makes exactly two
! MPI_IALLREDUCE calls (MPI_INTEGER MPI_SUM, and the same with MPI_IN_PLACE),
! each completed with MPI_WAIT, and checks the results exactly.  Verdicts are
! combined with MPI_REDUCE and MPI_BCAST, which SAMPI does not touch.
! Then MPI_WAITALL on two receives, one truncated before the call: with
! progress threads it must return MPI_ERR_IN_STATUS (pmpi_wrap/waitall_f.c).

program fortran_iallreduce
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
        nfail = 1
    end select
    if (rank == 0) print '(3a,i0,a)', 'fortran_iallreduce: ', trim(which), ': ', nfail, ' failed'
    call MPI_FINALIZE(ierr)
    if (nfail /= 0) stop 1
end program fortran_iallreduce

subroutine with_use_mpi(nfail)
    use mpi
    implicit none
    integer, intent(out) :: nfail
    integer, parameter :: n = 1000
    integer :: ierr, rank, nproc, i, req
    integer :: ia(n), ib(n)
    logical :: ok

    nfail = 0
    call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
    call MPI_COMM_SIZE(MPI_COMM_WORLD, nproc, ierr)
    do i = 1, n
        ia(i) = rank * n - i
    end do
    call MPI_IALLREDUCE(ia, ib, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
    ok = ierr == MPI_SUCCESS
    call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
    ok = ok .and. ierr == MPI_SUCCESS .and. req == MPI_REQUEST_NULL
    do i = 1, n
        ok = ok .and. ib(i) == n * nproc * (nproc - 1) / 2 - nproc * i
    end do
    call report('use mpi: MPI_IALLREDUCE MPI_INTEGER MPI_SUM', ok)
    ib = ia
    call MPI_IALLREDUCE(MPI_IN_PLACE, ib, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
    ok = ierr == MPI_SUCCESS
    call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
    do i = 1, n
        ok = ok .and. ib(i) == n * nproc * (nproc - 1) / 2 - nproc * i
    end do
    call report('use mpi: MPI_IALLREDUCE MPI_IN_PLACE', ok)
    call truncated_waitall(ok)
    call report('use mpi: MPI_WAITALL with a receive truncated before it', ok)

contains

    include 'fortran_truncated_waitall.inc'

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
    ! as in fortran_allreduce.f90: the interface Open MPI's 'mpi' module
    ! declares, so that gfortran accepts MPI_IN_PLACE and an array alike
    interface
        subroutine MPI_IALLREDUCE(sendbuf, recvbuf, count, datatype, op, comm, request, ierror)
            !GCC$ ATTRIBUTES NO_ARG_CHECK :: sendbuf, recvbuf
            real, dimension(*) :: sendbuf, recvbuf
            integer, intent(in) :: count, datatype, op, comm
            integer, intent(out) :: request, ierror
        end subroutine MPI_IALLREDUCE
    end interface
    integer, intent(out) :: nfail
    integer, parameter :: n = 1000
    integer :: ierr, rank, nproc, i, req
    integer :: ia(n), ib(n)
    logical :: ok

    nfail = 0
    call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
    call MPI_COMM_SIZE(MPI_COMM_WORLD, nproc, ierr)
    do i = 1, n
        ia(i) = rank * n - i
    end do
    call MPI_IALLREDUCE(ia, ib, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
    ok = ierr == MPI_SUCCESS
    call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
    ok = ok .and. ierr == MPI_SUCCESS .and. req == MPI_REQUEST_NULL
    do i = 1, n
        ok = ok .and. ib(i) == n * nproc * (nproc - 1) / 2 - nproc * i
    end do
    call report('mpif.h: MPI_IALLREDUCE MPI_INTEGER MPI_SUM', ok)
    ib = ia
    call MPI_IALLREDUCE(MPI_IN_PLACE, ib, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
    ok = ierr == MPI_SUCCESS
    call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
    do i = 1, n
        ok = ok .and. ib(i) == n * nproc * (nproc - 1) / 2 - nproc * i
    end do
    call report('mpif.h: MPI_IALLREDUCE MPI_IN_PLACE', ok)
    call truncated_waitall(ok)
    call report('mpif.h: MPI_WAITALL with a receive truncated before it', ok)

contains

    include 'fortran_truncated_waitall.inc'

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
    type(MPI_Request) :: req
    integer :: ia(n), ib(n)
    logical :: ok

    nfail = 0
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)
    do i = 1, n
        ia(i) = rank * n - i
    end do
    call MPI_Iallreduce(ia, ib, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
    ok = ierr == MPI_SUCCESS
    call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    ok = ok .and. ierr == MPI_SUCCESS .and. req == MPI_REQUEST_NULL
    do i = 1, n
        ok = ok .and. ib(i) == n * nproc * (nproc - 1) / 2 - nproc * i
    end do
    call report('mpi_f08: MPI_Iallreduce MPI_INTEGER MPI_SUM', ok)
    ib = ia
    call MPI_Iallreduce(MPI_IN_PLACE, ib, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
    ok = ierr == MPI_SUCCESS
    call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    do i = 1, n
        ok = ok .and. ib(i) == n * nproc * (nproc - 1) / 2 - nproc * i
    end do
    call report('mpi_f08: MPI_Iallreduce MPI_IN_PLACE', ok)
    call truncated_waitall(ok)
    call report('mpi_f08: MPI_Waitall with a receive truncated before it', ok)

contains

    subroutine truncated_waitall(ok)
        logical, intent(out) :: ok
        type(MPI_Comm) :: self
        type(MPI_Request) :: reqs(2)
        type(MPI_Status) :: statuses(2), peek
        integer :: got, one, ierr2
        logical :: done
        call MPI_Comm_dup(MPI_COMM_SELF, self, ierr)
        call MPI_Comm_set_errhandler(self, MPI_ERRORS_RETURN, ierr)
        one = 7
        got = 0
        call MPI_Irecv(got, 1, MPI_INTEGER, 0, 1, self, reqs(1), ierr)
        call MPI_Irecv(got, 0, MPI_INTEGER, 0, 2, self, reqs(2), ierr)
        call MPI_Send(one, 1, MPI_INTEGER, 0, 1, self, ierr)
        call MPI_Send(one, 1, MPI_INTEGER, 0, 2, self, ierr)
        done = .false.
        ierr = MPI_SUCCESS
        do while (.not. done .and. ierr == MPI_SUCCESS) ! Open MPI: an error, not the flag
            call MPI_Request_get_status(reqs(2), done, peek, ierr)
        end do
        call MPI_Waitall(2, reqs, statuses, ierr2)
        ok = ierr2 == MPI_ERR_IN_STATUS .and. statuses(1)%MPI_ERROR == MPI_SUCCESS .and. &
             statuses(2)%MPI_ERROR == MPI_ERR_TRUNCATE .and. got == 7 .and. &
             reqs(2) == MPI_REQUEST_NULL
        call MPI_Comm_free(self, ierr)
    end subroutine truncated_waitall

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
