// Declares the pybind11 definitions of SampleTable and timed_calls for pyfxprof._C.
#pragma once

#include <pybind11/pybind11.h>

namespace pyfxprof {

void define_sample_table(pybind11::module_& m);

}  // namespace pyfxprof
