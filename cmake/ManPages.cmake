# Man pages for the tools, made at build time from their own --help and
# --version by help2man (Debian's help2man package), so they never drift
# from the options the tools take; installed to share/man/man1. Without
# help2man the build says so and makes none.
find_program(HELP2MAN help2man)
if(NOT HELP2MAN)
  message(WARNING "help2man not found: no man pages (apt-get install help2man)")
  return()
endif()
set(man_dir ${PROJECT_BINARY_DIR}/man)
set(pages)
foreach(entry
    "hybridprof|sample and trace a program (MPI, OpenMP, CUDA, Python) into one OTF2 archive"
    "hybridprof-report|what was slow in a hybridprof archive, and why"
    "hybridprof-merge|write a hybridprof archive from the raw data a run left"
    "hybridprof-convert|convert a hybridprof archive for other viewers")
  string(REPLACE "|" ";" parts "${entry}")
  list(GET parts 0 tool)
  list(GET parts 1 summary)
  if(NOT TARGET ${tool})
    continue()
  endif()
  set(page ${man_dir}/${tool}.1)
  add_custom_command(OUTPUT ${page}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${man_dir}
    COMMAND ${HELP2MAN} --no-info --no-discard-stderr --section=1 --name=${summary} --output=${page}
            $<TARGET_FILE:${tool}>
    DEPENDS ${tool}
    COMMENT "Man page of ${tool}"
    VERBATIM)
  list(APPEND pages ${page})
endforeach()
add_custom_target(man_pages ALL DEPENDS ${pages})
install(FILES ${pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
