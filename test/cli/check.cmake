# Runs EXE with ARGS (a ;-list), optional STDIN file; passes when the exit code is CODE and the
# combined output matches REGEX.
if(STDIN)
  execute_process(COMMAND ${EXE} ${ARGS} INPUT_FILE "${STDIN}" RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
else()
  execute_process(COMMAND ${EXE} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
endif()
set(all "${out}${err}")
if(NOT rc STREQUAL CODE)
  message(FATAL_ERROR "exit code ${rc}, expected ${CODE}\n${all}")
endif()
if(NOT all MATCHES "${REGEX}")
  message(FATAL_ERROR "output does not match '${REGEX}':\n${all}")
endif()
message(STATUS "ok: exit ${rc}\n${all}")
