# reef_add_schema(<target> <schema.reef> [PUBLIC] [OUTPUT_DIR <dir>])
#
# Runs `reef gen` on the schema at build time, again whenever the schema or
# the reef binary changes, and puts the generated header's directory on the
# target's include path (PRIVATE; PUBLIC for a library whose own headers
# include it). The header is named after the schema's file: `events.reef`
# gives `events.h` (with `events.tsdl` and `events.json` beside it; other
# characters than letters and digits become `_`). The directory defaults to
# `<current binary dir>/reef/<target>` and is stored in the target's
# REEF_GENERATED_DIR property. Call it where the target is defined.
#
# The reef binary is ${REEF_EXECUTABLE} (the reef package sets it to the
# installed one; set it before to use another).
#
# Installed as it is by `make install` and `cmake --install`
# (packaging/ReefAddSchema.cmake).

function(reef_add_schema target schema)
  cmake_parse_arguments(PARSE_ARGV 2 _arg "PUBLIC" "OUTPUT_DIR" "")
  if(_arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "reef_add_schema: unexpected arguments: ${_arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "reef_add_schema: ${target} is not a target")
  endif()
  if(NOT REEF_EXECUTABLE)
    message(FATAL_ERROR "reef_add_schema: no reef binary: set REEF_EXECUTABLE")
  endif()
  get_filename_component(schema "${schema}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  # The name `reef gen` gives the files: the file name up to its last dot,
  # letters and digits kept, anything else `_`, and `schema_` before a
  # leading digit.
  get_filename_component(name "${schema}" NAME_WLE)
  string(REGEX REPLACE "[^A-Za-z0-9]" "_" name "${name}")
  if(name STREQUAL "" OR name MATCHES "^[0-9]")
    set(name "schema_${name}")
  endif()
  if(_arg_OUTPUT_DIR)
    get_filename_component(dir "${_arg_OUTPUT_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  else()
    set(dir "${CMAKE_CURRENT_BINARY_DIR}/reef/${target}")
  endif()
  set(depends "${schema}")
  if(IS_ABSOLUTE "${REEF_EXECUTABLE}" AND EXISTS "${REEF_EXECUTABLE}")
    list(APPEND depends "${REEF_EXECUTABLE}")
  endif()
  add_custom_command(
    OUTPUT "${dir}/${name}.h" "${dir}/${name}.tsdl" "${dir}/${name}.json"
    COMMAND "${REEF_EXECUTABLE}" gen "${schema}" -o "${dir}"
    DEPENDS ${depends}
    COMMENT "reef gen ${schema}"
    VERBATIM)
  # As a source of the target, the header is generated before the target's
  # files are compiled, and they are compiled again when it changes.
  target_sources("${target}" PRIVATE "${dir}/${name}.h")
  if(_arg_PUBLIC)
    target_include_directories("${target}" PUBLIC "$<BUILD_INTERFACE:${dir}>")
  else()
    target_include_directories("${target}" PRIVATE "${dir}")
  endif()
  set_property(TARGET "${target}" PROPERTY REEF_GENERATED_DIR "${dir}")
endfunction()
