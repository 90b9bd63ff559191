# Runs `CLI SCENARIO` and `MPIEXEC -n RANKS --oversubscribe MPI SCENARIO`; passes when both
# succeed and print the same report, byte for byte.
execute_process(COMMAND "${CLI}" "${SCENARIO}" RESULT_VARIABLE rc1 OUTPUT_VARIABLE serial
                ERROR_VARIABLE err1)
execute_process(COMMAND "${MPIEXEC}" -n ${RANKS} --oversubscribe "${MPI}" "${SCENARIO}" --timing
                RESULT_VARIABLE rc2 OUTPUT_VARIABLE ranked ERROR_VARIABLE err2)
if(NOT rc1 EQUAL 0)
  message(FATAL_ERROR "strata failed (${rc1}):\n${err1}")
endif()
if(NOT rc2 EQUAL 0)
  message(FATAL_ERROR "strata-mpi on ${RANKS} ranks failed (${rc2}):\n${ranked}${err2}")
endif()
if(NOT serial STREQUAL ranked)
  file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/serial.json" "${serial}")
  file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/ranked.json" "${ranked}")
  message(FATAL_ERROR "strata-mpi on ${RANKS} ranks differs from strata (serial.json, ranked.json)")
endif()
if(NOT serial MATCHES "\"pareto\": \\[")
  message(FATAL_ERROR "the report has no Pareto front:\n${serial}")
endif()
string(LENGTH "${serial}" n)
message(STATUS "identical reports (${n} bytes) on 1 process and ${RANKS} ranks; ${err2}")
