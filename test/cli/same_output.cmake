# Runs EXE on scenario A and on scenario B (the same scenario in the older spellings: "transformer",
# "global_batch", "strategy"); passes when both succeed and print the same report.
execute_process(COMMAND ${EXE} ${PREFIX} ${A} RESULT_VARIABLE rc_a OUTPUT_VARIABLE out_a ERROR_VARIABLE err_a)
execute_process(COMMAND ${EXE} ${PREFIX} ${B} RESULT_VARIABLE rc_b OUTPUT_VARIABLE out_b ERROR_VARIABLE err_b)
if(NOT rc_a EQUAL 0 OR NOT rc_b EQUAL 0)
  message(FATAL_ERROR "exit codes ${rc_a} and ${rc_b}\n${err_a}${err_b}")
endif()
if(NOT out_a STREQUAL out_b)
  message(FATAL_ERROR "the reports differ:\n${out_a}\n---\n${out_b}")
endif()
string(LENGTH "${out_a}" n)
message(STATUS "ok: the same ${n}-character report")
