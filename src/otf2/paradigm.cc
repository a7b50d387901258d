#include "otf2/paradigm.h"

namespace hybridprof::otf2 {

OTF2_Paradigm to_otf2_paradigm(Paradigm p) {
  switch (p) {
    case Paradigm::kSampling: return OTF2_PARADIGM_SAMPLING;
    case Paradigm::kCompiler: return OTF2_PARADIGM_COMPILER;
    case Paradigm::kUser: return OTF2_PARADIGM_USER;
    case Paradigm::kMpi: return OTF2_PARADIGM_MPI;
    case Paradigm::kOpenMp: return OTF2_PARADIGM_OPENMP;
    case Paradigm::kCuda: return OTF2_PARADIGM_CUDA;
    case Paradigm::kPython: return OTF2_PARADIGM_USER;  // see kPythonRegionDescription
    case Paradigm::kOsRuntime: return OTF2_PARADIGM_USER;  // see kOsRuntimeRegionDescription
    case Paradigm::kMeasurement: return OTF2_PARADIGM_MEASUREMENT_SYSTEM;
    case Paradigm::kUnknown: return OTF2_PARADIGM_UNKNOWN;
  }
  return OTF2_PARADIGM_UNKNOWN;
}

Paradigm from_otf2_paradigm(OTF2_Paradigm p, std::string_view region_description) {
  switch (p) {
    case OTF2_PARADIGM_SAMPLING: return Paradigm::kSampling;
    case OTF2_PARADIGM_COMPILER: return Paradigm::kCompiler;
    case OTF2_PARADIGM_USER:
      return region_description == kPythonRegionDescription      ? Paradigm::kPython
             : region_description == kOsRuntimeRegionDescription ? Paradigm::kOsRuntime
                                                                 : Paradigm::kUser;
    case OTF2_PARADIGM_MPI: return Paradigm::kMpi;
    case OTF2_PARADIGM_OPENMP: return Paradigm::kOpenMp;
    case OTF2_PARADIGM_CUDA: return Paradigm::kCuda;
    case OTF2_PARADIGM_MEASUREMENT_SYSTEM: return Paradigm::kMeasurement;
    default: return Paradigm::kUnknown;
  }
}

const char* paradigm_name(Paradigm p) {
  switch (p) {
    case Paradigm::kSampling: return "sampling";
    case Paradigm::kCompiler: return "compiler";
    case Paradigm::kUser: return "user";
    case Paradigm::kMpi: return "mpi";
    case Paradigm::kOpenMp: return "openmp";
    case Paradigm::kCuda: return "cuda";
    case Paradigm::kPython: return "python";
    case Paradigm::kMeasurement: return "measurement";
    case Paradigm::kUnknown: return "unknown";
    case Paradigm::kOsRuntime: return "os runtime";
  }
  return "unknown";
}

std::string_view user_paradigm_description(Paradigm p) {
  switch (p) {
    case Paradigm::kPython: return kPythonRegionDescription;
    case Paradigm::kOsRuntime: return kOsRuntimeRegionDescription;
    default: return {};
  }
}

}  // namespace hybridprof::otf2
