# Runs EXE with ARGS (a ;-list) from the repository root; passes when it exits 0 and prints
# GOLDEN's text byte for byte (test/cli/golden/cases.txt).
execute_process(COMMAND ${EXE} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "exit code ${rc}\n${out}${err}")
endif()
file(READ "${GOLDEN}" golden)
if(NOT out STREQUAL golden)
  message(FATAL_ERROR "the output differs from ${GOLDEN} (after a deliberate change: "
                      "bash test/cli/golden/update.sh, then review the diff):\n${out}")
endif()
message(STATUS "ok: the output is ${GOLDEN}'s")
