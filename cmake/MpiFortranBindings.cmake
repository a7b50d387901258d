# Writes OUTPUT, the list of Fortran bindings, from the C list LIST
# (src/mpi/mpi_functions.def): one line per function,
#   MPI_FORTRAN_FUNCTION(mpi_send_, MPI_Send, (void* buf, ..., MPI_Fint* ierr), (buf, ...))
# The Fortran name is the lower-case C name with gfortran's trailing
# underscore; every Fortran argument is passed by reference, and an error
# code argument comes last. The preprocessor cannot lower-case a name, so
# this is done here, at configure time.
#
# MPI_Init and MPI_Init_thread are left out: their Fortran forms have no
# argc/argv and are written by hand (preload/mpi/mpi_fortran.cc).
function(hybridprof_generate_mpi_fortran_list LIST OUTPUT)
  file(STRINGS "${LIST}" lines REGEX "^MPI_FUNCTION\\(")
  set(out "// Generated from ${LIST} by cmake/MpiFortranBindings.cmake: do not edit.\n")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^MPI_FUNCTION\\((MPI_[A-Za-z_]+), \\(.*\\), \\(([^()]*)\\)\\)$")
      message(FATAL_ERROR "${LIST}: cannot read the line\n  ${line}")
    endif()
    set(name "${CMAKE_MATCH_1}")
    set(args "${CMAKE_MATCH_2}")
    if(name STREQUAL "MPI_Init" OR name STREQUAL "MPI_Init_thread")
      continue()
    endif()
    string(TOLOWER "${name}_" fortran_name)
    set(params "")
    if(NOT args STREQUAL "")
      string(REPLACE ", " ";" arg_list "${args}")
      foreach(arg IN LISTS arg_list)
        string(APPEND params "void* ${arg}, ")
      endforeach()
    endif()
    string(APPEND out "MPI_FORTRAN_FUNCTION(${fortran_name}, ${name}, (${params}MPI_Fint* ierr), (${args}))\n")
  endforeach()
  string(APPEND out "#undef MPI_FORTRAN_FUNCTION\n")
  # Rewrite only on change, so an unrelated reconfigure rebuilds nothing.
  file(CONFIGURE OUTPUT "${OUTPUT}" CONTENT "${out}" @ONLY)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${LIST}")
endfunction()
