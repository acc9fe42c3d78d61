# cmake -DREEF=<reef binary> -DOUT=<dir> -P packaging/reef-extras.cmake
#
# Writes what the top-level CMakeLists.txt installs beside the binary, made
# by reef from its own command line: OUT/man/*.1 (reef and each
# subcommand) and OUT/completions/{reef.bash,_reef,reef.fish}. The
# Makefile's `docs` target runs the same commands.
file(REMOVE_RECURSE "${OUT}/man" "${OUT}/completions")
file(MAKE_DIRECTORY "${OUT}/completions")
execute_process(COMMAND "${REEF}" man "${OUT}/man" RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${REEF} man: ${status}")
endif()
foreach(shell_file bash:reef.bash zsh:_reef fish:reef.fish)
  string(REPLACE ":" ";" shell_file "${shell_file}")
  list(GET shell_file 0 shell)
  list(GET shell_file 1 file)
  execute_process(COMMAND "${REEF}" completions ${shell}
    OUTPUT_FILE "${OUT}/completions/${file}" RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${REEF} completions ${shell}: ${status}")
  endif()
endforeach()
