//===- SoapDialect.h - the SOAP dialect --------------------------*- C++ -*-===//
//
// The dialect, its attributes (#soap.config, #soap.layout) and its ops.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_DIALECT_SOAPDIALECT_H
#define SOAP_DIALECT_SOAPDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "soap/Dialect/SoapDialect.h.inc"
#include "soap/Dialect/SoapEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "soap/Dialect/SoapAttrs.h.inc"

#define GET_OP_CLASSES
#include "soap/Dialect/SoapOps.h.inc"

namespace soap {

/// The device count a module declares with `soap.num_devices`, if any.
std::optional<int64_t> getDeclaredNumDevices(mlir::Operation *op);

} // namespace soap

#endif // SOAP_DIALECT_SOAPDIALECT_H
