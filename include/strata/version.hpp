#pragma once
/// @file version.hpp
/// @brief The single source of strata's version; CMake parses these three lines.

#define STRATA_VERSION_MAJOR 0
#define STRATA_VERSION_MINOR 1
#define STRATA_VERSION_PATCH 0

namespace strata {
inline constexpr int version_major = STRATA_VERSION_MAJOR;
inline constexpr int version_minor = STRATA_VERSION_MINOR;
inline constexpr int version_patch = STRATA_VERSION_PATCH;
}  // namespace strata
