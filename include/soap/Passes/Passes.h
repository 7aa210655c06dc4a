//===- Passes.h - SOAP passes ------------------------------------*- C++ -*-===//

#ifndef SOAP_PASSES_PASSES_H
#define SOAP_PASSES_PASSES_H

#include "mlir/Pass/Pass.h"

#include "soap/Dialect/SoapDialect.h"

#include <memory>

namespace soap {

#define GEN_PASS_DECL
#include "soap/Passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "soap/Passes/Passes.h.inc"

} // namespace soap

#endif // SOAP_PASSES_PASSES_H
