# The README's example must be examples/quickstart.cpp, byte for byte.
file(READ "${README}" readme)
file(READ "${EXAMPLE}" example)
string(FIND "${readme}" "```cpp\n${example}```" at)
if(at EQUAL -1)
  message(FATAL_ERROR "README.md's ```cpp block differs from examples/quickstart.cpp")
endif()
