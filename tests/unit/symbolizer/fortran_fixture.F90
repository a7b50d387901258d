! Fortran fixture: a module procedure, whose DIE gfortran nests inside a
! DW_TAG_module without addresses (libdw's dwarf_getscopes never looks there).
! .F90 is preprocessed, so __LINE__ gives the procedure's lines; bind(C) exports
! them under plain names for dlsym.
module symfix_mod
  use iso_c_binding, only: c_int
  implicit none
  integer(c_int), bind(C, name="symfix_f_line_first") :: line_first = __LINE__ + 4
  integer(c_int), bind(C, name="symfix_f_line_last") :: line_last = __LINE__ + 11
  real, volatile :: sink = 0.0
contains
  subroutine work(n, x)
    integer, intent(in) :: n
    real, intent(inout) :: x
    integer :: i
    do i = 1, n
      x = x * 1.0001 + 0.5
      sink = x
    end do
  end subroutine work
end module symfix_mod
