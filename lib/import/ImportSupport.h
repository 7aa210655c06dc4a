//===- ImportSupport.h - what the import rewrites share ---------*- C++ -*-===//

#ifndef SOAP_LIB_IMPORT_IMPORTSUPPORT_H
#define SOAP_LIB_IMPORT_IMPORTSUPPORT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

namespace soap {

/// True when `value` is a dense_resource whose blob the exporter left out
/// (`dense_resource<__elided__>`): its type is known, its elements are not.
inline bool isElided(mlir::Attribute value) {
  auto resource = llvm::dyn_cast<mlir::DenseResourceElementsAttr>(value);
  return resource && !resource.getRawHandle().getBlob();
}

} // namespace soap

#endif // SOAP_LIB_IMPORT_IMPORTSUPPORT_H
