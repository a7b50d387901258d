! hybridprof's control API for Fortran (include/hybridprof/control.h
! through bind(C)): compile this module with the program and link
! -lhybridprof_control.
!
!   use hybridprof_control
!   call hybridprof_start()
!   call hybridprof_mark('solver')
!   call solve()
!   call hybridprof_stop()
!
! Without the profiler every call is a no-op; run under `hybridprof
! --paused` to record only what the program opens.
module hybridprof_control
  use, intrinsic :: iso_c_binding, only: c_char, c_int, c_null_char
  implicit none
  private
  public :: hybridprof_start, hybridprof_stop, hybridprof_mark, hybridprof_recording

  interface
    subroutine hybridprof_start() bind(C, name='hybridprof_start')
    end subroutine hybridprof_start
    subroutine hybridprof_stop() bind(C, name='hybridprof_stop')
    end subroutine hybridprof_stop
    subroutine hybridprof_mark_c(text) bind(C, name='hybridprof_mark')
      import :: c_char
      character(kind=c_char), dimension(*), intent(in) :: text
    end subroutine hybridprof_mark_c
    function hybridprof_recording_c() bind(C, name='hybridprof_recording') result(on)
      import :: c_int
      integer(c_int) :: on
    end function hybridprof_recording_c
  end interface

contains

  ! A named point of the run (trailing blanks are not part of the name).
  subroutine hybridprof_mark(text)
    character(len=*), intent(in) :: text
    call hybridprof_mark_c(trim(text) // c_null_char)
  end subroutine hybridprof_mark

  ! .true. when the profiler runs in this process and the window is open.
  logical function hybridprof_recording()
    hybridprof_recording = hybridprof_recording_c() /= 0
  end function hybridprof_recording

end module hybridprof_control
