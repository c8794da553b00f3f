! fortran_info.f90 - SAMPI's MPI info hints given from Fortran reach SAMPI.
!
! Open MPI's Fortran bindings call PMPI_Comm_set_info and
! PMPI_Comm_dup_with_info directly, so SAMPI interposes their Fortran entry
! points (pmpi_wrap/comm_info_f.c).  One argument picks the binding:
!   mpi   'use mpi'
!   mpif  "include 'mpif.h'"
!   f08   'use mpi_f08'
! Each binding makes two communicators and exactly one MPI_ALLREDUCE on each,
! in this order:
!   dup   MPI_COMM_DUP_WITH_INFO(MPI_COMM_WORLD) with sampi_algorithm=rhd
!   dup2  MPI_COMM_DUP(MPI_COMM_WORLD), then MPI_COMM_SET_INFO with
!         sampi_algorithm=ring
! fortran_info.test reads the algorithm of each call from SAMPI's log; this
! program checks the integer MPI_SUM results exactly.  Verdicts are combined
! with MPI_REDUCE, which SAMPI does not touch, and printed as PASS/FAIL.

! What the three bindings share: the input, the expected sum, the verdicts
! (external procedures rather than a module, so that the build leaves no .mod
! file behind).  Only the calls under test differ between the bindings.
subroutine fill(ia, n)
    use mpi
    implicit none
    integer, intent(in) :: n
    integer, intent(out) :: ia(n)
    integer :: rank, ierr, i
    call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
    do i = 1, n
        ia(i) = rank * n - i
    end do
end subroutine fill

! Whether the call succeeded and ib is the MPI_SUM over all ranks of fill's
! input, element by element.
logical function sums_ok(ierr, ib, n)
    use mpi
    implicit none
    integer, intent(in) :: ierr, n, ib(n)
    integer :: nproc, rc, i
    call MPI_COMM_SIZE(MPI_COMM_WORLD, nproc, rc)
    sums_ok = ierr == MPI_SUCCESS
    do i = 1, n
        sums_ok = sums_ok .and. ib(i) == n * nproc * (nproc - 1) / 2 - nproc * i
    end do
end function sums_ok

subroutine report(name, ok, nfail)
    use mpi
    implicit none
    character(len=*), intent(in) :: name
    logical, intent(in) :: ok
    integer, intent(inout) :: nfail
    logical :: all
    integer :: rank, ierr
    call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
    call MPI_REDUCE(ok, all, 1, MPI_LOGICAL, MPI_LAND, 0, MPI_COMM_WORLD, ierr)
    call MPI_BCAST(all, 1, MPI_LOGICAL, 0, MPI_COMM_WORLD, ierr)
    if (.not. all) nfail = nfail + 1
    if (rank == 0 .and. all) print '(2a)', 'PASS ', name
    if (rank == 0 .and. .not. all) print '(2a)', 'FAIL ', name
end subroutine report

program fortran_info
    use mpi
    implicit none
    character(len=16) :: which
    integer :: ierr, rank, nfail

    call MPI_INIT(ierr)
    call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
    call get_command_argument(1, which)
    nfail = 0
    select case (trim(which))
    case ('mpi')
        call with_use_mpi(nfail)
    case ('mpif')
        call with_mpif_h(nfail)
    case ('f08')
        call with_mpi_f08(nfail)
    case default
        if (rank == 0) print '(3a)', 'fortran_info: unknown binding "', trim(which), &
            '" (want mpi, mpif or f08)'
        nfail = 1
    end select
    if (rank == 0) print '(3a,i0,a)', 'fortran_info: ', trim(which), ': ', nfail, ' failed'
    call MPI_FINALIZE(ierr)
    if (nfail /= 0) stop 1
end program fortran_info

subroutine with_use_mpi(nfail)
    use mpi
    implicit none
    integer, intent(inout) :: nfail
    integer :: ierr, info, info2, dup, dup2
    integer, parameter :: n = 1000
    integer :: ia(n), ib(n)
    logical, external :: sums_ok

    call fill(ia, n)
    call MPI_INFO_CREATE(info, ierr)
    call MPI_INFO_SET(info, 'sampi_algorithm', 'rhd', ierr)
    call MPI_COMM_DUP_WITH_INFO(MPI_COMM_WORLD, info, dup, ierr)
    call report('use mpi: MPI_COMM_DUP_WITH_INFO', ierr == MPI_SUCCESS .and. &
        dup /= MPI_COMM_NULL, nfail)
    call MPI_INFO_CREATE(info2, ierr)
    call MPI_INFO_SET(info2, 'sampi_algorithm', 'ring', ierr)
    call MPI_COMM_DUP(MPI_COMM_WORLD, dup2, ierr)
    call MPI_COMM_SET_INFO(dup2, info2, ierr)
    call report('use mpi: MPI_COMM_SET_INFO', ierr == MPI_SUCCESS, nfail)

    ib = 0
    call MPI_ALLREDUCE(ia, ib, n, MPI_INTEGER, MPI_SUM, dup, ierr)
    call report('use mpi: MPI_ALLREDUCE on the dup with info', sums_ok(ierr, ib, n), nfail)
    ib = 0
    call MPI_ALLREDUCE(ia, ib, n, MPI_INTEGER, MPI_SUM, dup2, ierr)
    call report('use mpi: MPI_ALLREDUCE after MPI_COMM_SET_INFO', sums_ok(ierr, ib, n), nfail)

    call MPI_COMM_FREE(dup, ierr)
    call MPI_COMM_FREE(dup2, ierr)
    call MPI_INFO_FREE(info, ierr)
    call MPI_INFO_FREE(info2, ierr)
end subroutine with_use_mpi

subroutine with_mpif_h(nfail)
    implicit none
    include 'mpif.h'
    integer, intent(inout) :: nfail
    integer :: ierr, info, info2, dup, dup2
    integer, parameter :: n = 1000
    integer :: ia(n), ib(n)
    logical, external :: sums_ok

    call fill(ia, n)
    call MPI_INFO_CREATE(info, ierr)
    call MPI_INFO_SET(info, 'sampi_algorithm', 'rhd', ierr)
    call MPI_COMM_DUP_WITH_INFO(MPI_COMM_WORLD, info, dup, ierr)
    call report('mpif.h: MPI_COMM_DUP_WITH_INFO', ierr == MPI_SUCCESS .and. &
        dup /= MPI_COMM_NULL, nfail)
    call MPI_INFO_CREATE(info2, ierr)
    call MPI_INFO_SET(info2, 'sampi_algorithm', 'ring', ierr)
    call MPI_COMM_DUP(MPI_COMM_WORLD, dup2, ierr)
    call MPI_COMM_SET_INFO(dup2, info2, ierr)
    call report('mpif.h: MPI_COMM_SET_INFO', ierr == MPI_SUCCESS, nfail)

    ib = 0
    call MPI_ALLREDUCE(ia, ib, n, MPI_INTEGER, MPI_SUM, dup, ierr)
    call report('mpif.h: MPI_ALLREDUCE on the dup with info', sums_ok(ierr, ib, n), nfail)
    ib = 0
    call MPI_ALLREDUCE(ia, ib, n, MPI_INTEGER, MPI_SUM, dup2, ierr)
    call report('mpif.h: MPI_ALLREDUCE after MPI_COMM_SET_INFO', sums_ok(ierr, ib, n), nfail)

    call MPI_COMM_FREE(dup, ierr)
    call MPI_COMM_FREE(dup2, ierr)
    call MPI_INFO_FREE(info, ierr)
    call MPI_INFO_FREE(info2, ierr)
end subroutine with_mpif_h

subroutine with_mpi_f08(nfail)
    use mpi_f08
    implicit none
    integer, intent(inout) :: nfail
    integer :: ierr
    type(MPI_Info) :: info, info2
    type(MPI_Comm) :: dup, dup2
    integer, parameter :: n = 1000
    integer :: ia(n), ib(n)
    logical, external :: sums_ok

    call fill(ia, n)
    call MPI_Info_create(info, ierr)
    call MPI_Info_set(info, 'sampi_algorithm', 'rhd', ierr)
    call MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, dup, ierr)
    call report('mpi_f08: MPI_Comm_dup_with_info', ierr == MPI_SUCCESS .and. &
        dup /= MPI_COMM_NULL, nfail)
    call MPI_Info_create(info2, ierr)
    call MPI_Info_set(info2, 'sampi_algorithm', 'ring', ierr)
    call MPI_Comm_dup(MPI_COMM_WORLD, dup2, ierr)
    call MPI_Comm_set_info(dup2, info2, ierr)
    call report('mpi_f08: MPI_Comm_set_info', ierr == MPI_SUCCESS, nfail)

    ib = 0
    call MPI_Allreduce(ia, ib, n, MPI_INTEGER, MPI_SUM, dup, ierr)
    call report('mpi_f08: MPI_Allreduce on the dup with info', sums_ok(ierr, ib, n), nfail)
    ib = 0
    call MPI_Allreduce(ia, ib, n, MPI_INTEGER, MPI_SUM, dup2, ierr)
    call report('mpi_f08: MPI_Allreduce after MPI_Comm_set_info', sums_ok(ierr, ib, n), nfail)

    call MPI_Comm_free(dup, ierr)
    call MPI_Comm_free(dup2, ierr)
    call MPI_Info_free(info, ierr)
    call MPI_Info_free(info2, ierr)
end subroutine with_mpi_f08
