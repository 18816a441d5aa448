# Generate the man pages and shell completion scripts from the built binary
# (run after each link of gdnctl; nothing goes into the source tree):
#   cmake -DGDNCTL=path/to/gdnctl -DOUT=build/man -DCOMPLETION_OUT=build/completion -P gdnctl-docs.cmake
# OUT gets gdnctl.1 and gdnctl-CMD.1 for every command of the table that is
# not an alias (`gdnctl help --man`); COMPLETION_OUT gets gdnctl (bash) and
# _gdnctl (zsh) from `gdnctl completion`.
cmake_minimum_required(VERSION 3.20)

function(run_to_file out)
  execute_process(COMMAND ${GDNCTL} ${ARGN} OUTPUT_FILE ${out} RESULT_VARIABLE rc
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "gdnctl ${ARGN} failed (${rc}): ${err}")
  endif()
endfunction()

file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
run_to_file(${OUT}/gdnctl.1 help --man)
execute_process(COMMAND ${GDNCTL} help --json OUTPUT_VARIABLE doc RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gdnctl help --json failed (${rc})")
endif()
string(JSON n LENGTH "${doc}" commands)
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  string(JSON name GET "${doc}" commands ${i} name)
  string(JSON alias TYPE "${doc}" commands ${i} alias_of)
  if(alias STREQUAL "NULL")
    run_to_file(${OUT}/gdnctl-${name}.1 help --man ${name})
  endif()
endforeach()

if(COMPLETION_OUT)
  file(MAKE_DIRECTORY ${COMPLETION_OUT})
  run_to_file(${COMPLETION_OUT}/gdnctl completion bash)
  run_to_file(${COMPLETION_OUT}/_gdnctl completion zsh)
endif()
