# Runs EXE with ARGS (a ;-list); passes when it exits 0 and DOC holds its standard output
# verbatim (a page that pastes a command's output stays that command's output).
execute_process(COMMAND ${EXE} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "exit code ${rc}\n${out}${err}")
endif()
file(READ "${DOC}" doc)
string(FIND "${doc}" "${out}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${DOC} does not hold this output of the command; paste it there:\n${out}")
endif()
message(STATUS "ok: ${DOC} holds the output")
