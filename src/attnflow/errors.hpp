// The two kinds of failure the core reports. Both derive from std::exception so the binding can
// turn them into JS errors without knowing the core's internals.
#pragma once

#include <stdexcept>
#include <string>

namespace attnflow {

/// The caller's data or options are invalid (shape, value, index out of range). The message says
/// what is wrong and where (layer, head, row), with 1-based layers and 0-based heads/rows/tokens.
class InputError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// A long computation was stopped by its progress callback.
class Cancelled : public std::runtime_error {
 public:
  Cancelled() : std::runtime_error("computation cancelled") {}
};

}  // namespace attnflow
